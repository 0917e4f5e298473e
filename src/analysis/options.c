/* options.c — the command-line options shared by every report (sample
 * index, filters, trimming, granularity): parsing, defaults, help. Their
 * compiled form and the rules on it are filters.c's. */
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
