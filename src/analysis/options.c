/* options.c — the command-line options shared by every report (sample
 * index, filters, trimming, granularity) and their compiled form: regexes
 * compiled once, tag filters parsed into key + regexes or a numeric range
 * with units (pprof's --tagfocus syntax). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis_internal.h"

void hs_analysis_options_init(hs_analysis_options *o)
{
    memset(o, 0, sizeof *o);
    o->nodecount = -1;
    o->nodefraction = -1;
    o->edgefraction = -1;
    o->granularity = HS_GRAN_FUNCTIONS;
    o->divide_by = 1;
}

void hs_analysis_options_free(hs_analysis_options *o)
{
    free(o->sample_index);
    free(o->focus);
    free(o->ignore);
    free(o->show);
    free(o->hide);
    free(o->show_from);
    free(o->prune_from);
    free(o->tagfocus);
    free(o->tagignore);
    free(o->source_path);
    free(o->unit);
    free(o->tagshow);
    free(o->taghide);
    free(o->trim_path);
    for (size_t i = 0; i < o->n_base; i++)
        free(o->base[i]);
    free(o->base);
    hs_analysis_options_init(o);
}

/* Compile RE for the filter named WHAT, with its name and the pattern in
 * the message when RE2 refuses it. 0, or -1. */
int hs_analysis_regcomp(hs_regex *out, const char *re, const char *what, char *err, size_t errlen)
{
    char msg[256];
    if (hs_regex_compile(out, re, msg, sizeof msg) != 0) {
        hs_err(err, errlen, "invalid %s regexp '%.200s': %s", what, re, msg);
        return -1;
    }
    return 0;
}

static int set_str(char **dst, const char *arg, char *err, size_t errlen)
{
    char *s = strdup(arg ? arg : "");
    if (!s) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    free(*dst);
    *dst = s;
    return 1;
}

static int set_re(char **dst, const char *arg, const char *what, char *err, size_t errlen)
{
    hs_regex re;
    if (hs_analysis_regcomp(&re, arg, what, err, errlen) < 0)
        return -1;
    hs_regex_free(&re);
    return set_str(dst, arg, err, errlen);
}

static int set_tag(char **dst, const char *arg, const char *what, char *err, size_t errlen)
{
    hs_an_tagfilter tf;
    hs_analysis_options tmp;
    hs_analysis_options_init(&tmp);
    tmp.tagfocus = (char *)arg;
    hs_an_filters f;
    (void)tf;
    if (hs_an_filters_compile(&f, &tmp, err, errlen) < 0) {
        /* rename the option in the message */
        if (strcmp(what, "tagfocus") != 0 && err && errlen) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", err);
            char *p = strstr(buf, "tagfocus");
            if (p)
                hs_err(err, errlen, "%.*s%s%s", (int)(p - buf), buf, what, p + 8);
        }
        return -1;
    }
    hs_an_filters_free(&f);
    return set_str(dst, arg, err, errlen);
}

static int parse_int(const char *arg, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < 0 || v > 100000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_frac(const char *arg, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v >= 0 && v <= 1))
        return -1;
    *out = v;
    return 0;
}

int hs_analysis_parse_option(hs_analysis_options *o, int code, const char *arg, char *err,
                             size_t errlen)
{
    switch (code) {
    case HS_OPT_SAMPLE_INDEX:
        if (!arg || !*arg) {
            hs_err(err, errlen, "--sample-index needs a sample type name or index");
            return -1;
        }
        return set_str(&o->sample_index, arg, err, errlen);
    case HS_OPT_FOCUS:
        return set_re(&o->focus, arg, "focus", err, errlen);
    case HS_OPT_IGNORE:
        return set_re(&o->ignore, arg, "ignore", err, errlen);
    case HS_OPT_SHOW:
        return set_re(&o->show, arg, "show", err, errlen);
    case HS_OPT_HIDE:
        return set_re(&o->hide, arg, "hide", err, errlen);
    case HS_OPT_SHOW_FROM:
        return set_re(&o->show_from, arg, "show-from", err, errlen);
    case HS_OPT_PRUNE_FROM:
        return set_re(&o->prune_from, arg, "prune-from", err, errlen);
    case HS_OPT_NOINLINES:
        o->noinlines = true;
        return 1;
    case HS_OPT_BASE:
    case HS_OPT_DIFF_BASE: {
        if (o->n_base && o->diff_base != (code == HS_OPT_DIFF_BASE)) {
            hs_err(err, errlen, "--base and --diff-base cannot be combined");
            return -1;
        }
        o->diff_base = code == HS_OPT_DIFF_BASE;
        char **nb = realloc(o->base, (o->n_base + 1) * sizeof *nb);
        if (!nb || !(nb[o->n_base] = strdup(arg ? arg : ""))) {
            if (nb)
                o->base = nb;
            hs_err(err, errlen, "out of memory");
            return -1;
        }
        o->base = nb;
        o->n_base++;
        return 1;
    }
    case HS_OPT_TAGFOCUS:
        return set_tag(&o->tagfocus, arg, "tagfocus", err, errlen);
    case HS_OPT_TAGIGNORE:
        return set_tag(&o->tagignore, arg, "tagignore", err, errlen);
    case HS_OPT_NODECOUNT:
        if (parse_int(arg, &o->nodecount) < 0) {
            hs_err(err, errlen, "--nodecount needs a non-negative integer, got '%s'", arg);
            return -1;
        }
        return 1;
    case HS_OPT_NODEFRACTION:
        if (parse_frac(arg, &o->nodefraction) < 0) {
            hs_err(err, errlen, "--nodefraction needs a number in [0,1], got '%s'", arg);
            return -1;
        }
        return 1;
    case HS_OPT_EDGEFRACTION:
        if (parse_frac(arg, &o->edgefraction) < 0) {
            hs_err(err, errlen, "--edgefraction needs a number in [0,1], got '%s'", arg);
            return -1;
        }
        return 1;
    case HS_OPT_FUNCTIONS:
    case HS_OPT_FILES:
    case HS_OPT_LINES:
    case HS_OPT_ADDRESSES: {
        hs_granularity g = code == HS_OPT_FUNCTIONS ? HS_GRAN_FUNCTIONS
                           : code == HS_OPT_FILES   ? HS_GRAN_FILES
                           : code == HS_OPT_LINES   ? HS_GRAN_LINES
                                                    : HS_GRAN_ADDRESSES;
        if (o->granularity_set && o->granularity != g) {
            hs_err(err, errlen, "only one of --functions, --files, --lines, --addresses");
            return -1;
        }
        o->granularity = g;
        o->granularity_set = true;
        return 1;
    }
    case HS_OPT_CUM:
        o->cum_sort = true;
        return 1;
    case HS_OPT_RELATIVE:
        o->relative = true;
        return 1;
    case HS_OPT_NORMALIZE:
        o->normalize = true;
        return 1;
    case HS_OPT_SOURCE_PATH:
        return set_str(&o->source_path, arg, err, errlen);
    case HS_OPT_UNIT:
        if (!arg || !*arg) {
            hs_err(err, errlen, "--unit needs a unit (ms, s, MB, auto, minimum, ...)");
            return -1;
        }
        return set_str(&o->unit, arg, err, errlen);
    case HS_OPT_DIVIDE_BY: {
        char *end;
        errno = 0;
        double d = strtod(arg, &end);
        if (errno || end == arg || *end || !isfinite(d)) {
            hs_err(err, errlen, "--divide-by needs a number, got '%s'", arg);
            return -1;
        }
        if (d == 0) {
            hs_err(err, errlen, "zero divisor specified");
            return -1;
        }
        o->divide_by = d;
        return 1;
    }
    case HS_OPT_MEAN:
        o->mean = true;
        return 1;
    case HS_OPT_DROP_NEGATIVE:
        o->drop_negative = true;
        return 1;
    case HS_OPT_TAGSHOW:
        return set_re(&o->tagshow, arg, "tagshow", err, errlen);
    case HS_OPT_TAGHIDE:
        return set_re(&o->taghide, arg, "taghide", err, errlen);
    case HS_OPT_TRIM_PATH:
        return set_str(&o->trim_path, arg, err, errlen);
    default:
        return 0;
    }
}

void hs_analysis_options_help(FILE *out, hs_report_kind kind)
{
    fprintf(out,
            "Sample value:\n"
            "  --sample-index NAME|N  value to report (e.g. alloc_space, 0); default: the\n"
            "                         profile's default sample type\n"
            "Filters (regexes, unanchored, RE2 spellings such as \\d and (?i) accepted,\n"
            "matched against function names, file names and mapping files):\n"
            "  --focus RE         keep samples with a frame matching RE\n"
            "  --ignore RE        drop samples with a frame matching RE\n"
            "  --show RE          keep only frames matching RE\n"
            "  --hide RE          drop frames matching RE\n"
            "  --show-from RE     drop frames above the outermost frame matching RE\n"
            "  --prune-from RE    drop frames below (callees of) the innermost frame\n"
            "                     matching RE\n"
            "  --noinlines        merge inlined frames into the function they were\n"
            "                     inlined into\n"
            "  --base FILE        subtract FILE's samples (repeatable), as pprof's -base:\n"
            "                     the report shows what changed\n"
            "  --diff-base FILE   the same, as pprof's -diff_base: FILE's samples are marked\n"
            "                     as the base and percentages are of FILE's total\n"
            "  --tagfocus [KEY=]VALUE  keep samples with a label matching VALUE: regexes\n"
            "                     separated by ',', or a numeric range LO:HI with units\n"
            "                     (e.g. bytes=1kb:, 10ms:1s, 4096)\n"
            "  --tagignore [KEY=]VALUE drop samples with a matching label\n"
            "  --tagshow RE       show only labels whose key matches RE (traces, tags)\n"
            "  --taghide RE       hide labels whose key matches RE\n"
            "  --trim-path P[:P]  remove these prefixes from source file names\n"
            "                     (/proc/self/cwd/ always is)\n"
            "Values:\n"
            "  --unit U           print values in U (ns, us, ms, s, hrs, B, kB, MB, GB,\n"
            "                     ...), 'auto' (each value its own) or 'minimum' (default)\n"
            "  --divide-by R      divide every printed value by R\n"
            "  --mean             each entry's value divided by its count (the sample's\n"
            "                     first value), e.g. mean lock delay with\n"
            "                     --sample-index=delay\n"
            "  --drop-negative    leave out entries whose value is negative (with --base)\n"
            "Granularity (one of):\n"
            "  --functions        one entry per function (default)\n"
            "  --files            one entry per source file\n"
            "  --lines            one entry per source line\n"
            "  --addresses        one entry per instruction address\n");
    if (kind == HS_KIND_NOTRIM)
        return;
    fprintf(out,
            "Trimming:\n"
            "  --nodecount N      show at most N entries (default: %s)\n"
            "  --nodefraction F   drop entries with cum below F of the total (default 0.005)\n"
            "  --edgefraction F   drop edges below F of the total (default 0.001)\n"
            "  --cum              sort by cumulative value instead of flat\n"
            "  --relative-percentages  percentages of the filtered total, not the whole\n",
            kind == HS_KIND_TOP ? "all" : "80");
}

void hs_analysis_apply_defaults(hs_analysis_options *o, hs_report_kind kind)
{
    switch (kind) {
    case HS_KIND_TOP:
        if (o->nodecount < 0)
            o->nodecount = 0;
        break;
    case HS_KIND_GRAPH:
        if (o->nodecount < 0)
            o->nodecount = 80;
        break;
    case HS_KIND_NOTRIM:
        o->nodecount = 0;
        o->nodefraction = 0;
        o->edgefraction = 0;
        return;
    }
    if (o->nodefraction < 0)
        o->nodefraction = 0.005;
    if (o->edgefraction < 0)
        o->edgefraction = 0.001;
}

/* ---- tag filters ---- */

/* Unit of a scaled quantity: class (0 none, 1 bytes, 2 seconds) and factor
 * to the base unit (bytes, nanoseconds). Returns -1 when unknown. */
static int unit_lookup(const char *u, int *cls, double *factor)
{
    static const struct {
        const char *name;
        int cls;
        double f;
    } units[] = {
        {"b", 1, 1},           {"byte", 1, 1},          {"bytes", 1, 1},
        {"kb", 1, 1024.0},     {"kib", 1, 1024.0},      {"kilobyte", 1, 1024.0},
        {"kilobytes", 1, 1024.0}, {"mb", 1, 1048576.0}, {"mib", 1, 1048576.0},
        {"megabyte", 1, 1048576.0}, {"megabytes", 1, 1048576.0},
        {"gb", 1, 1073741824.0}, {"gib", 1, 1073741824.0}, {"gigabyte", 1, 1073741824.0},
        {"gigabytes", 1, 1073741824.0}, {"tb", 1, 1099511627776.0},
        {"tib", 1, 1099511627776.0}, {"pb", 1, 1125899906842624.0},
        {"ns", 2, 1},          {"nanosecond", 2, 1},    {"nanoseconds", 2, 1},
        {"us", 2, 1e3},        {"microsecond", 2, 1e3}, {"microseconds", 2, 1e3},
        {"ms", 2, 1e6},        {"millisecond", 2, 1e6}, {"milliseconds", 2, 1e6},
        {"s", 2, 1e9},         {"sec", 2, 1e9},         {"second", 2, 1e9},
        {"seconds", 2, 1e9},   {"m", 2, 60e9},          {"min", 2, 60e9},
        {"minute", 2, 60e9},   {"minutes", 2, 60e9},    {"h", 2, 3600e9},
        {"hour", 2, 3600e9},   {"hours", 2, 3600e9},    {"d", 2, 86400e9},
        {"day", 2, 86400e9},   {"days", 2, 86400e9},
    };
    if (!u || !*u) {
        *cls = 0;
        *factor = 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(units[i].name, u) == 0) {
            *cls = units[i].cls;
            *factor = units[i].f;
            return 0;
        }
    }
    return -1;
}

/* Parse "123kb" at *s; advances *s. Returns 0 and the base value. */
static int parse_quantity(const char **s, double *v, int *cls)
{
    const char *p = *s;
    const char *start = p;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p))
        p++;
    char num[64];
    if ((size_t)(p - start) >= sizeof num)
        return -1;
    memcpy(num, start, (size_t)(p - start));
    num[p - start] = 0;
    const char *us = p;
    while (isalpha((unsigned char)*p))
        p++;
    char unit[32];
    if ((size_t)(p - us) >= sizeof unit)
        return -1;
    memcpy(unit, us, (size_t)(p - us));
    unit[p - us] = 0;
    double f;
    if (unit_lookup(unit, cls, &f) < 0)
        return -1;
    *v = strtod(num, NULL) * f;
    *s = p;
    return 0;
}

/* Try VALUE as a numeric range; 1 if it is one, 0 if not. */
static int parse_range(hs_an_tagfilter *tf, const char *value)
{
    const char *p = value;
    double a, b;
    int ca, cb;
    if (*p == ':') {
        p++;
        if (parse_quantity(&p, &b, &cb) < 0 || *p)
            return 0;
        tf->kind = 2;
        tf->hi = b;
        tf->unit_class = cb;
        return 1;
    }
    if (parse_quantity(&p, &a, &ca) < 0)
        return 0;
    tf->unit_class = ca;
    tf->lo = a;
    if (!*p) {
        tf->kind = 0;
        return 1;
    }
    if (*p != ':')
        return 0;
    p++;
    if (!*p) {
        tf->kind = 1;
        return 1;
    }
    if (parse_quantity(&p, &b, &cb) < 0 || *p || cb != ca)
        return 0;
    tf->kind = 3;
    tf->hi = b;
    return 1;
}

static void tagfilter_free(hs_an_tagfilter *tf)
{
    for (size_t i = 0; i < tf->n_res; i++)
        hs_regex_free(&tf->res[i]);
    free(tf->res);
    free(tf->key);
    memset(tf, 0, sizeof *tf);
}

static int tagfilter_compile(hs_an_tagfilter *tf, const char *spec, const char *what, char *err,
                             size_t errlen)
{
    memset(tf, 0, sizeof *tf);
    const char *value = spec;
    const char *eq = strchr(spec, '=');
    if (eq) {
        tf->key = strndup(spec, (size_t)(eq - spec));
        if (!tf->key)
            goto oom;
        value = eq + 1;
    }
    if (parse_range(tf, value)) {
        tf->numeric = true;
        return 0;
    }
    /* Shaped like a range but not one ("zz:", ":x", "1kb:zz", "1kb:10ms"):
     * an error, not a regex that quietly matches nothing. A regex for a
     * value with a colon at an end writes it as [:] or \:. */
    size_t vl = strlen(value);
    bool open_end = vl && (value[0] == ':' || (value[vl - 1] == ':' && (vl < 2 || value[vl - 2] != '\\')));
    bool from_num = (isdigit((unsigned char)value[0]) || (value[0] == '-' && isdigit((unsigned char)value[1]))) &&
                    strchr(value, ':');
    if (open_end || from_num) {
        hs_err(err, errlen,
                  "invalid %s '%s': not a range (N, N:, :M or N:M, each a number with an optional unit such "
                  "as 1kb or 10ms, both of one kind)",
                  what, spec);
        tagfilter_free(tf);
        return -1;
    }
    size_t n = 1;
    for (const char *p = value; *p; p++)
        n += *p == ',';
    tf->res = calloc(n, sizeof *tf->res);
    if (!tf->res)
        goto oom;
    const char *p = value;
    for (size_t i = 0; i < n; i++) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char *one = strndup(p, len);
        if (!one)
            goto oom;
        int rc = hs_analysis_regcomp(&tf->res[i], one, what, err, errlen);
        free(one);
        if (rc < 0) {
            tagfilter_free(tf);
            return -1;
        }
        tf->n_res++;
        p = c ? c + 1 : p + len;
    }
    return 0;
oom:
    tagfilter_free(tf);
    hs_err(err, errlen, "out of memory");
    return -1;
}

static int num_matches(const hs_an_tagfilter *tf, int64_t raw, const char *unit)
{
    int cls;
    double f;
    double v = (double)raw;
    if (tf->unit_class != 0) {
        if (unit_lookup(unit, &cls, &f) < 0 || cls != tf->unit_class)
            return 0;
        v *= f;
    }
    switch (tf->kind) {
    case 0:
        return v == tf->lo;
    case 1:
        return v >= tf->lo;
    case 2:
        return v <= tf->hi;
    default:
        return v >= tf->lo && v <= tf->hi;
    }
}

/* pprof's unit for a numeric label: its num_unit, else inferred from the key. */
static const char *label_unit(const hs_profile *p, const hs_label *l)
{
    const char *u = hs_profile_string(p, l->num_unit);
    if (*u)
        return u;
    const char *k = hs_profile_string(p, l->key);
    if (strcmp(k, "alignment") == 0 || strcmp(k, "request") == 0)
        return "bytes";
    return k;
}

bool hs_an_tagfilter_match(const hs_an_tagfilter *tf, const hs_profile *p, const hs_sample *s)
{
    if (tf->numeric) {
        for (size_t i = 0; i < s->n_labels; i++) {
            const hs_label *l = &s->labels[i];
            if (l->str != 0)
                continue; /* string label */
            if (tf->key && strcmp(hs_profile_string(p, l->key), tf->key) != 0)
                continue;
            if (num_matches(tf, l->num, label_unit(p, l)))
                return true;
        }
        return false;
    }
    if (tf->key) {
        for (size_t i = 0; i < s->n_labels; i++) {
            const hs_label *l = &s->labels[i];
            if (l->str == 0 || strcmp(hs_profile_string(p, l->key), tf->key) != 0)
                continue;
            const char *v = hs_profile_string(p, l->str);
            for (size_t r = 0; r < tf->n_res; r++)
                if (hs_regex_match(&tf->res[r], v))
                    return true;
        }
        return false;
    }
    /* no key: every regex must match some "key:value" */
    for (size_t r = 0; r < tf->n_res; r++) {
        bool found = false;
        for (size_t i = 0; i < s->n_labels && !found; i++) {
            const hs_label *l = &s->labels[i];
            if (l->str == 0)
                continue;
            char buf[1024];
            snprintf(buf, sizeof buf, "%s:%s", hs_profile_string(p, l->key),
                     hs_profile_string(p, l->str));
            found = hs_regex_match(&tf->res[r], buf);
        }
        if (!found)
            return false;
    }
    return true;
}

int hs_an_filters_compile(hs_an_filters *f, const hs_analysis_options *o, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
#define RE(field, name)                                                                            \
    if (o->field) {                                                                                \
        if (hs_analysis_regcomp(&f->field, o->field, name, err, errlen) < 0)                      \
            goto fail;                                                                             \
        f->has_##field = true;                                                                     \
    }
    RE(focus, "focus")
    RE(ignore, "ignore")
    RE(show, "show")
    RE(hide, "hide")
    RE(show_from, "show-from")
    RE(prune_from, "prune-from")
#undef RE
    f->noinlines = o->noinlines;
    if (o->tagfocus) {
        if (tagfilter_compile(&f->tagfocus, o->tagfocus, "tagfocus", err, errlen) < 0)
            goto fail;
        f->has_tagfocus = true;
    }
    if (o->tagignore) {
        if (tagfilter_compile(&f->tagignore, o->tagignore, "tagignore", err, errlen) < 0)
            goto fail;
        f->has_tagignore = true;
    }
    return 0;
fail:
    hs_an_filters_free(f);
    return -1;
}

void hs_an_filters_free(hs_an_filters *f)
{
    if (f->has_focus)
        hs_regex_free(&f->focus);
    if (f->has_ignore)
        hs_regex_free(&f->ignore);
    if (f->has_show)
        hs_regex_free(&f->show);
    if (f->has_hide)
        hs_regex_free(&f->hide);
    if (f->has_show_from)
        hs_regex_free(&f->show_from);
    if (f->has_prune_from)
        hs_regex_free(&f->prune_from);
    if (f->has_tagfocus)
        tagfilter_free(&f->tagfocus);
    if (f->has_tagignore)
        tagfilter_free(&f->tagignore);
    memset(f, 0, sizeof *f);
}
