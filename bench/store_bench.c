/* store_bench.c — the store's speed and size on realistic CPU profiles
 * (bench/store_gen.h), against any backend:
 *
 *   store_bench URL [URL...] [--sizes 1000,10000,100000] [--runs 5] [--batch 32]
 *               [--paths 2000] [--used 400] [--fresh 4] [--parallel-fill 0|1]
 *               [--service NAME --t0 NS --queries-only 1]
 *
 * Fills the stores (a fresh service name per run) with the same profiles
 * up to each size in turn, timing only hs_store_put (one store after the
 * other, or with --parallel-fill 1 each store from a thread of its own at
 * once: the fill then takes about as long as the slowest store's, and
 * each store's ingest rate is measured while the others fill too), and at each size
 * runs each store's retention once with nothing to drop (the hourly upkeep
 * of `hotspur serve`: ClickHouse compacts the finished days), then
 * times merges (median of --runs, the stores' runs interleaved: store 1,
 * store 2, store 1, ... so a change in the machine's load hits both): of
 * every stored profile, of the last 24 hours (a range cut inside hours),
 * of one version (20%), of one version in the last 24 hours, of one
 * instance (0.1%), of one zone (a label half the profiles have); a series and a label
 * listing; and reads the bytes stored per profile. Profiles are generated
 * and decomposed beforehand: a pool of --pool distinct ones (default 512),
 * which the fill cycles through with a new id, instance label (1000
 * instances), version (5, rolling) and start time (100 profiles a minute)
 * each time (so the 1 000 000 case takes minutes, not hours of
 * generation). Also times the decomposition alone and puts of single
 * profiles (one transaction each). Prints a "key value [value...]" line
 * per figure, one value per store (shared facts: one), for bench/store.sh
 * and bench/store_ch.sh to shape. It prints the service name and t0 it
 * filled under ("service NAME", "t0 NS"); --queries-only 1 with those
 * and stores a run filled (its last size first) times the queries of
 * each size again without storing anything (bench/store_ch.sh's
 * BENCH_STORE_KEEP). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_gen.h"
#include "store/stack.h"
#include "store/store.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the process: on a machine shared with other jobs, wall time
 * includes waiting for a core; both are reported. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    hs_store_profile sp;
    hs_stack_parts *parts;
} pooled;

typedef struct {
    hs_store_profile sp;
    hs_store_label labels[2];
    char instance[32];
} item;

static const char *svc;

#define BENCH_INSTANCES 1000
#define BENCH_MINUTE (60 * 1000000000LL)
static const char *const versions[5] = {"1.4.2", "1.5.0", "1.5.1", "1.6.0", "1.6.1"};

/* Profile number i: pool entry i % n_pool, instance i % 1000, 100 profiles
 * a minute (each instance one every 10 minutes), version (i / 100) % 5. */
static void make(const pooled *pool, size_t n_pool, item *it, size_t i, int64_t t0)
{
    it->sp = pool[i % n_pool].sp;
    snprintf(it->instance, sizeof it->instance, "host-%zu", i % BENCH_INSTANCES);
    it->labels[0] = (hs_store_label){"instance", it->instance};
    it->labels[1] = (hs_store_label){"zone", i % 2 ? "eu-west1-b" : "us-east1-c"};
    it->sp.service = svc;
    it->sp.type = "cpu";
    it->sp.version = versions[(i / 100) % 5];
    it->sp.labels = it->labels;
    it->sp.n_labels = 2;
    it->sp.start_ns = t0 + (int64_t)(i / 100) * BENCH_MINUTE;
    it->sp.duration_ns = 10 * 1000000000LL;
    hs_stack_profile_id(&i, sizeof i, &it->sp, it->sp.id);
}

static size_t parse_sizes(const char *s, size_t *out, size_t max)
{
    size_t n = 0;
    while (*s && n < max) {
        char *end;
        out[n++] = strtoull(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s)
            break;
    }
    return n;
}

#define MAX_STORES 4

static hs_store *stores[MAX_STORES];
static size_t n_stores;

/* One store's puts of a chunk of profiles, in batches (a thread's work
 * with --parallel-fill): the wall and the thread's CPU time they took. */
typedef struct {
    hs_store *store;
    const char *url;
    item *items;
    size_t n, batch;
    const hs_store_profile **ps; /* room for batch */
    double time, cpu;
    int rc;
} filler;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *fill(void *arg)
{
    filler *f = arg;
    char err[512];
    for (size_t k = 0; k < f->n && f->rc == 0; k += f->batch) {
        size_t b = f->n - k < f->batch ? f->n - k : f->batch, dups;
        for (size_t j = 0; j < b; j++)
            f->ps[j] = &f->items[k + j].sp;
        double a = now_s(), ac = thread_cpu_s();
        int rc = hs_store_put(f->store, f->ps, b, &dups, err, sizeof err);
        f->time += now_s() - a;
        f->cpu += thread_cpu_s() - ac;
        if (rc != 0 || dups) {
            fprintf(stderr, "store_bench: put into %s: %s (dups %zu)\n", f->url, err, dups);
            f->rc = -1;
        }
    }
    return NULL;
}

/* One timed query (0, or -1 with a message printed). */
typedef int (*bench_fn)(hs_store *s, const hs_store_query *q, int64_t *n_out);

static size_t merged_rows; /* of the last merge */

static int q_merge(hs_store *s, const hs_store_query *q, int64_t *n_out)
{
    hs_store_merged mg;
    char err[512];
    if (hs_store_merge(s, q, &mg, err, sizeof err) != 0) {
        fprintf(stderr, "store_bench: merge: %s\n", err);
        return -1;
    }
    *n_out = mg.n_profiles;
    merged_rows = mg.n_rows;
    hs_store_merged_free(&mg);
    return 0;
}

static int q_series(hs_store *s, const hs_store_query *q, int64_t *n_out)
{
    hs_store_point *pts;
    size_t npts;
    char err[512];
    if (hs_store_series(s, q, 3600LL * 1000000000LL, &pts, &npts, err, sizeof err) != 0) {
        fprintf(stderr, "store_bench: series: %s\n", err);
        return -1;
    }
    *n_out = 0;
    for (size_t i = 0; i < npts; i++)
        *n_out += pts[i].n_profiles;
    free(pts);
    return 0;
}

static int q_labels(hs_store *s, const hs_store_query *q, int64_t *n_out)
{
    char **vals, err[512];
    size_t nvals;
    if (hs_store_label_values(s, q, "instance", &vals, &nvals, err, sizeof err) != 0) {
        fprintf(stderr, "store_bench: label values: %s\n", err);
        return -1;
    }
    *n_out = (int64_t)nvals;
    hs_store_strings_free(vals, nvals);
    return 0;
}

/* Time fn on every store, runs times, the stores interleaved; print
 * "NAME_ms_at_N median..." (with spread != 0 also the spread, the median
 * CPU time of this process and the merged rows). Every store must see the
 * same *n_out, want when want >= 0. */
static int timed(const char *name, bench_fn fn, const hs_store_query *q, size_t runs, size_t stored, int64_t want,
                 int spread)
{
    double t[MAX_STORES][64], tc[MAX_STORES][64];
    int64_t seen[MAX_STORES] = {0};
    size_t rows[MAX_STORES] = {0};
    for (size_t r = 0; r < runs; r++)
        for (size_t k = 0; k < n_stores; k++) {
            double a = now_s(), ac = cpu_s();
            if (fn(stores[k], q, &seen[k]) != 0)
                return -1;
            t[k][r] = now_s() - a;
            tc[k][r] = cpu_s() - ac;
            rows[k] = merged_rows;
        }
    for (size_t k = 0; k < n_stores; k++) {
        if (seen[k] != seen[0] || (want >= 0 && seen[k] != want)) {
            fprintf(stderr, "store_bench: %s: store %zu saw %" PRId64 ", store 1 %" PRId64 ", want %" PRId64 "\n",
                    name, k + 1, seen[k], seen[0], want);
            return -1;
        }
        qsort(t[k], runs, sizeof **t, dbl_cmp);
        qsort(tc[k], runs, sizeof **tc, dbl_cmp);
    }
    const char *what[3] = {"", "_min", "_max"};
    for (int w = 0; w < (spread ? 3 : 1); w++) {
        printf("%s%s_ms_at_%zu", name, what[w], stored);
        for (size_t k = 0; k < n_stores; k++)
            printf(" %.1f", 1000 * t[k][w == 0 ? runs / 2 : w == 1 ? 0 : runs - 1]);
        printf("\n");
    }
    if (spread) {
        printf("%s_cpu_ms_at_%zu", name, stored);
        for (size_t k = 0; k < n_stores; k++)
            printf(" %.1f", 1000 * tc[k][runs / 2]);
        printf("\n%s_rows_at_%zu", name, stored);
        for (size_t k = 0; k < n_stores; k++)
            printf(" %zu", rows[k]);
        printf("\n");
    }
    printf("%s_n_at_%zu %" PRId64 "\n", name, stored, seen[0]);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: store_bench URL [URL...] [--sizes N,N..] [--runs R] [--batch B] [--paths P] [--used U] "
                        "[--fresh F] [--pool N] [--parallel-fill 0|1]\n");
        return 2;
    }
    size_t sizes[8] = {1000, 10000, 100000}, n_sizes = 3, runs = 5, batch = 32, paths = 2000, used = 400, fresh = 4,
           n_pool = 512, parallel = 0, queries_only = 0;
    const char *service = NULL;
    int64_t t0_arg = 0;
    int argi = 1;
    const char *urls[MAX_STORES];
    while (argi < argc && strncmp(argv[argi], "--", 2) != 0) {
        if (n_stores == MAX_STORES) {
            fprintf(stderr, "store_bench: at most %d stores\n", MAX_STORES);
            return 2;
        }
        urls[n_stores++] = argv[argi++];
    }
    for (int i = argi; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes"))
            n_sizes = parse_sizes(argv[i + 1], sizes, 8);
        else if (!strcmp(argv[i], "--runs"))
            runs = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--batch"))
            batch = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--paths"))
            paths = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--used"))
            used = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--fresh"))
            fresh = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--pool"))
            n_pool = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--parallel-fill"))
            parallel = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--service"))
            service = argv[i + 1];
        else if (!strcmp(argv[i], "--t0"))
            t0_arg = strtoll(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--queries-only"))
            queries_only = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "store_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (n_stores == 0 || runs < 1 || runs > 64 || batch < 1 || batch > 4096 || n_sizes == 0 || n_pool < 1 ||
        parallel > 1 || queries_only > 1 || (queries_only && (!service || !t0_arg))) {
        fprintf(stderr, "store_bench: bad URLs, --runs (1-64), --batch (1-4096), --parallel-fill (0 or 1), --sizes, or --queries-only without --service and --t0\n");
        return 2;
    }
    char err[512] = "", name[64];
    snprintf(name, sizeof name, "bench-%d-%ld", (int)getpid(), (long)time(NULL));
    svc = service ? service : name;
    hs_store_stats st0[MAX_STORES];
    for (size_t k = 0; k < n_stores; k++) {
        stores[k] = hs_store_open(urls[k], err, sizeof err);
        if (!stores[k]) {
            fprintf(stderr, "store_bench: %s: %s\n", urls[k], err);
            return 1;
        }
        if (hs_store_stats_get(stores[k], &st0[k], err, sizeof err) < 0) {
            fprintf(stderr, "store_bench: stats: %s\n", err);
            return 1;
        }
    }
    gen_model *m = gen_model_new(7, paths);
    if (!m) {
        fprintf(stderr, "store_bench: out of memory\n");
        return 1;
    }
    int64_t t0 = (int64_t)time(NULL) * 1000000000LL - 400LL * 86400 * 1000000000LL; /* spread over the past */
    t0 -= t0 % BENCH_MINUTE;
    if (t0_arg)
        t0 = t0_arg;
    printf("service %s\nt0 %" PRId64 "\n", svc, t0);
    size_t chunk = batch > 1024 ? batch : 1024;
    item *items = calloc(chunk, sizeof *items);
    const hs_store_profile **ps = calloc(batch, sizeof *ps), **fps[MAX_STORES];
    if (!items || !ps)
        return 1;
    for (size_t x = 0; x < n_stores; x++)
        if (!(fps[x] = calloc(batch, sizeof **fps)))
            return 1;

    /* the pool; the decomposition alone is timed, and what a profile looks like */
    pooled *pool = calloc(n_pool, sizeof *pool);
    if (!pool)
        return 1;
    double dt = 0, dtc = 0, samples = 0, stacks = 0, frames = 0, rec_bytes = 0;
    for (size_t i = 0; i < n_pool; i++) {
        hs_profile *p = gen_profile(m, 1000003 * (uint64_t)i + 7, (int)(i % 100), used, fresh);
        if (!p) {
            fprintf(stderr, "store_bench: out of memory\n");
            return 1;
        }
        double a = now_s(), ac = cpu_s();
        if (hs_stack_decompose(p, NULL, &pool[i].sp, &pool[i].parts, err, sizeof err) < 0) {
            fprintf(stderr, "store_bench: decompose: %s\n", err);
            return 1;
        }
        dt += now_s() - a;
        dtc += cpu_s() - ac;
        samples += (double)p->n_samples;
        stacks += (double)pool[i].sp.n_samples;
        for (size_t k = 0; i < 100 && k < pool[i].sp.n_stacks; k++) {
            hs_stack_decoded d;
            rec_bytes += (double)pool[i].sp.stacks[k].len;
            if (hs_stack_decode(pool[i].sp.stacks[k].data, pool[i].sp.stacks[k].len, &d, err, sizeof err) == 0)
                frames += (double)d.n_frames;
            hs_stack_decoded_free(&d);
        }
        hs_profile_free(p);
    }
    double st100 = 0;
    for (size_t i = 0; i < n_pool && i < 100; i++)
        st100 += (double)pool[i].sp.n_stacks;
    printf("pool_profiles %zu\n", n_pool);
    printf("profile_pprof_samples %.0f\n", samples / (double)n_pool);
    printf("profile_distinct_stacks %.0f\n", stacks / (double)n_pool);
    printf("profile_mean_depth %.1f\n", frames / st100);
    printf("stack_record_bytes %.0f\n", rec_bytes / st100);
    printf("decompose_per_s %.0f\n", (double)n_pool / dt);
    printf("decompose_per_cpu_s %.0f\n", (double)n_pool / dtc);
    printf("batch %zu\n", batch);
    fflush(stdout);

    size_t stored = 0, next = 0;
    double put_time[MAX_STORES] = {0}, put_cpu[MAX_STORES] = {0};
    int64_t prev_bytes[MAX_STORES] = {0};
    for (size_t si = 0; si < n_sizes; si++) {
        if (queries_only && si + 1 < n_sizes)
            continue; /* (the stores hold the last size: only its queries count right) */
        if (queries_only)
            stored = next = sizes[si];
        while (stored < sizes[si]) {
            size_t n = sizes[si] - stored < chunk ? sizes[si] - stored : chunk;
            for (size_t k = 0; k < n; k++)
                make(pool, n_pool, &items[k], next + k, t0);
            if (parallel) {
                filler f[MAX_STORES];
                pthread_t th[MAX_STORES];
                int failed = 0;
                for (size_t x = 0; x < n_stores; x++) {
                    f[x] = (filler){.store = stores[x], .url = urls[x], .items = items, .n = n, .batch = batch,
                                    .ps = fps[x]};
                    if (pthread_create(&th[x], NULL, fill, &f[x]) != 0) {
                        fprintf(stderr, "store_bench: pthread_create failed\n");
                        return 1;
                    }
                }
                for (size_t x = 0; x < n_stores; x++) {
                    pthread_join(th[x], NULL);
                    put_time[x] += f[x].time;
                    put_cpu[x] += f[x].cpu;
                    failed |= f[x].rc;
                }
                if (failed)
                    return 1;
                stored += n;
                next += n;
                continue;
            }
            for (size_t k = 0; k < n; k += batch) {
                size_t b = n - k < batch ? n - k : batch, dups;
                for (size_t j = 0; j < b; j++)
                    ps[j] = &items[k + j].sp;
                for (size_t x = 0; x < n_stores; x++) {
                    double a = now_s(), ac = cpu_s();
                    int rc = hs_store_put(stores[x], ps, b, &dups, err, sizeof err);
                    put_time[x] += now_s() - a;
                    put_cpu[x] += cpu_s() - ac;
                    if (rc != 0 || dups) {
                        fprintf(stderr, "store_bench: put into %s: %s (dups %zu)\n", urls[x], err, dups);
                        return 1;
                    }
                }
            }
            stored += n;
            next += n;
        }
        if (!queries_only) {
            printf("ingest_per_s_at_%zu", stored);
            for (size_t x = 0; x < n_stores; x++)
                printf(" %.0f", (double)stored / put_time[x]);
            printf("\ningest_per_cpu_s_at_%zu", stored);
            for (size_t x = 0; x < n_stores; x++)
                printf(" %.0f", (double)stored / put_cpu[x]);
            printf("\n");
            fflush(stdout);
        }
        /* the hourly retention `hotspur serve` runs, with nothing old
         * enough to drop, once before the queries: each store's upkeep
         * (ClickHouse compacts the finished days; every generated day is
         * before today) */
        printf("upkeep_ms_at_%zu", stored);
        for (size_t x = 0; x < n_stores; x++) {
            char err[512] = "";
            double a = now_s();
            if (hs_store_retain(stores[x], 0, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: retention of %s: %s\n", urls[x], err);
                return 1;
            }
            printf(" %.1f", 1e3 * (now_s() - a));
        }
        printf("\n");
        fflush(stdout);
        /* every stored profile; the last 24 hours, from 10 minutes past an
         * hour (whole hours and a partial one at the start); one version;
         * one instance */
        int64_t last = t0 + (int64_t)((stored - 1) / 100) * BENCH_MINUTE;
        hs_store_query q = {.service = svc, .type = "cpu"};
        /* (a kept fill also holds the single-profile puts: no count wanted) */
        int64_t want = queries_only ? -1 : (int64_t)stored;
        if (timed("merge", q_merge, &q, runs, stored, want, 1))
            return 1;
        hs_store_query day = q;
        day.from_ns = last - 24 * 60 * BENCH_MINUTE;
        day.from_ns += 10 * BENCH_MINUTE - day.from_ns % (60 * BENCH_MINUTE);
        if (timed("merge_day", q_merge, &day, runs, stored, -1, 0))
            return 1;
        hs_store_query ver = q;
        const char *v0[1] = {versions[0]};
        ver.versions = v0;
        ver.n_versions = 1;
        if (timed("merge_one_version", q_merge, &ver, runs, stored, -1, 0))
            return 1;
        hs_store_query ver_day = ver;
        ver_day.from_ns = day.from_ns;
        if (timed("merge_version_day", q_merge, &ver_day, runs, stored, -1, 0))
            return 1;
        static const hs_store_label lb[2] = {{"instance", "host-7"}, {"zone", "eu-west1-b"}};
        static const char *const lb_name[2] = {"merge_one_instance", "merge_one_zone"};
        for (int k = 0; k < 2; k++) {
            hs_store_query one = q;
            one.labels = &lb[k];
            one.n_labels = 1;
            if (timed(lb_name[k], q_merge, &one, runs, stored, -1, 0))
                return 1;
        }
        if (timed("series", q_series, &q, runs, stored, want, 0))
            return 1;
        if (timed("label_values", q_labels, &q, runs, stored, -1, 0))
            return 1;
        int64_t bytes[MAX_STORES], stk[MAX_STORES];
        for (size_t x = 0; x < n_stores; x++) {
            hs_store_stats st;
            if (hs_store_stats_get(stores[x], &st, err, sizeof err) < 0) {
                fprintf(stderr, "store_bench: stats: %s\n", err);
                return 1;
            }
            bytes[x] = st.bytes - (queries_only ? 0 : st0[x].bytes);
            stk[x] = st.stacks - (queries_only ? 0 : st0[x].stacks);
        }
        printf("bytes_per_profile_at_%zu", stored);
        for (size_t x = 0; x < n_stores; x++)
            printf(" %.0f", (double)bytes[x] / (double)stored);
        if (si > 0 && !queries_only) {
            printf("\nbytes_per_added_profile_%zu_to_%zu", sizes[si - 1], stored);
            for (size_t x = 0; x < n_stores; x++)
                printf(" %.0f", (double)(bytes[x] - prev_bytes[x]) / (double)(stored - sizes[si - 1]));
        }
        printf("\nstacks_at_%zu", stored);
        for (size_t x = 0; x < n_stores; x++) {
            printf(" %" PRId64, stk[x]);
            prev_bytes[x] = bytes[x];
        }
        printf("\n");
        fflush(stdout);
    }

    /* single-profile puts: one transaction (one fsync) each (not with
     * --queries-only: they would add profiles to a kept fill) */
    size_t n1 = 200;
    for (size_t k = 0; !queries_only && k < n1; k++)
        make(pool, n_pool, &items[k], next + k, t0);
    if (!queries_only)
        printf("ingest_per_s_batch1");
    for (size_t x = 0; !queries_only && x < n_stores; x++) {
        double a = now_s();
        for (size_t k = 0; k < n1; k++) {
            size_t dups;
            ps[0] = &items[k].sp;
            if (hs_store_put(stores[x], ps, 1, &dups, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: put: %s\n", err);
                return 1;
            }
        }
        printf(" %.0f", (double)n1 / (now_s() - a));
    }
    if (!queries_only)
        printf("\n");
    for (size_t k = 0; k < n_pool; k++)
        hs_stack_parts_free(pool[k].parts);
    free(pool);
    free(items);
    free(ps);
    for (size_t x = 0; x < n_stores; x++)
        free(fps[x]);
    gen_model_free(m);
    for (size_t x = 0; x < n_stores; x++)
        hs_store_close(stores[x]);
    return 0;
}
