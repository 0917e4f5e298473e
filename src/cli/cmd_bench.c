/* cmd_bench.c — `hotspur bench compare OLD NEW`: compare two runs of a
 * benchmark program (the harness's --format json, or Go's benchmark text
 * format, e.g. `go test -bench` or the harness's --format go) in the spirit
 * of benchstat: per benchmark and metric the medians, the change with a
 * bootstrap interval of the ratio of medians, a Mann-Whitney U p-value and
 * `~` when the change is not significant; the geometric mean over all
 * benchmarks; exit status 1 with --fail-on-regression P when a significant
 * change makes a metric worse by more than P%. The statistics are
 * src/harness/stats.c, the same code the harness summarizes with. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "harness/stats.h"
#include "base/vec.h"

#define MAX_UNITS 16
#define CI_LEVEL 0.95
#define BOOT_ROUNDS 2000

typedef struct {
    char unit[48];
    double *v;
    size_t n, cap;
} series;

typedef struct {
    char name[512];
    series s[MAX_UNITS];
    int nunits;
    int failed;
} bench;

typedef struct {
    bench *b;
    size_t n, cap;
} benchset;

static void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur bench compare [options] OLD NEW\n"
            "\n"
            "Compare two benchmark results: JSON written by a hotspur benchmark program\n"
            "(--format json) or Go's benchmark format (--format go, go test -bench).\n"
            "For every benchmark in both and every metric (ns/op, cpu-ns/op, B/op,\n"
            "allocs/op, hardware counters, any unit of a Go line): the old and new\n"
            "median with the 95%% bootstrap interval of each, the change of the median\n"
            "with the 95%% bootstrap interval of the ratio NEW/OLD, and the two-sided\n"
            "Mann-Whitney U p-value. A change whose p is\n"
            "not below alpha prints as '~'. The last row of each metric is the geometric\n"
            "mean over the benchmarks (zero medians left out).\n"
            "\n"
            "      --alpha A                   significance level (default 0.05)\n"
            "      --fail-on-regression P      exit 1 when a significant change makes any\n"
            "                                  metric worse (higher) by more than P%% (\"5\" or \"5%%\")\n"
            "      --metric UNIT               only this metric (repeatable), e.g. ns/op\n"
            "  -h, --help                      show this help\n"
            "\n"
            "Exit status: 0, 1 (regression with --fail-on-regression), 2 (usage or input error).\n");
}

static bench *bench_get(benchset *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->b[i].name, name) == 0)
            return &set->b[i];
    if (HS_VEC_RESERVE(set->b, set->cap, set->n + 1))
        return NULL;
    bench *b = &set->b[set->n++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    return b;
}

static int bench_add(bench *b, const char *unit, double v)
{
    series *s = NULL;
    for (int i = 0; i < b->nunits; i++)
        if (strcmp(b->s[i].unit, unit) == 0)
            s = &b->s[i];
    if (!s) {
        if (b->nunits == MAX_UNITS)
            return 0; /* more metrics than we show: the rest is ignored */
        s = &b->s[b->nunits++];
        snprintf(s->unit, sizeof s->unit, "%s", unit);
    }
    if (HS_VEC_RESERVE(s->v, s->cap, s->n + 1))
        return -1;
    s->v[s->n++] = v;
    return 0;
}

static void benchset_free(benchset *set)
{
    for (size_t i = 0; i < set->n; i++)
        for (int k = 0; k < set->b[i].nunits; k++)
            free(set->b[i].s[k].v);
    free(set->b);
}

static int read_json(const char *path, const char *text, benchset *set, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root) {
        snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
        return -1;
    }
    json_t *list = json_object_get(root, "benchmarks");
    if (!json_is_array(list)) {
        snprintf(err, errlen, "%s: no \"benchmarks\" array (not a hotspur benchmark result)", path);
        json_decref(root);
        return -1;
    }
    size_t i;
    json_t *jb;
    json_array_foreach(list, i, jb)
    {
        const char *name = json_string_value(json_object_get(jb, "name"));
        if (!name)
            continue;
        bench *b = bench_get(set, name);
        if (!b) {
            json_decref(root);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        const char *status = json_string_value(json_object_get(jb, "status"));
        if (status && strcmp(status, "ok") != 0)
            b->failed = 1;
        size_t k;
        json_t *sample;
        json_array_foreach(json_object_get(jb, "samples"), k, sample)
        {
            const char *key;
            json_t *val;
            json_object_foreach(sample, key, val)
            {
                if (!strchr(key, '/') || !json_is_number(val))
                    continue; /* n, ns, allocs, bytes are totals; null is unavailable */
                if (bench_add(b, key, json_number_value(val)) != 0) {
                    json_decref(root);
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
            }
        }
    }
    json_decref(root);
    return 0;
}

/* Go's format: "BenchmarkName-N  iterations  value unit [value unit...]". The
 * "Benchmark" prefix and the -N (GOMAXPROCS) suffix are dropped from names. */
static int read_go(const char *path, char *text, benchset *set, char *err, size_t errlen)
{
    int lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "Benchmark", 9) != 0)
            continue;
        char *f[64];
        int nf = 0;
        char *s2 = NULL;
        for (char *tok = strtok_r(line, " \t\r\v\f", &s2); tok && nf < 64; tok = strtok_r(NULL, " \t\r\v\f", &s2))
            f[nf++] = tok;
        if (nf < 4 || nf % 2 != 0 || (f[0][9] && !isupper((unsigned char)f[0][9])))
            continue;
        char *end;
        errno = 0;
        (void)strtoull(f[1], &end, 10);
        if (errno || *end)
            continue;
        char name[512];
        snprintf(name, sizeof name, "%s", f[0] + 9);
        char *dash = strrchr(name, '-');
        if (dash && dash[1] && strspn(dash + 1, "0123456789") == strlen(dash + 1))
            *dash = '\0';
        bench *b = bench_get(set, name);
        if (!b) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (int i = 2; i + 1 < nf; i += 2) {
            errno = 0;
            double v = strtod(f[i], &end);
            if (errno || *end)
                break;
            if (bench_add(b, f[i + 1], v) != 0) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
        }
        lines++;
    }
    if (!lines) {
        snprintf(err, errlen, "%s: neither hotspur benchmark JSON nor Go benchmark lines", path);
        return -1;
    }
    return 0;
}

static int read_results(const char *path, benchset *set, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t len = 0, cap = 1 << 16;
    char *text = malloc(cap);
    while (text) {
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
        if (len + 1 == cap) {
            if (cap >= (256u << 20)) {
                free(text);
                text = NULL;
                break;
            }
            if (HS_VEC_RESERVE(text, cap, cap + 1)) {
                free(text);
                text = NULL;
                break;
            }
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        free(text);
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "too large or out of memory");
        return -1;
    }
    text[len] = '\0';
    size_t skip = strspn(text, " \t\r\n");
    int rc = text[skip] == '{' ? read_json(path, text, set, err, errlen) : read_go(path, text, set, err, errlen);
    free(text);
    return rc;
}

static const series *find_series(const bench *b, const char *unit)
{
    for (int i = 0; i < b->nunits; i++)
        if (strcmp(b->s[i].unit, unit) == 0 && b->s[i].n)
            return &b->s[i];
    return NULL;
}

static void fmt_value(char *buf, size_t cap, double v)
{
    double a = fabs(v);
    if (v == floor(v) && a < 1e7)
        snprintf(buf, cap, "%.0f", v);
    else if (a >= 1e9)
        snprintf(buf, cap, "%.3gG", v / 1e9);
    else if (a >= 1e6)
        snprintf(buf, cap, "%.4gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(buf, cap, "%.4gk", v / 1e3);
    else
        snprintf(buf, cap, "%.4g", v);
}

/* "57.21 ± 3%": the median and the half-width of its bootstrap interval. */
static void fmt_center(char *buf, size_t cap, const series *s, double median)
{
    char v[32];
    fmt_value(v, sizeof v, median);
    double one = 1.0, lo, hi;
    if (median != 0 && s->n >= 2 && hs_bstat_ratio_ci(&one, 1, s->v, s->n, CI_LEVEL, BOOT_ROUNDS, &lo, &hi) == 0) {
        double pct = (hi - lo) / 2.0 / fabs(median) * 100.0;
        snprintf(buf, cap, "%s ± %.0f%%", v, pct < 0.5 && pct > 0 ? 0.0 : pct);
        if (pct > 0 && pct < 0.5)
            snprintf(buf, cap, "%s ± <1%%", v);
    } else {
        snprintf(buf, cap, "%s", v);
    }
}

/* Print s left-aligned in w display columns (± is two bytes, one column). */
static void col(const char *s, int w)
{
    int cols = 0;
    for (const char *p = s; *p; p++)
        cols += ((unsigned char)*p & 0xc0) != 0x80;
    fputs(s, stdout);
    for (; cols < w; cols++)
        putchar(' ');
}

typedef struct {
    double alpha;
    double fail_pct; /* <0: off */
    const char *metrics[MAX_UNITS];
    int nmetrics;
} cmp_opts;

/* Compare one metric over every benchmark; returns regressions found. */
static int compare_metric(const char *unit, const benchset *o, const benchset *n, const cmp_opts *opt, int *printed)
{
    size_t w = 9;
    for (size_t i = 0; i < o->n; i++)
        if (strlen(o->b[i].name) > w)
            w = strlen(o->b[i].name);
    int rows = 0, regressions = 0, geo_n = 0, geo_skipped = 0;
    double geo_old = 0, geo_new = 0;
    for (size_t i = 0; i < o->n; i++) {
        const bench *bo = &o->b[i];
        const bench *bn = NULL;
        for (size_t k = 0; k < n->n; k++)
            if (strcmp(n->b[k].name, bo->name) == 0)
                bn = &n->b[k];
        const series *so = bn ? find_series(bo, unit) : NULL, *sn = bn ? find_series(bn, unit) : NULL;
        if (!so || !sn)
            continue;
        if (!rows++) {
            if ((*printed)++)
                printf("\n");
            printf("%-*s  %-18s  %-18s  %s\n", (int)w, unit, "old", "new", "delta");
        }
        double mo = hs_bstat_median(so->v, so->n), mn = hs_bstat_median(sn->v, sn->n);
        char co[64], cn[64], delta[160];
        fmt_center(co, sizeof co, so, mo);
        fmt_center(cn, sizeof cn, sn, mn);
        double p = hs_bstat_mann_whitney(so->v, so->n, sn->v, sn->n);
        if (mo > 0 && mn > 0) {
            geo_old += log(mo);
            geo_new += log(mn);
            geo_n++;
        } else {
            geo_skipped++;
        }
        if (p >= opt->alpha) {
            snprintf(delta, sizeof delta, "~ (p=%.3f n=%zu+%zu)", p, so->n, sn->n);
        } else if (mo == 0) {
            snprintf(delta, sizeof delta, "+inf%% (p=%.3f n=%zu+%zu)", p, so->n, sn->n);
        } else {
            double d = (mn / mo - 1.0) * 100.0, lo, hi;
            char ci[64] = "";
            if (hs_bstat_ratio_ci(so->v, so->n, sn->v, sn->n, CI_LEVEL, BOOT_ROUNDS, &lo, &hi) == 0)
                snprintf(ci, sizeof ci, " [%+.2f%%, %+.2f%%]", (lo - 1) * 100, (hi - 1) * 100);
            snprintf(delta, sizeof delta, "%+.2f%%%s (p=%.3f n=%zu+%zu)", d, ci, p, so->n, sn->n);
        }
        printf("%-*s  ", (int)w, bo->name);
        col(co, 18);
        printf("  ");
        col(cn, 18);
        printf("  %s\n", delta);
        if (opt->fail_pct >= 0 && p < opt->alpha && (mo == 0 ? mn > 0 : (mn / mo - 1.0) * 100.0 > opt->fail_pct)) {
            fprintf(stderr, "hotspur bench compare: regression: %s %s %s -> %s (more than %g%% worse)\n", bo->name,
                    unit, co, cn, opt->fail_pct);
            regressions++;
        }
    }
    if (rows && geo_n) {
        char go[32], gn[32];
        double a = exp(geo_old / geo_n), b = exp(geo_new / geo_n);
        fmt_value(go, sizeof go, a);
        fmt_value(gn, sizeof gn, b);
        char note[64] = "";
        if (geo_skipped)
            snprintf(note, sizeof note, " (%d with a zero median left out)", geo_skipped);
        printf("%-*s  %-18s  %-18s  %+.2f%%%s\n", (int)w, "geomean", go, gn, (b / a - 1.0) * 100.0, note);
    } else if (rows) {
        printf("%-*s  %-18s  %-18s  (no benchmark with both medians above zero)\n", (int)w, "geomean", "-", "-");
    }
    return regressions;
}

static int wanted(const cmp_opts *o, const char *unit)
{
    if (!o->nmetrics)
        return 1;
    for (int i = 0; i < o->nmetrics; i++)
        if (strcmp(o->metrics[i], unit) == 0)
            return 1;
    return 0;
}

enum { OPT_ALPHA = HS_CLI_EXTRA, OPT_FAIL, OPT_METRIC };

static int compare_extra(void *ctx, hs_analysis_options *ao, int code, const char *v, char *err,
                         size_t errlen)
{
    cmp_opts *opt = ctx;
    (void)ao;
    if (code == OPT_METRIC) {
        if (opt->nmetrics < MAX_UNITS)
            opt->metrics[opt->nmetrics++] = v;
        return 0;
    }
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (code == OPT_FAIL && *end == '%')
        end++;
    if (errno || end == v || *end || d < 0 || (code == OPT_ALPHA && (d <= 0 || d >= 1))) {
        snprintf(err, errlen, "%s: bad value '%s'", code == OPT_ALPHA ? "--alpha" : "--fail-on-regression", v);
        return -1;
    }
    *(code == OPT_ALPHA ? &opt->alpha : &opt->fail_pct) = d;
    return 0;
}

static int cmd_compare(int argc, char **argv)
{
    cmp_opts opt = {.alpha = 0.05, .fail_pct = -1};
    static const hs_cli_extra extras[] = {
        {"alpha", required_argument, OPT_ALPHA},
        {"fail-on-regression", required_argument, OPT_FAIL},
        {"metric", required_argument, OPT_METRIC},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {.name = "bench compare", .usage = bench_usage, .extras = extras,
                                      .extra = compare_extra, .max_args = -1};
    int first = 0;
    int prc = hs_cli_parse(&spec, argc, argv, NULL, &opt, NULL, &first);
    if (prc >= 0)
        return prc;
    const char **files = (const char **)argv + first;
    int nfiles = argc - first;
    if (nfiles > 2) {
        fprintf(stderr, "hotspur bench compare: expected two files, OLD and NEW\n");
        return 2;
    }
    if (nfiles != 2) {
        bench_usage(stderr);
        return 2;
    }
    benchset o = {0}, n = {0};
    char err[512];
    if (read_results(files[0], &o, err, sizeof err) != 0 || read_results(files[1], &n, err, sizeof err) != 0) {
        fprintf(stderr, "hotspur bench compare: %s\n", err);
        benchset_free(&o);
        benchset_free(&n);
        return 2;
    }
    /* Metrics in a fixed order first, then any other unit in order of appearance. */
    const char *units[64];
    int nu = 0;
    static const char *known[] = {"ns/op", "cpu-ns/op", "B/op", "allocs/op", "instructions/op", "cycles/op", "branch-misses/op",
                                  "cache-misses/op"};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        units[nu++] = known[k];
    for (size_t i = 0; i < o.n; i++)
        for (int k = 0; k < o.b[i].nunits && nu < 64; k++) {
            int seen = 0;
            for (int j = 0; j < nu; j++)
                seen |= strcmp(units[j], o.b[i].s[k].unit) == 0;
            if (!seen)
                units[nu++] = o.b[i].s[k].unit;
        }
    int printed = 0, regressions = 0;
    for (int u = 0; u < nu; u++)
        if (wanted(&opt, units[u]))
            regressions += compare_metric(units[u], &o, &n, &opt, &printed);
    for (size_t i = 0; i < o.n; i++) {
        int in_new = 0;
        for (size_t k = 0; k < n.n; k++)
            in_new |= strcmp(n.b[k].name, o.b[i].name) == 0;
        if (!in_new)
            printf("only in %s: %s\n", files[0], o.b[i].name);
        else if (o.b[i].failed)
            printf("failed in %s: %s\n", files[0], o.b[i].name);
    }
    for (size_t k = 0; k < n.n; k++) {
        int in_old = 0;
        for (size_t i = 0; i < o.n; i++)
            in_old |= strcmp(n.b[k].name, o.b[i].name) == 0;
        if (!in_old)
            printf("only in %s: %s\n", files[1], n.b[k].name);
        else if (n.b[k].failed)
            printf("failed in %s: %s\n", files[1], n.b[k].name);
    }
    if (!printed)
        fprintf(stderr, "hotspur bench compare: no benchmark with measurements in both files\n");
    benchset_free(&o);
    benchset_free(&n);
    if (!printed)
        return 2;
    return regressions ? 1 : 0;
}

int hs_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "compare") == 0)
        return cmd_compare(argc - 1, argv + 1);
    fprintf(stderr, "hotspur bench: unknown subcommand '%s' (hotspur bench compare OLD NEW)\n", argv[1]);
    return 2;
}
