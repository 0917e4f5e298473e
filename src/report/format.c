/* format.c — value formatting for every text report (see report.h).
 *
 * A port of pprof's internal/measurement unit logic: unit aliases are
 * "sniffed" (lower-cased, a trailing 's' dropped), converted to the base
 * unit of their family, then auto-scaled to the largest unit in which the
 * value is at least 1, and printed with "%.2f" minus a trailing ".00". */
#include "report/report.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *name;
    const char *aliases[4];
    double factor;
} hs_unit;

typedef struct {
    const hs_unit *units;
    size_t n_units;
    hs_unit default_unit;
} hs_unit_family;

static const hs_unit hs_memory_units[] = {
    {"B", {"b", "byte"}, 1},
    {"kB", {"kb", "kbyte", "kilobyte"}, 1024.0},
    {"MB", {"mb", "mbyte", "megabyte"}, 1048576.0},
    {"GB", {"gb", "gbyte", "gigabyte"}, 1073741824.0},
    {"TB", {"tb", "tbyte", "terabyte"}, 1099511627776.0},
    {"PB", {"pb", "pbyte", "petabyte"}, 1125899906842624.0},
};

static const hs_unit hs_time_units[] = {
    {"ns", {"ns", "nanosecond"}, 1},
    {"us", {"\xce\xbcs", "us", "microsecond"}, 1e3},
    {"ms", {"ms", "millisecond"}, 1e6},
    {"s", {"s", "sec", "second"}, 1e9},
    {"hrs", {"hour", "hr"}, 3600e9},
};

static const hs_unit hs_gcu_units[] = {
    {"n*GCU", {"nanogcu"}, 1e-9},  {"u*GCU", {"microgcu"}, 1e-6}, {"m*GCU", {"milligcu"}, 1e-3},
    {"GCU", {"gcu"}, 1},           {"k*GCU", {"kilogcu"}, 1e3},   {"M*GCU", {"megagcu"}, 1e6},
    {"G*GCU", {"gigagcu"}, 1e9},   {"T*GCU", {"teragcu"}, 1e12},  {"P*GCU", {"petagcu"}, 1e15},
};

#define HS_N(a) (sizeof(a) / sizeof((a)[0]))

static const hs_unit_family hs_families[] = {
    {hs_memory_units, HS_N(hs_memory_units), {"B", {"b", "byte"}, 1}},
    {hs_time_units, HS_N(hs_time_units), {"s", {0}, 1e9}},
    {hs_gcu_units, HS_N(hs_gcu_units), {"GCU", {0}, 1}},
};

/* The unit of `fam` that `name` denotes, or NULL. */
static const hs_unit *hs_sniff_unit(const hs_unit_family *fam, const char *name)
{
    char low[64];
    size_t n = strlen(name);
    if (n >= sizeof low)
        return NULL;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = 0;
    if (n > 2 && low[n - 1] == 's')
        low[n - 1] = 0;
    for (size_t u = 0; u < fam->n_units; u++)
        for (size_t a = 0; a < HS_N(fam->units[u].aliases) && fam->units[u].aliases[a]; a++)
            if (strcmp(fam->units[u].aliases[a], low) == 0)
                return &fam->units[u];
    return NULL;
}

static bool hs_is_auto(const char *unit)
{
    return strcmp(unit, "minimum") == 0 || strcmp(unit, "auto") == 0;
}

/* Largest unit in which v (in base units) is >= 1; NULL if none. */
static const hs_unit *hs_auto_unit(const hs_unit_family *fam, double v)
{
    const hs_unit *best = NULL;
    for (size_t u = 0; u < fam->n_units; u++)
        if (fam->units[u].factor >= (best ? best->factor : 0) && v / fam->units[u].factor >= 1.0)
            best = &fam->units[u];
    return best;
}

static bool hs_convert(const hs_unit_family *fam, int64_t value, const char *from, const char *to,
                       double *out, const char **out_unit)
{
    const hs_unit *fu = hs_sniff_unit(fam, from);
    if (!fu)
        return false;
    double v = (double)value * fu->factor;
    const hs_unit *tu = hs_is_auto(to) ? hs_auto_unit(fam, v) : hs_sniff_unit(fam, to);
    if (!tu)
        tu = &fam->default_unit;
    *out = v / tu->factor;
    *out_unit = tu->name;
    return true;
}

double hs_scale(int64_t value, const char *from_unit, const char *to_unit, const char **out_unit)
{
    if (value < 0 && value != INT64_MIN) {
        double v = hs_scale(-value, from_unit, to_unit, out_unit);
        return -v;
    }
    double v;
    for (size_t i = 0; i < HS_N(hs_families); i++)
        if (hs_convert(&hs_families[i], value, from_unit, to_unit, &v, out_unit))
            return v;
    /* "count/10" ... "count/1000000": fractional counts imported from
     * collapsed stacks (report/collapsed.c), printed as the counts they are */
    if (strncmp(from_unit, "count/1", 7) == 0 && strspn(from_unit + 7, "0") == strlen(from_unit + 7) &&
        from_unit[7] != '\0') {
        double v = (double)value;
        for (const char *z = from_unit + 7; *z; z++)
            v /= 10;
        *out_unit = "";
        return v;
    }
    static const char *const plain[] = {"count", "sample", "unit", "minimum", "auto"};
    *out_unit = to_unit;
    for (size_t i = 0; i < HS_N(plain); i++)
        if (strcmp(to_unit, plain[i]) == 0)
            *out_unit = "";
    return (double)value;
}

char *hs_format_scaled(char *buf, size_t len, int64_t value, const char *from_unit,
                       const char *to_unit)
{
    const char *unit;
    double v = hs_scale(value, from_unit, to_unit, &unit);
    char num[64];
    snprintf(num, sizeof num, "%.2f", v);
    size_t n = strlen(num);
    if (n >= 3 && strcmp(num + n - 3, ".00") == 0)
        num[n - 3] = 0;
    if (strcmp(num, "0") == 0 || strcmp(num, "-0") == 0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%s%s", num, unit);
    return buf;
}

char *hs_format_value(char *buf, size_t len, int64_t value, const char *unit)
{
    return hs_format_scaled(buf, len, value, unit, "auto");
}

char *hs_format_percent(char *buf, size_t len, int64_t value, int64_t total)
{
    double ratio = 0;
    if (total != 0)
        ratio = fabs((double)value / (double)total) * 100;
    if (ratio >= 99.95 && ratio <= 100.05)
        snprintf(buf, len, "  100%%");
    else if (ratio >= 1.0)
        snprintf(buf, len, "%5.2f%%", ratio);
    else
        snprintf(buf, len, "%5.2g%%", ratio);
    return buf;
}

const char *hs_output_unit(int64_t min_value, int64_t max_value, const char *sample_unit)
{
    if (min_value == 0)
        min_value = max_value;
    const char *min_unit, *max_unit, *unit;
    hs_scale(min_value, sample_unit, "minimum", &min_unit);
    hs_scale(max_value, sample_unit, "minimum", &max_unit);
    unit = min_unit;
    bool small = min_value <= INT64_MAX / 100 && min_value * 100 < max_value;
    if (strcmp(min_unit, max_unit) != 0 && small)
        hs_scale(100 * min_value, sample_unit, "minimum", &unit);
    return *unit ? unit : sample_unit;
}

char *hs_format_time(char *buf, size_t len, int64_t time_nanos)
{
    time_t secs = (time_t)(time_nanos / 1000000000);
    if (time_nanos < 0 && time_nanos % 1000000000)
        secs--;
    struct tm tm;
    char ampm[3], zone[64];
    if (!localtime_r(&secs, &tm)) {
        snprintf(buf, len, "?");
        return buf;
    }
    int hour12 = tm.tm_hour % 12 ? tm.tm_hour % 12 : 12;
    snprintf(ampm, sizeof ampm, "%s", tm.tm_hour < 12 ? "am" : "pm");
    if (strftime(zone, sizeof zone, "%Z", &tm) == 0)
        zone[0] = 0;
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(buf, len, "%s %d, %d at %d:%02d%s (%s)", months[tm.tm_mon % 12], tm.tm_mday,
             tm.tm_year + 1900, hour12, tm.tm_min, ampm, zone);
    return buf;
}
