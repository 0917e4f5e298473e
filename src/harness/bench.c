/* bench.c — the benchmark side of the harness: registration (the
 * constructors HS_BENCH emits call hs_bench_register), expansion of .params
 * into cases, and one measurement of a case: n iterations on each of its
 * threads, timed from the first hs_bench_loop() turn to the last, with the
 * allocation and hardware counters of each thread running only in between.
 *
 * The registry is the one piece of process-wide state: constructors fill it
 * before main and nothing writes it afterwards. */
#define _GNU_SOURCE
#include "harness/harness.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/alloc.h"
#include "base/vec.h"

#define HS_BENCH_MAX_DEFS 1024
#define HS_BENCH_MAX_CASES 4096

static const hs_bench_def *g_defs[HS_BENCH_MAX_DEFS];
static int g_ndefs, g_overflow;

void hs_bench_register(const hs_bench_def *def)
{
    if (g_ndefs < HS_BENCH_MAX_DEFS)
        g_defs[g_ndefs++] = def;
    else
        g_overflow = 1;
}

/* ---- .params ---- */

typedef struct {
    char name[64];
    hs_barg vals[256];
    int n;
} axis;

static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    size_t i = 0;
    while (s[i] && isspace((unsigned char)s[i]))
        i++;
    memmove(s, s + i, n - i + 1);
}

static int add_val(axis *a, const char *v, char *err, size_t errlen)
{
    if (a->n == (int)(sizeof a->vals / sizeof a->vals[0])) {
        snprintf(err, errlen, "parameter %s: more than 256 values", a->name);
        return -1;
    }
    hs_barg *g = &a->vals[a->n++];
    memcpy(g->name, a->name, sizeof g->name); /* both 64 bytes, NUL-terminated */
    snprintf(g->str, sizeof g->str, "%s", v);
    g->is_num = parse_long(v, &g->num) == 0;
    return 0;
}

/* "A..B*K" or "A..B+K": 1 if spec is a range (expanded into a), 0 if not. */
static int parse_range(axis *a, const char *spec, char *err, size_t errlen)
{
    const char *dots = strstr(spec, "..");
    if (!dots)
        return 0;
    char lo_s[64], hi_s[64], step_s[64];
    const char *op = strpbrk(dots + 2, "*+");
    if (!op || (size_t)(dots - spec) >= sizeof lo_s || (size_t)(op - dots - 2) >= sizeof hi_s ||
        strlen(op + 1) >= sizeof step_s) {
        snprintf(err, errlen, "parameter %s: range '%s' is not A..B*K or A..B+K", a->name, spec);
        return -1;
    }
    memcpy(lo_s, spec, (size_t)(dots - spec));
    lo_s[dots - spec] = '\0';
    memcpy(hi_s, dots + 2, (size_t)(op - dots - 2));
    hi_s[op - dots - 2] = '\0';
    snprintf(step_s, sizeof step_s, "%s", op + 1);
    long lo, hi, step;
    if (parse_long(lo_s, &lo) || parse_long(hi_s, &hi) || parse_long(step_s, &step) || lo > hi ||
        (*op == '*' && (step < 2 || lo < 1)) || (*op == '+' && step < 1)) {
        snprintf(err, errlen, "parameter %s: bad range '%s'", a->name, spec);
        return -1;
    }
    for (long v = lo; v <= hi;) {
        char buf[32];
        snprintf(buf, sizeof buf, "%ld", v);
        if (add_val(a, buf, err, errlen) != 0)
            return -1;
        if (*op == '*' ? __builtin_mul_overflow(v, step, &v) : __builtin_add_overflow(v, step, &v))
            break;
    }
    return 1;
}

static int parse_params(const char *params, axis *axes, int max, char *err, size_t errlen)
{
    char buf[4096];
    if (strlen(params) >= sizeof buf) {
        snprintf(err, errlen, "parameters too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", params);
    int n = 0;
    char *save = NULL;
    for (char *part = strtok_r(buf, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
        trim(part);
        if (!*part)
            continue;
        char *eq = strchr(part, '=');
        if (n == max) {
            snprintf(err, errlen, "more than %d parameters", max);
            return -1;
        }
        if (!eq || eq == part) {
            snprintf(err, errlen, "parameter '%s' is not name=values", part);
            return -1;
        }
        *eq = '\0';
        axis *a = &axes[n++];
        a->n = 0;
        snprintf(a->name, sizeof a->name, "%s", part);
        trim(a->name);
        char *vals = eq + 1;
        trim(vals);
        int r = parse_range(a, vals, err, errlen);
        if (r < 0)
            return -1;
        if (r == 0) {
            char *s2 = NULL;
            for (char *v = strtok_r(vals, ",", &s2); v; v = strtok_r(NULL, ",", &s2)) {
                trim(v);
                if (*v && add_val(a, v, err, errlen) != 0)
                    return -1;
            }
        }
        if (a->n == 0) {
            snprintf(err, errlen, "parameter %s has no values", a->name);
            return -1;
        }
    }
    return n;
}

static int by_position(const void *x, const void *y)
{
    const hs_bench_def *a = *(const hs_bench_def *const *)x, *b = *(const hs_bench_def *const *)y;
    int c = strcmp(a->file, b->file);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}

int hs_bench_cases(hs_bcase **out, char *err, size_t errlen)
{
    *out = NULL;
    if (g_overflow) {
        snprintf(err, errlen, "more than %d benchmarks", HS_BENCH_MAX_DEFS);
        return -1;
    }
    const hs_bench_def *defs[HS_BENCH_MAX_DEFS];
    memcpy(defs, g_defs, (size_t)g_ndefs * sizeof defs[0]);
    qsort(defs, (size_t)g_ndefs, sizeof defs[0], by_position);
    hs_bcase *cases = NULL;
    int n = 0;
    size_t cap = 0;
    axis *axes = calloc(HS_BENCH_MAX_ARGS, sizeof *axes); /* 400 KiB: not for the stack */
    if (!axes) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int d = 0; d < g_ndefs; d++) {
        const hs_bench_def *def = defs[d];
        int na = 0;
        if (def->params) {
            char e2[256];
            na = parse_params(def->params, axes, HS_BENCH_MAX_ARGS, e2, sizeof e2);
            if (na < 0) {
                snprintf(err, errlen, "%s (%s:%d): %s", def->name, def->file, def->line, e2);
                free(cases);
                free(axes);
                return -1;
            }
        }
        int idx[HS_BENCH_MAX_ARGS] = {0};
        for (;;) {
            if (n == HS_BENCH_MAX_CASES) {
                snprintf(err, errlen, "more than %d benchmark cases", HS_BENCH_MAX_CASES);
                free(cases);
                free(axes);
                return -1;
            }
            if (HS_VEC_RESERVE(cases, cap, (size_t)n + 1)) {
                snprintf(err, errlen, "out of memory");
                free(cases);
                free(axes);
                return -1;
            }
            hs_bcase *c = &cases[n++];
            memset(c, 0, sizeof *c);
            c->def = def;
            c->threads = def->threads > 1 ? def->threads : 1;
            size_t len = (size_t)snprintf(c->name, sizeof c->name, "%s", def->name);
            for (int i = 0; i < na; i++) {
                c->args[i] = axes[i].vals[idx[i]];
                if (len < sizeof c->name)
                    len += (size_t)snprintf(c->name + len, sizeof c->name - len, "/%s=%s", c->args[i].name,
                                            c->args[i].str);
            }
            c->nargs = na;
            int i = na - 1; /* odometer: the last parameter turns fastest */
            while (i >= 0 && ++idx[i] == axes[i].n)
                idx[i--] = 0;
            if (i < 0)
                break;
        }
    }
    free(axes);
    *out = cases;
    return n;
}

/* ---- one measurement ---- */

typedef struct {
    const hs_bcase *c;
    uint64_t n;
    const hs_bhooks *hooks;
    pthread_barrier_t barrier;
    _Atomic int finished;
    pthread_mutex_t lock;
    int failed;
    char err[512];
} run_t;

typedef struct {
    run_t *run;
    int index;
    int phase; /* 0 before the loop, 1 in it, 2 after */
    int paused;
    struct timespec t0, t1, pause_at, c0, c1, cpause_at;
    uint64_t paused_ns, cpaused_ns;
    hs_hwc hwc;
    double hw[HS_HWC_N];
    uint64_t allocs, bytes;
    hs_bench b;
} thr_t;

static uint64_t ts_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static void set_failed(run_t *r, const char *msg)
{
    pthread_mutex_lock(&r->lock);
    if (!r->failed) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", msg);
    }
    pthread_mutex_unlock(&r->lock);
}

int hs_bench_loop_edge_(hs_bench *b)
{
    thr_t *t = b->hs_priv;
    run_t *r = t->run;
    if (t->phase == 0) {
        t->phase = 1;
        hs_hwc_open(&t->hwc, NULL, 0);
        if (t->index == 0 && r->hooks && r->hooks->start)
            r->hooks->start(r->hooks->arg); /* the others wait at the barrier */
        if (r->c->threads > 1)
            pthread_barrier_wait(&r->barrier);
        pthread_mutex_lock(&r->lock);
        int failed = r->failed;
        pthread_mutex_unlock(&r->lock);
        if (failed) { /* failed in setup: no measurement */
            t->phase = 2;
            atomic_fetch_add(&r->finished, 1);
            return 0;
        }
        b->hs_left = r->n - 1;
        hs_alloc_begin();
        hs_hwc_enable(&t->hwc, 1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t->c0);
        clock_gettime(CLOCK_MONOTONIC, &t->t0);
        return 1;
    }
    if (t->phase == 1) {
        clock_gettime(CLOCK_MONOTONIC, &t->t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t->c1);
        hs_hwc_disable(&t->hwc);
        hs_alloc_end(&t->allocs, &t->bytes);
        hs_hwc_read(&t->hwc, t->hw);
        t->phase = 2;
        if (t->paused) { /* the loop ended paused: the pause lasted to the end */
            t->paused_ns += ts_ns(&t->t1) - ts_ns(&t->pause_at);
            t->cpaused_ns += ts_ns(&t->c1) - ts_ns(&t->cpause_at);
            t->paused = 0;
        }
        if (atomic_fetch_add(&r->finished, 1) + 1 == r->c->threads && r->hooks && r->hooks->stop)
            r->hooks->stop(r->hooks->arg);
        return 0;
    }
    return 0;
}

uint64_t hs_bench_iterations(const hs_bench *b)
{
    return ((const thr_t *)b->hs_priv)->run->n;
}

void hs_bench_pause(hs_bench *b)
{
    thr_t *t = b->hs_priv;
    if (t->phase != 1 || t->paused)
        return;
    clock_gettime(CLOCK_MONOTONIC, &t->pause_at);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t->cpause_at);
    hs_alloc_pause();
    hs_hwc_disable(&t->hwc);
    t->paused = 1;
}

void hs_bench_resume(hs_bench *b)
{
    thr_t *t = b->hs_priv;
    if (t->phase != 1 || !t->paused)
        return;
    hs_hwc_enable(&t->hwc, 0);
    hs_alloc_resume();
    struct timespec now, cnow;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cnow);
    clock_gettime(CLOCK_MONOTONIC, &now);
    t->paused_ns += ts_ns(&now) - ts_ns(&t->pause_at);
    t->cpaused_ns += ts_ns(&cnow) - ts_ns(&t->cpause_at);
    t->paused = 0;
}

static const hs_barg *find_arg(hs_bench *b, const char *name)
{
    const hs_bcase *c = ((thr_t *)b->hs_priv)->run->c;
    for (int i = 0; i < c->nargs; i++)
        if (strcmp(c->args[i].name, name) == 0)
            return &c->args[i];
    hs_bench_fail(b, "no parameter '%s'", name);
    return NULL;
}

long hs_bench_arg(hs_bench *b, const char *name)
{
    const hs_barg *a = find_arg(b, name);
    if (a && !a->is_num) {
        hs_bench_fail(b, "parameter %s=%s is not an integer", name, a->str);
        return 0;
    }
    return a ? a->num : 0;
}

const char *hs_bench_arg_str(hs_bench *b, const char *name)
{
    const hs_barg *a = find_arg(b, name);
    return a ? a->str : NULL;
}

int hs_bench_thread_index(const hs_bench *b)
{
    return ((const thr_t *)b->hs_priv)->index;
}

int hs_bench_threads(const hs_bench *b)
{
    return ((const thr_t *)b->hs_priv)->run->c->threads;
}

void hs_bench_fail(hs_bench *b, const char *fmt, ...)
{
    thr_t *t = b->hs_priv;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_failed(t->run, msg);
    b->hs_left = 0; /* the loop ends at its next turn */
}

static void *thread_main(void *arg)
{
    thr_t *t = arg;
    t->run->c->def->fn(&t->b);
    return NULL;
}

int hs_bench_measure(const hs_bcase *c, uint64_t n, const hs_bhooks *hooks, hs_bmeas *m, char *err,
                     size_t errlen)
{
    int nt = c->threads;
    run_t r = {.c = c, .n = n ? n : 1, .hooks = hooks};
    pthread_mutex_init(&r.lock, NULL);
    thr_t *ts = calloc((size_t)nt, sizeof *ts);
    pthread_t *tids = calloc((size_t)nt, sizeof *tids);
    if (!ts || !tids) {
        free(ts);
        free(tids);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (nt > 1 && pthread_barrier_init(&r.barrier, NULL, (unsigned)nt) != 0) {
        free(ts);
        free(tids);
        snprintf(err, errlen, "pthread_barrier_init failed");
        return -1;
    }
    for (int i = 0; i < nt; i++) {
        ts[i].run = &r;
        ts[i].index = i;
        for (int k = 0; k < HS_HWC_N; k++)
            ts[i].hwc.fd[k] = -1;
        ts[i].b.hs_priv = &ts[i];
    }
    int started = 1, rc = 0;
    for (int i = 1; i < nt; i++) {
        int e = pthread_create(&tids[i], NULL, thread_main, &ts[i]);
        if (e != 0) {
            /* The barrier would wait forever for the missing threads. */
            fprintf(stderr, "hotspur-bench: pthread_create: %s\n", strerror(e));
            abort();
        }
        started++;
    }
    c->def->fn(&ts[0].b);
    for (int i = 1; i < started; i++)
        pthread_join(tids[i], NULL);
    memset(m, 0, sizeof *m);
    m->n = r.n;
    for (int k = 0; k < HS_HWC_N; k++)
        m->hw[k] = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    double paused = 0;
    for (int i = 0; i < nt; i++) {
        thr_t *t = &ts[i];
        if (t->phase != 2 && !r.failed)
            set_failed(&r, t->phase == 0 ? "the benchmark never ran its hs_bench_loop()"
                                         : "the benchmark returned inside its loop");
        if (ts_ns(&t->t0) < t0)
            t0 = ts_ns(&t->t0);
        if (ts_ns(&t->t1) > t1)
            t1 = ts_ns(&t->t1);
        paused += (double)t->paused_ns / nt;
        if (t->phase == 2 && ts_ns(&t->c1) >= ts_ns(&t->c0) + t->cpaused_ns)
            m->cpu_ns += (double)(ts_ns(&t->c1) - ts_ns(&t->c0) - t->cpaused_ns);
        m->allocs += t->allocs;
        m->bytes += t->bytes;
        for (int k = 0; k < HS_HWC_N; k++)
            m->hw[k] = (m->hw[k] < 0 || t->hw[k] < 0) ? -1 : m->hw[k] + t->hw[k];
        hs_hwc_close(&t->hwc);
    }
    m->ns = t1 > t0 ? (double)(t1 - t0) - paused : 0;
    if (m->ns < 0)
        m->ns = 0;
    if (r.failed) {
        snprintf(err, errlen, "%s", r.err);
        rc = -1;
    }
    if (nt > 1)
        pthread_barrier_destroy(&r.barrier);
    pthread_mutex_destroy(&r.lock);
    free(ts);
    free(tids);
    return rc;
}
