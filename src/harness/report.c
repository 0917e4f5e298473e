/* report.c — the harness's reports: a console table like JMH's, JSON (every
 * measurement, read back by `hotspur bench compare`), CSV (one row per
 * case) and Go's benchmark format (one line per measurement, as specified
 * by golang.org/design/14313-benchmark-format, so benchstat reads it). */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "harness/harness.h"

const char *const hs_bench_units[HS_M_N] = {"ns/op",           "cpu-ns/op", "B/op",
                                            "allocs/op",       "instructions/op", "cycles/op",
                                            "branch-misses/op", "cache-misses/op"};

/* An exact integer as such, else 4 significant decimals. */
static void fmt_num(char *buf, size_t cap, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, cap, "%.0f", v);
    else if (fabs(v) >= 100)
        snprintf(buf, cap, "%.1f", v);
    else
        snprintf(buf, cap, "%.4g", v);
}


/* ---- table ---- */

static int table(FILE *f, const hs_brun_info *info, const hs_bresult *res, size_t n)
{
    size_t w = strlen("Benchmark");
    for (size_t i = 0; i < n; i++)
        if (strlen(res[i].c->name) > w)
            w = strlen(res[i].c->name);
    int hw = info->hw_any;
    fprintf(f, "%-*s  %4s  %4s  %12s    %10s  %-5s  %10s  %10s  %10s  %9s", (int)w, "Benchmark", "Mode", "Cnt",
            "Score", "Error", "Units", "Median", "CPU", "B/op", "allocs/op");
    if (hw)
        fprintf(f, "  %12s  %12s  %12s  %12s", "insns/op", "cycles/op", "br-miss/op", "cache-miss/op");
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        const hs_bresult *r = &res[i];
        if (r->failed || r->nm == 0) {
            fprintf(f, "%-*s  FAILED: %s\n", (int)w, r->c->name, r->failed ? r->error : "no measurement");
            continue;
        }
        char err[32] = "", b[32] = "n/a", a[32] = "n/a";
        if (r->nm >= 2)
            snprintf(err, sizeof err, "± %10.3f", r->s[HS_M_NS].ci_hi - r->s[HS_M_NS].mean);
        if (r->ok[HS_M_BYTES])
            fmt_num(b, sizeof b, r->s[HS_M_BYTES].mean);
        if (r->ok[HS_M_ALLOCS])
            fmt_num(a, sizeof a, r->s[HS_M_ALLOCS].mean);
        fprintf(f, "%-*s  %4s  %4zu  %12.3f  %12s  %-5s  %10.3f  %10.3f  %10s  %9s", (int)w, r->c->name, "avgt",
                r->nm, r->s[HS_M_NS].mean, err, "ns/op", r->s[HS_M_NS].median, r->s[HS_M_CPU].median, b, a);
        if (hw)
            for (int k = 0; k < HS_HWC_N; k++) {
                char v[32] = "n/a";
                if (r->ok[HS_M_HW + k])
                    snprintf(v, sizeof v, "%.2f", r->s[HS_M_HW + k].mean);
                fprintf(f, "  %12s", v);
            }
        fputc('\n', f);
    }
    fprintf(f, "\nScore: mean ns/op (wall) over %d fork(s) x %d measurement(s) of %.3g s; Error: 99.9%% "
               "Student-t interval half-width;\nMedian: of ns/op; CPU: median CPU ns/op of the benchmark's threads; "
               "B/op, allocs/op: exact, mean.\n",
            info->forks ? info->forks : 1, info->iterations, info->time_s);
    if (!hw)
        fprintf(f, "Hardware counters: unavailable%s%s%s.\n", info->hw_error[0] ? " (" : "",
                info->hw_error[0] ? info->hw_error : "", info->hw_error[0] ? ")" : "");
    for (size_t i = 0; i < n; i++)
        if (res[i].profile[0])
            fprintf(f, "Profile of %s: %s\n", res[i].c->name, res[i].profile);
    return ferror(f) ? -1 : 0;
}

/* ---- JSON ---- */

static void json_num(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else
        fprintf(f, "%.17g", v);
}

static void json_summary(FILE *f, const hs_bstat_summary *s)
{
    fprintf(f, "{\"n\": %zu, \"mean\": ", s->n);
    json_num(f, s->mean);
    fputs(", \"median\": ", f);
    json_num(f, s->median);
    fputs(", \"stddev\": ", f);
    json_num(f, s->stddev);
    fputs(", \"min\": ", f);
    json_num(f, s->min);
    fputs(", \"max\": ", f);
    json_num(f, s->max);
    fputs(", \"ci_lower\": ", f);
    json_num(f, s->ci_lo);
    fputs(", \"ci_upper\": ", f);
    json_num(f, s->ci_hi);
    fprintf(f, ", \"ci\": \"99.9%% Student-t\", \"outliers\": %zu, \"extreme_outliers\": %zu}", s->outliers,
            s->extreme_outliers);
}

static int json(FILE *f, const hs_brun_info *info, const hs_bresult *res, size_t n)
{
    char date[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    fputs("{\n  \"format\": \"hotspur-bench\", \"version\": 1,\n  \"context\": {\"date\": ", f);
    hs_json_fput_string(f, date);
    fputs(", \"host\": ", f);
    hs_json_fput_string(f, host);
    fputs(", \"program\": ", f);
    hs_json_fput_string(f, info->program);
    fprintf(f, ", \"ncpu\": %d, \"cpu\": ", info->ncpu);
    hs_json_fput_string(f, info->cpu_model);
    fputs(", \"governor\": ", f);
    if (info->governor[0])
        hs_json_fput_string(f, info->governor);
    else
        fputs("null", f);
    fputs(", \"loadavg\": ", f);
    json_num(f, info->load1);
    fputs(", \"hardware_counters\": ", f);
    if (info->hw_any)
        fputs("\"available\"", f);
    else
        hs_json_fput_string(f, info->hw_error[0] ? info->hw_error : "unavailable");
    fputs(", \"warnings\": ", f);
    hs_json_fput_string(f, info->warnings);
    fprintf(f, "},\n  \"config\": {\"time_s\": %.9g, \"warmup\": %d, \"iterations\": %d, \"forks\": %d},\n",
            info->time_s, info->warmup, info->iterations, info->forks);
    fputs("  \"benchmarks\": [", f);
    for (size_t i = 0; i < n; i++) {
        const hs_bresult *r = &res[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        hs_json_fput_string(f, r->c->name);
        fputs(", \"function\": ", f);
        hs_json_fput_string(f, r->c->def->name);
        fputs(", \"params\": {", f);
        for (int k = 0; k < r->c->nargs; k++) {
            if (k)
                fputs(", ", f);
            hs_json_fput_string(f, r->c->args[k].name);
            fputs(": ", f);
            hs_json_fput_string(f, r->c->args[k].str);
        }
        fprintf(f, "}, \"threads\": %d, \"status\": \"%s\"", r->c->threads, r->failed ? "failed" : "ok");
        if (r->failed) {
            fputs(", \"error\": ", f);
            hs_json_fput_string(f, r->error);
        }
        fputs(", \"warnings\": ", f);
        hs_json_fput_string(f, r->warnings);
        if (r->profile[0]) {
            fputs(", \"profile\": ", f);
            hs_json_fput_string(f, r->profile);
        }
        fputs(",\n     \"metrics\": {", f);
        int first = 1;
        for (int m = 0; m < HS_M_N && r->nm; m++) {
            fputs(first ? "" : ", ", f);
            first = 0;
            hs_json_fput_string(f, hs_bench_units[m]);
            fputs(": ", f);
            if (r->ok[m])
                json_summary(f, &r->s[m]);
            else
                fputs("null", f);
        }
        fputs("},\n     \"samples\": [", f);
        for (size_t k = 0; k < r->nm; k++) {
            const hs_bmeas *mm = &r->m[k];
            fprintf(f, "%s{\"n\": %llu, \"ns\": %.0f, \"allocs\": %llu, \"bytes\": %llu", k ? ",\n       " : "\n       ",
                    (unsigned long long)mm->n, mm->ns, (unsigned long long)mm->allocs, (unsigned long long)mm->bytes);
            for (int m = 0; m < HS_M_N; m++) {
                fputs(", ", f);
                hs_json_fput_string(f, hs_bench_units[m]);
                fputs(": ", f);
                double v = hs_bench_per_op(r, mm, m);
                if (v < 0)
                    fputs("null", f);
                else
                    json_num(f, v);
            }
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs("\n  ]\n}\n", f);
    return ferror(f) ? -1 : 0;
}

/* ---- CSV ---- */

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int csv(FILE *f, const hs_brun_info *info, const hs_bresult *res, size_t n)
{
    (void)info;
    fputs("name,status,threads,mode,cnt,score,error,units,median,stddev,min,max,ci_lower,ci_upper,outliers,"
          "cpu_ns_per_op,bytes_per_op,allocs_per_op,instructions_per_op,cycles_per_op,branch_misses_per_op,cache_misses_per_op,"
          "message\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const hs_bresult *r = &res[i];
        csv_str(f, r->c->name);
        fprintf(f, ",%s,%d,avgt,%zu", r->failed ? "failed" : "ok", r->c->threads, r->nm);
        if (!r->failed && r->nm) {
            const hs_bstat_summary *s = &r->s[HS_M_NS];
            fprintf(f, ",%.6g,%.6g,ns/op,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%zu", s->mean, s->ci_hi - s->mean, s->median,
                    s->stddev, s->min, s->max, s->ci_lo, s->ci_hi, s->outliers);
            for (int k = HS_M_CPU; k < HS_M_N; k++)
                if (r->ok[k])
                    fprintf(f, ",%.6g", r->s[k].mean);
                else
                    fputs(",", f);
        } else {
            fputs(",,,ns/op,,,,,,,,,,,,,,", f);
        }
        fputc(',', f);
        csv_str(f, r->failed ? r->error : r->warnings);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* ---- Go's benchmark format ---- */

/* "Benchmark" + the name with its first letter upper-cased (the spec wants
 * an upper-case letter after "Benchmark"), white space made '_', and the
 * -N suffix of GOMAXPROCS: the CPUs the program may use. */
static void go_name(char *out, size_t cap, const hs_bresult *r, int ncpu)
{
    size_t j = (size_t)snprintf(out, cap, "Benchmark");
    const char *s = r->c->name;
    for (size_t i = 0; s[i] && j + 2 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (isspace(ch))
            ch = '_';
        if (i == 0 && islower(ch))
            ch = (unsigned char)toupper(ch);
        else if (i == 0 && !isupper(ch))
            out[j++] = 'X'; /* "Benchmark_x" would not be a benchmark line */
        out[j++] = (char)ch;
    }
    out[j] = '\0';
    if (r->c->threads > 1 && j < cap)
        j += (size_t)snprintf(out + j, cap - j, "/threads=%d", r->c->threads);
    if (ncpu > 1 && j < cap)
        snprintf(out + j, cap - j, "-%d", ncpu);
}

static int go(FILE *f, const hs_brun_info *info, const hs_bresult *res, size_t n)
{
    fputs("goos: linux\n", f);
#if defined(__x86_64__)
    fputs("goarch: amd64\n", f);
#elif defined(__aarch64__)
    fputs("goarch: arm64\n", f);
#endif
    const char *base = strrchr(info->program, '/');
    fprintf(f, "pkg: %s\n", base ? base + 1 : info->program);
    if (info->cpu_model[0])
        fprintf(f, "cpu: %s\n", info->cpu_model);
    for (size_t i = 0; i < n; i++) {
        const hs_bresult *r = &res[i];
        char name[600];
        go_name(name, sizeof name, r, info->ncpu);
        for (size_t k = 0; k < r->nm && !r->failed; k++) {
            const hs_bmeas *m = &r->m[k];
            fprintf(f, "%s \t%llu", name, (unsigned long long)m->n);
            for (int mt = 0; mt < HS_M_N; mt++) {
                double v = hs_bench_per_op(r, m, mt);
                if (v < 0)
                    continue; /* unavailable: no pair, never a 0 */
                char num[48];
                if (mt == HS_M_NS || mt == HS_M_CPU)
                    snprintf(num, sizeof num, "%.2f", v);
                else
                    fmt_num(num, sizeof num, v);
                fprintf(f, " \t%s %s", num, hs_bench_units[mt]);
            }
            fputc('\n', f);
        }
        if (r->failed) /* not a result line: "--- FAIL" as go test prints */
            fprintf(f, "--- FAIL: %s\n    %s\n", name, r->error);
    }
    return ferror(f) ? -1 : 0;
}

int hs_bench_report(FILE *out, int format, const hs_brun_info *info, const hs_bresult *r, size_t n)
{
    switch (format) {
    case HS_BFMT_JSON:
        return json(out, info, r, n);
    case HS_BFMT_CSV:
        return csv(out, info, r, n);
    case HS_BFMT_GO:
        return go(out, info, r, n);
    default:
        return table(out, info, r, n);
    }
}
