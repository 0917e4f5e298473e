/* units.c — duration and size parsing (units.h): the one grammar every
 * layer uses for "10s", "1.5h", "1d", "16m", "512KiB". */
#include "base/units.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

int hs_parse_duration_ns(const char *s, int64_t *ns)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    /* digits [. digits]: read by hand, so no locale, sign, exponent, hex,
     * "inf" or "nan" gets in the way strtod would let it */
    uint64_t whole = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        if (whole > 1000000000000000ULL)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    double frac = 0, scale = 1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        for (; isdigit((unsigned char)*p); p++)
            if (scale < 1e18) {
                scale *= 10;
                frac += (*p - '0') / scale;
            }
    }
    static const struct {
        const char *name;
        double ns;
    } units[] = {{"ns", 1},         {"us", 1e3},          {"ms", 1e6},           {"s", 1e9}, {"", 1e9},
                 {"m", 60e9},       {"h", 3600e9},        {"d", 86400e9},        {"w", 604800e9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].name) != 0)
            continue;
        double v = ((double)whole + frac) * units[i].ns;
        if (v > (double)HS_DURATION_MAX_NS)
            return -1;
        *ns = (int64_t)(v + 0.5);
        return 0;
    }
    return -1;
}

int hs_parse_size(const char *s, uint64_t *bytes)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    uint64_t v = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    unsigned shift = 0;
    const char *units = "kmgt";
    const char *u = *p ? strchr(units, tolower((unsigned char)*p)) : NULL;
    if (u) {
        shift = 10 * (unsigned)(u - units + 1);
        p++;
        if (strcasecmp(p, "b") == 0 || strcasecmp(p, "ib") == 0)
            p += strlen(p);
    }
    if (*p || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *bytes = v << shift;
    return 0;
}
