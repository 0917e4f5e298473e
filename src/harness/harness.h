/* harness.h — the inside of libhotspur_bench: the registered benchmarks
 * expanded into cases (bench.c), one measurement of a case (bench.c), the
 * runner that forks, calibrates and collects (runner.c) and the reports
 * (report.c). The public side is include/hotspur/bench.h. */
#ifndef HS_HARNESS_H
#define HS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/counters.h"
#include "harness/stats.h"
#include "hotspur/bench.h"

#define HS_BENCH_MAX_ARGS 8

typedef struct {
    char name[64];
    char str[128];
    long num;
    int is_num;
} hs_barg;

typedef struct {
    const hs_bench_def *def;
    char name[512]; /* "fn" or "fn/k=v/k=v" */
    hs_barg args[HS_BENCH_MAX_ARGS];
    int nargs;
    int threads;
} hs_bcase;

/* One measurement: n iterations on each thread. */
typedef struct {
    uint64_t n;
    double ns;              /* elapsed, pauses taken out */
    double cpu_ns;          /* CPU time of the threads, summed, pauses taken out */
    uint64_t allocs, bytes; /* summed over the threads */
    double hw[HS_HWC_N];    /* summed; -1 unavailable */
} hs_bmeas;

/* Called when the measured loop starts (before the clock) and ends (after
 * it): the --profile run starts and stops the agent there. */
typedef struct {
    void (*start)(void *arg);
    void (*stop)(void *arg);
    void *arg;
} hs_bhooks;

/* Expand every registered benchmark into its cases, sorted by source
 * position. Returns the count (>= 0) or -1 with err (bad .params). */
int hs_bench_cases(hs_bcase **out, char *err, size_t errlen);

/* Run the case once with n iterations per thread. Returns 0, or -1 when the
 * case failed (message in err) or never reached hs_bench_loop(). */
int hs_bench_measure(const hs_bcase *c, uint64_t n, const hs_bhooks *hooks, hs_bmeas *m, char *err,
                     size_t errlen);

/* ---- results (runner.c fills them, report.c prints them) ---- */

/* The metrics, per operation: wall ns, CPU ns, bytes, allocations, then
 * the hardware counters. */
enum { HS_M_NS, HS_M_CPU, HS_M_BYTES, HS_M_ALLOCS, HS_M_HW, HS_M_N = HS_M_HW + HS_HWC_N };
extern const char *const hs_bench_units[HS_M_N]; /* "ns/op", "cpu-ns/op", ... */

typedef struct {
    const hs_bcase *c;
    hs_bmeas *m;
    size_t nm, capm;
    int failed;
    char error[512];
    char profile[1024]; /* files written by --profile, space separated */
    /* per-op figures of every measurement (HS_M_*) and their summaries;
     * ok[k] == 0: metric k is unavailable */
    hs_bstat_summary s[HS_M_N];
    int ok[HS_M_N];
    char warnings[1024]; /* "; " separated */
} hs_bresult;

typedef struct {
    const char *program;
    double time_s;
    int warmup, iterations, forks;
    const char *filter;
    int ncpu;
    char governor[128]; /* "" when there is no cpufreq */
    double load1;
    char cpu_model[128];
    char hw_error[256]; /* why counters are unavailable; "" when they are */
    int hw_any;         /* some counter worked somewhere */
    char warnings[2048];
} hs_brun_info;

enum { HS_BFMT_TABLE, HS_BFMT_JSON, HS_BFMT_CSV, HS_BFMT_GO };

/* Per-op value of measurement m for metric (HS_M_*); -1: unavailable. */
double hs_bench_per_op(const hs_bresult *r, const hs_bmeas *m, int metric);

int hs_bench_report(FILE *out, int format, const hs_brun_info *info, const hs_bresult *r, size_t n);

#endif
