/* filters.c — the filter options' compiled form and the rules built on
 * it, for any stack source (filters.h): which lines of a location show,
 * which locations of a sample stay, whether tags keep a sample, what
 * identifies and names a node. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis_internal.h"
#include "base/err.h"

/* ---- compiled filters ---- */

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

/* pprof's unit for a numeric label: its own, else inferred from the key. */
static const char *label_unit(const hs_an_label *l)
{
    if (l->unit && *l->unit)
        return l->unit;
    if (strcmp(l->key, "alignment") == 0 || strcmp(l->key, "request") == 0)
        return "bytes";
    return l->key;
}

bool hs_an_tagfilter_match_labels(const hs_an_tagfilter *tf, const void *sample, size_t n, hs_an_label_fn get)
{
    hs_an_label l;
    if (tf->numeric) {
        for (size_t i = 0; i < n; i++) {
            get(sample, i, &l);
            if (l.str)
                continue; /* string label */
            if (tf->key && strcmp(l.key, tf->key) != 0)
                continue;
            if (num_matches(tf, l.num, label_unit(&l)))
                return true;
        }
        return false;
    }
    if (tf->key) {
        for (size_t i = 0; i < n; i++) {
            get(sample, i, &l);
            if (!l.str || strcmp(l.key, tf->key) != 0)
                continue;
            for (size_t r = 0; r < tf->n_res; r++)
                if (hs_regex_match(&tf->res[r], l.str))
                    return true;
        }
        return false;
    }
    /* no key: every regex must match some "key:value" */
    for (size_t r = 0; r < tf->n_res; r++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++) {
            get(sample, i, &l);
            if (!l.str)
                continue;
            char buf[1024];
            snprintf(buf, sizeof buf, "%s:%s", l.key, l.str);
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

bool hs_an_filters_by_name(const hs_an_filters *f)
{
    return f->has_focus || f->has_ignore || f->has_hide || f->has_show || f->has_show_from || f->has_prune_from;
}

/* ---- match bits ---- */

uint8_t hs_an_filter_bits(const hs_an_filters *f, const char *s)
{
    uint8_t b = 0;
    if (f->has_focus && hs_regex_match(&f->focus, s))
        b |= HS_FM_FOCUS;
    if (f->has_ignore && hs_regex_match(&f->ignore, s))
        b |= HS_FM_IGNORE;
    if (f->has_hide && hs_regex_match(&f->hide, s))
        b |= HS_FM_HIDE;
    if (f->has_show && hs_regex_match(&f->show, s))
        b |= HS_FM_SHOW;
    if (f->has_show_from && hs_regex_match(&f->show_from, s))
        b |= HS_FM_SHOWFROM;
    return b;
}

uint8_t hs_an_function_bits(const hs_an_filters *f, const char *name, const char *file)
{
    return hs_an_name_bits(f, name) | hs_an_filter_bits(f, file);
}

uint8_t hs_an_name_bits(const hs_an_filters *f, const char *name)
{
    uint8_t b = hs_an_filter_bits(f, name);
    if (f->has_prune_from && *name) {
        char buf[1024];
        if (hs_regex_match(&f->prune_from, hs_an_simplify_func(name, buf, sizeof buf)))
            b |= HS_FM_PRUNE;
    }
    return b;
}

/* ---- one location: FilterSamplesByName's per-location part, ShowFrom,
 * PruneFrom, noinlines ---- */

uint8_t hs_an_location_rule(const hs_an_filters *f, uint8_t mb, const uint8_t *lb, size_t n, uint8_t *keep)
{
    uint8_t any = mb, out = 0;
    for (size_t k = 0; k < n; k++)
        any |= lb[k];
    if (f->has_ignore && (any & HS_FM_IGNORE))
        out |= HS_LOC_IGNORED;
    else if (!f->has_focus || (any & HS_FM_FOCUS))
        out |= HS_LOC_FOCUSED;
    size_t nkeep = n;
    memset(keep, 1, n);
    bool hidden = false;
    if (f->has_hide && (any & HS_FM_HIDE)) {
        out |= HS_LOC_HIDEMATCH;
        if (mb & HS_FM_HIDE) {
            memset(keep, 0, n);
            nkeep = 0;
        } else {
            for (size_t k = 0; k < n; k++)
                if (lb[k] & HS_FM_HIDE) {
                    keep[k] = 0;
                    nkeep--;
                }
        }
        hidden = nkeep == 0;
    }
    if (f->has_show) {
        if (!(mb & HS_FM_SHOW))
            for (size_t k = 0; k < n; k++)
                if (keep[k] && !(lb[k] & (HS_FM_NOFN | HS_FM_SHOW))) {
                    keep[k] = 0;
                    nkeep--;
                }
        if (nkeep == 0)
            hidden = true;
        else
            out |= HS_LOC_SHOWMATCH;
    }
    if (f->has_show_from) {
        if (mb & HS_FM_SHOWFROM) {
            out |= HS_LOC_SHOWFROM;
        } else {
            for (size_t k = n; k-- > 0;) {
                if (!keep[k] || !(lb[k] & HS_FM_SHOWFROM))
                    continue;
                out |= HS_LOC_SHOWFROM;
                for (size_t j = k + 1; j < n; j++)
                    if (keep[j]) {
                        keep[j] = 0;
                        nkeep--;
                    }
                break;
            }
        }
    }
    if (f->has_prune_from && !hidden) { /* pprof's PruneFrom, after the name filters */
        for (size_t k = 0; k < n; k++) {
            if (keep[k] && (lb[k] & HS_FM_PRUNE)) {
                out |= HS_LOC_PRUNE;
                for (size_t j = 0; j < k; j++)
                    if (keep[j]) {
                        keep[j] = 0;
                        nkeep--;
                    }
                break;
            }
        }
    }
    if (f->noinlines && nkeep > 1) { /* pprof's Aggregate(inlineFrame=false): the outermost line */
        size_t last = n;
        while (last > 0 && !keep[last - 1])
            last--;
        for (size_t k = 0; k + 1 < last; k++)
            keep[k] = 0;
    }
    if (hidden)
        out |= HS_LOC_HIDDEN;
    return out;
}

/* ---- nodes ---- */

char *hs_an_node_file(const char *file, bool untrimmed, const char *trim, const char *source_path)
{
    if (*file && !untrimmed)
        file = hs_analysis_trim_path(file, trim, source_path);
    char *cf = strdup(file);
    if (cf && *cf)
        hs_analysis_clean_path(cf);
    return cf;
}

void hs_an_node_key_of(hs_an_node_key *k, hs_granularity g, bool obj_names, uint32_t empty, bool has_fn,
                       uint32_t name, bool named, uint32_t file, uint32_t obj, int64_t line, int64_t start_line,
                       uint64_t address)
{
    *k = (hs_an_node_key){empty, empty, empty, 0, 0, address};
    if (!has_fn) {
        k->objfile = obj;
        return;
    }
    k->function = name;
    k->file = file;
    if (g == HS_GRAN_LINES || g == HS_GRAN_ADDRESSES)
        k->line = line;
    if (!named || obj_names) {
        k->objfile = obj;
        /* pprof also keys on the start line here; for --files that splits
         * one file into several identical rows, so we do not. */
        if (g != HS_GRAN_FILES)
            k->start_line = start_line;
    }
}

/* pprof's NodeInfo.PrintableName */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

size_t hs_an_printable_name_at(char *s, const char *fn, size_t fl, const char *file, size_t filel,
                             const char *obj, int64_t line, uint64_t addr)
{
    size_t n = 0;
    if (addr) { /* %016llx */
        unsigned char be[8];
        for (int i = 0; i < 8; i++)
            be[i] = (unsigned char)(addr >> (56 - 8 * i));
        hs_hex(be, sizeof be, s, 17);
        n = 16;
    }
#define SEP()                                                                                      \
    do {                                                                                           \
        if (n)                                                                                     \
            s[n++] = ' ';                                                                          \
    } while (0)
    if (fl) {
        SEP();
        memcpy(s + n, fn, fl);
        n += fl;
    }
    if (line != 0 || filel) {
        SEP();
        memcpy(s + n, file, filel);
        n += filel;
        if (line != 0) {
            s[n++] = ':';
            n += hs_int_dec(s + n, line);
        }
    } else if (fl) {
    } else if (*obj) {
        SEP();
        const char *b = base_name(obj);
        size_t bl = strlen(b);
        s[n++] = '[';
        memcpy(s + n, b, bl);
        n += bl;
        s[n++] = ']';
    } else {
        SEP();
        memcpy(s + n, "<unknown>", 9);
        n += 9;
    }
#undef SEP
    s[n] = 0;
    return n;
}

char *hs_an_printable_name(const char *fn, const char *file, const char *obj, int64_t line,
                            uint64_t addr)
{
    size_t fl = strlen(fn), filel = strlen(file);
    char *s = malloc(HS_AN_PRINTABLE_ROOM(fl, filel, strlen(obj)));
    if (s)
        hs_an_printable_name_at(s, fn, fl, file, filel, obj, line, addr);
    return s;
}

