/* raw.c — `raw` (pprof's -raw, Profile.String()): the profile as pprof's
 * debugging dump prints it: header, every sample's values and location ids
 * with its labels, every location with its lines, every mapping. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report.h"
#include "report/text_reports.h"

/* Go's time.Duration.String() */
static void go_duration(char *buf, size_t len, int64_t d)
{
    uint64_t u = d < 0 ? (uint64_t)(-(d + 1)) + 1 : (uint64_t)d;
    const char *neg = d < 0 ? "-" : "";
    if (u == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    char frac[16] = "";
    if (u < 1000000000ULL) {
        uint64_t div;
        const char *unit;
        int prec;
        if (u < 1000) {
            snprintf(buf, len, "%s%lluns", neg, (unsigned long long)u);
            return;
        } else if (u < 1000000) {
            div = 1000, unit = "\xc2\xb5s", prec = 3;
        } else {
            div = 1000000, unit = "ms", prec = 6;
        }
        uint64_t f = u % div;
        if (f) {
            snprintf(frac, sizeof frac, ".%0*llu", prec, (unsigned long long)f);
            for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
                frac[n - 1] = 0;
        }
        snprintf(buf, len, "%s%llu%s%s", neg, (unsigned long long)(u / div), frac, unit);
        return;
    }
    uint64_t secs = u / 1000000000ULL, f = u % 1000000000ULL;
    if (f) {
        snprintf(frac, sizeof frac, ".%09llu", (unsigned long long)f);
        for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
            frac[n - 1] = 0;
    }
    uint64_t mins = secs / 60, hours = mins / 60;
    if (hours)
        snprintf(buf, len, "%s%lluh%llum%llu%ss", neg, (unsigned long long)hours,
                 (unsigned long long)(mins % 60), (unsigned long long)(secs % 60), frac);
    else if (mins)
        snprintf(buf, len, "%s%llum%llu%ss", neg, (unsigned long long)mins,
                 (unsigned long long)(secs % 60), frac);
    else
        snprintf(buf, len, "%s%llu%ss", neg, (unsigned long long)secs, frac);
}

/* the first n runes of s (Go's "%.4v" of a string) */
static void runes(char *s, size_t n)
{
    size_t r = 0;
    for (char *p = s; *p; p++) {
        if (((unsigned char)*p & 0xc0) != 0x80 && r++ == n) {
            *p = 0;
            return;
        }
    }
}

/* Go's time.Time.String(): "2006-01-02 15:04:05.999999999 -0700 MST" */
static void go_time(char *buf, size_t len, int64_t ns)
{
    time_t secs = (time_t)(ns / 1000000000);
    int64_t f = ns % 1000000000;
    if (f < 0) {
        f += 1000000000;
        secs--;
    }
    struct tm tm;
    char a[64], z[64], frac[16] = "";
    if (!localtime_r(&secs, &tm) || !strftime(a, sizeof a, "%Y-%m-%d %H:%M:%S", &tm) ||
        !strftime(z, sizeof z, "%z %Z", &tm)) {
        snprintf(buf, len, "?");
        return;
    }
    if (f) {
        snprintf(frac, sizeof frac, ".%09lld", (long long)f);
        for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
            frac[n - 1] = 0;
    }
    snprintf(buf, len, "%s%s %s", a, frac, z);
}

typedef struct {
    char *s;
} str_item;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(((const str_item *)a)->s, ((const str_item *)b)->s);
}

/* "key:[v1 v2]" per key, sorted, space separated (labelsToString and
 * numLabelsToString); numeric values carry their units when every value of
 * the key has one. */
static int print_labels(FILE *out, const hs_profile *p, const hs_sample *s, bool numeric)
{
    str_item *items = calloc(s->n_labels + 1, sizeof *items);
    size_t n = 0;
    int rc = -1;
    if (!items)
        return -1;
    for (size_t i = 0; i < s->n_labels; i++) {
        const hs_label *l = &s->labels[i];
        if ((l->str == 0) != numeric)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = s->labels[j].key == l->key && (s->labels[j].str == 0) == numeric;
        if (seen)
            continue;
        size_t nv = 0, nu = 0, cap = 64;
        for (size_t j = i; j < s->n_labels; j++) {
            const hs_label *m = &s->labels[j];
            if (m->key != l->key || (m->str == 0) != numeric)
                continue;
            nv++;
            nu += m->num_unit != 0;
            cap += strlen(hs_profile_string(p, m->str)) + strlen(hs_profile_string(p, m->num_unit)) + 32;
        }
        const char *key = hs_profile_string(p, l->key);
        cap += strlen(key);
        char *b = malloc(cap);
        if (!b)
            goto out;
        size_t w = (size_t)snprintf(b, cap, "%s:[", key);
        size_t k = 0;
        for (size_t j = i; j < s->n_labels; j++) {
            const hs_label *m = &s->labels[j];
            if (m->key != l->key || (m->str == 0) != numeric)
                continue;
            const char *sep = k++ ? " " : "";
            if (!numeric)
                w += (size_t)snprintf(b + w, cap - w, "%s%s", sep, hs_profile_string(p, m->str));
            else if (nu == nv)
                w += (size_t)snprintf(b + w, cap - w, "%s%lld %s", sep, (long long)m->num,
                                      hs_profile_string(p, m->num_unit));
            else
                w += (size_t)snprintf(b + w, cap - w, "%s%lld", sep, (long long)m->num);
        }
        snprintf(b + w, cap - w, "]");
        items[n++].s = b;
    }
    if (n) {
        qsort(items, n, sizeof *items, cmp_str);
        fputs("\n                ", out);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%s", i ? " " : "", items[i].s);
    }
    rc = 0;
out:
    for (size_t i = 0; i < n; i++)
        free(items[i].s);
    free(items);
    return rc;
}

int hs_report_raw(FILE *out, const hs_profile *p, char *err, size_t errlen)
{
    char buf[160]; /* go_time: 64 + 16 + 64 + 2 at most */
    for (size_t i = 0; i < p->n_comments; i++)
        fprintf(out, "Comment: %s\n", hs_profile_string(p, p->comments[i]));
    if (p->period_type.type || p->period_type.unit)
        fprintf(out, "PeriodType: %s %s\n", hs_profile_string(p, p->period_type.type),
                hs_profile_string(p, p->period_type.unit));
    fprintf(out, "Period: %lld\n", (long long)p->period);
    if (p->time_nanos) {
        go_time(buf, sizeof buf, p->time_nanos);
        fprintf(out, "Time: %s\n", buf);
    }
    if (p->duration_nanos) {
        go_duration(buf, sizeof buf, p->duration_nanos);
        runes(buf, 4);
        fprintf(out, "Duration: %s\n", buf);
    }
    fprintf(out, "Samples:\n");
    const char *dflt = hs_profile_string(p, p->default_sample_type);
    for (size_t i = 0; i < p->n_sample_types; i++) {
        const char *t = hs_profile_string(p, p->sample_types[i].type);
        fprintf(out, "%s%s/%s%s", i ? " " : "", t, hs_profile_string(p, p->sample_types[i].unit),
                strcmp(t, dflt) == 0 ? "[dflt]" : "");
    }
    fputc('\n', out);
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        for (size_t v = 0; v < p->n_sample_types; v++)
            fprintf(out, " %10lld", (long long)s->values[v]);
        fputs(": ", out);
        for (size_t l = 0; l < s->n_locations; l++)
            fprintf(out, "%llu ", (unsigned long long)s->location_ids[l]);
        if (print_labels(out, p, s, false) < 0 || print_labels(out, p, s, true) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        fputc('\n', out);
    }
    fprintf(out, "Locations\n");
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        char loc[96];
        int w = snprintf(loc, sizeof loc, "%6llu: %#llx ", (unsigned long long)l->id,
                         (unsigned long long)l->address);
        if (l->address == 0)
            w = snprintf(loc, sizeof loc, "%6llu: 0x0 ", (unsigned long long)l->id);
        if (l->mapping_id)
            w += snprintf(loc + w, sizeof loc - (size_t)w, "M=%llu ", (unsigned long long)l->mapping_id);
        if (l->is_folded)
            snprintf(loc + w, sizeof loc - (size_t)w, "[F] ");
        if (l->n_lines == 0)
            fprintf(out, "%s\n", loc);
        for (size_t k = 0; k < l->n_lines; k++) {
            const hs_function *fn = hs_profile_function(p, l->lines[k].function_id);
            fputs(k ? "             " : loc, out);
            if (!fn) {
                fputs("??\n", out);
                continue;
            }
            const char *name = hs_profile_string(p, fn->name);
            const char *sys = hs_profile_string(p, fn->system_name);
            fprintf(out, "%s %s:%lld s=%lld%s%s%s\n", name, hs_profile_string(p, fn->filename),
                    (long long)l->lines[k].line, (long long)fn->start_line,
                    strcmp(name, sys) ? "(" : "", strcmp(name, sys) ? sys : "",
                    strcmp(name, sys) ? ")" : "");
        }
    }
    fprintf(out, "Mappings\n");
    for (size_t i = 0; i < p->n_mappings; i++) {
        const hs_mapping *m = &p->mappings[i];
        char a[24], b[24], c[24];
        snprintf(a, sizeof a, m->memory_start ? "%#llx" : "0x0", (unsigned long long)m->memory_start);
        snprintf(b, sizeof b, m->memory_limit ? "%#llx" : "0x0", (unsigned long long)m->memory_limit);
        snprintf(c, sizeof c, m->file_offset ? "%#llx" : "0x0", (unsigned long long)m->file_offset);
        fprintf(out, "%llu: %s/%s/%s %s %s %s%s%s%s\n", (unsigned long long)m->id, a, b, c,
                hs_profile_string(p, m->filename), hs_profile_string(p, m->build_id),
                m->has_functions ? "[FN]" : "", m->has_filenames ? "[FL]" : "",
                m->has_line_numbers ? "[LN]" : "", m->has_inline_frames ? "[IN]" : "");
    }
    if (hs_text_written(out, err, errlen) < 0)
        return -1;
    return 0;
}
