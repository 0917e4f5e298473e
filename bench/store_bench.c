/* store_bench.c — the store's speed and size on realistic CPU profiles
 * (bench/store_gen.h), against any backend:
 *
 *   store_bench URL [--sizes 1000,10000,100000] [--runs 5] [--batch 32]
 *               [--paths 2000] [--used 400] [--fresh 4]
 *
 * Fills the store (a fresh service name per run) up to each size in turn,
 * timing only hs_store_put, and at each size times the merge of every
 * stored profile (median of --runs) and reads the bytes stored per
 * profile. Profiles are generated and decomposed beforehand: a pool of
 * --pool distinct ones (default 512), which the fill cycles through with
 * a new id, instance label, version and start time each time (so the 100
 * 000 case takes minutes, not an hour of generation). Also times the decomposition alone and puts of single profiles
 * (one transaction each). Prints a "key value" line per figure, for
 * bench/store.sh to shape. */
#include <inttypes.h>
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

/* Profile number i: pool entry i % n_pool, instance i % 100, one every
 * minute per instance. */
static void make(const pooled *pool, size_t n_pool, item *it, size_t i, int64_t t0)
{
    it->sp = pool[i % n_pool].sp;
    snprintf(it->instance, sizeof it->instance, "host-%zu", i % 100);
    it->labels[0] = (hs_store_label){"instance", it->instance};
    it->labels[1] = (hs_store_label){"zone", i % 2 ? "eu-west1-b" : "us-east1-c"};
    it->sp.service = svc;
    it->sp.type = "cpu";
    it->sp.version = (i / 100) % 3 == 0 ? "1.4.2" : "1.5.0";
    it->sp.labels = it->labels;
    it->sp.n_labels = 2;
    it->sp.start_ns = t0 + (int64_t)(i / 100) * 60 * 1000000000LL;
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: store_bench URL [--sizes N,N..] [--runs R] [--batch B] [--paths P] [--used U] [--fresh F]\n");
        return 2;
    }
    const char *url = argv[1];
    size_t sizes[8] = {1000, 10000, 100000}, n_sizes = 3, runs = 5, batch = 32, paths = 2000, used = 400, fresh = 4,
           n_pool = 512;
    for (int i = 2; i + 1 < argc; i += 2) {
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
        else {
            fprintf(stderr, "store_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (runs < 1 || batch < 1 || batch > 1024 || n_sizes == 0 || n_pool < 1) {
        fprintf(stderr, "store_bench: bad --runs, --batch or --sizes\n");
        return 2;
    }
    char err[512] = "", name[64];
    snprintf(name, sizeof name, "bench-%d-%ld", (int)getpid(), (long)time(NULL));
    svc = name;
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s) {
        fprintf(stderr, "store_bench: %s\n", err);
        return 1;
    }
    gen_model *m = gen_model_new(7, paths);
    if (!m) {
        fprintf(stderr, "store_bench: out of memory\n");
        return 1;
    }
    int64_t t0 = (int64_t)time(NULL) * 1000000000LL - 400LL * 86400 * 1000000000LL; /* spread over the past */
    enum { CHUNK = 1024 };
    item *items = calloc(CHUNK, sizeof *items);
    const hs_store_profile *ps[1024];
    if (!items)
        return 1;
    hs_store_stats st0;
    if (hs_store_stats_get(s, &st0, err, sizeof err) < 0) {
        fprintf(stderr, "store_bench: stats: %s\n", err);
        return 1;
    }

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
    fflush(stdout);

    size_t stored = 0, next = 0;
    double put_time = 0, put_cpu = 0;
    int64_t prev_bytes = 0;
    for (size_t si = 0; si < n_sizes; si++) {
        while (stored < sizes[si]) {
            size_t n = sizes[si] - stored < CHUNK ? sizes[si] - stored : CHUNK;
            for (size_t k = 0; k < n; k++)
                make(pool, n_pool, &items[k], next + k, t0);
            for (size_t k = 0; k < n; k += batch) {
                size_t b = n - k < batch ? n - k : batch, dups;
                for (size_t j = 0; j < b; j++)
                    ps[j] = &items[k + j].sp;
                double a = now_s(), ac = cpu_s();
                int rc = hs_store_put(s, ps, b, &dups, err, sizeof err);
                put_time += now_s() - a;
                put_cpu += cpu_s() - ac;
                if (rc != 0 || dups) {
                    fprintf(stderr, "store_bench: put: %s (dups %zu)\n", err, dups);
                    return 1;
                }
            }
            stored += n;
            next += n;
        }
        printf("ingest_per_s_at_%zu %.0f\n", stored, (double)stored / put_time);
        printf("ingest_per_cpu_s_at_%zu %.0f\n", stored, (double)stored / put_cpu);
        /* merge everything stored */
        hs_store_query q = {.service = svc, .type = "cpu"};
        double *t = calloc(runs, sizeof *t), *tc = calloc(runs, sizeof *tc);
        size_t rows = 0;
        int64_t np = 0;
        for (size_t r = 0; r < runs; r++) {
            hs_store_merged mg;
            double a = now_s(), ac = cpu_s();
            if (hs_store_merge(s, &q, &mg, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: merge: %s\n", err);
                return 1;
            }
            t[r] = now_s() - a;
            tc[r] = cpu_s() - ac;
            rows = mg.n_rows;
            np = mg.n_profiles;
            hs_store_merged_free(&mg);
        }
        qsort(t, runs, sizeof *t, dbl_cmp);
        qsort(tc, runs, sizeof *tc, dbl_cmp);
        if (np != (int64_t)stored) {
            fprintf(stderr, "store_bench: merge saw %" PRId64 " profiles, %zu stored\n", np, stored);
            return 1;
        }
        printf("merge_ms_at_%zu %.1f\n", stored, 1000 * t[runs / 2]);
        printf("merge_cpu_ms_at_%zu %.1f\n", stored, 1000 * tc[runs / 2]);
        printf("merge_min_ms_at_%zu %.1f\n", stored, 1000 * t[0]);
        printf("merge_max_ms_at_%zu %.1f\n", stored, 1000 * t[runs - 1]);
        printf("merge_rows_at_%zu %zu\n", stored, rows);
        /* a selective merge: one instance's profiles, one label */
        hs_store_label lb = {"instance", "host-7"};
        q.labels = &lb;
        q.n_labels = 1;
        for (size_t r = 0; r < runs; r++) {
            hs_store_merged mg;
            double a = now_s();
            if (hs_store_merge(s, &q, &mg, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: merge: %s\n", err);
                return 1;
            }
            t[r] = now_s() - a;
            hs_store_merged_free(&mg);
        }
        qsort(t, runs, sizeof *t, dbl_cmp);
        printf("merge_one_instance_ms_at_%zu %.1f\n", stored, 1000 * t[runs / 2]);
        /* the other queries behind a page: a series, the label values */
        q.n_labels = 0;
        for (size_t r = 0; r < runs; r++) {
            hs_store_point *pts;
            size_t npts;
            double a = now_s();
            if (hs_store_series(s, &q, 3600LL * 1000000000LL, &pts, &npts, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: series: %s\n", err);
                return 1;
            }
            t[r] = now_s() - a;
            free(pts);
        }
        qsort(t, runs, sizeof *t, dbl_cmp);
        printf("series_ms_at_%zu %.1f\n", stored, 1000 * t[runs / 2]);
        for (size_t r = 0; r < runs; r++) {
            char **vals;
            size_t nvals;
            double a = now_s();
            if (hs_store_label_values(s, &q, "instance", &vals, &nvals, err, sizeof err) != 0) {
                fprintf(stderr, "store_bench: label values: %s\n", err);
                return 1;
            }
            t[r] = now_s() - a;
            hs_store_strings_free(vals, nvals);
        }
        qsort(t, runs, sizeof *t, dbl_cmp);
        printf("label_values_ms_at_%zu %.1f\n", stored, 1000 * t[runs / 2]);
        free(t);
        free(tc);
        hs_store_stats st;
        if (hs_store_stats_get(s, &st, err, sizeof err) < 0) {
            fprintf(stderr, "store_bench: stats: %s\n", err);
            return 1;
        }
        printf("bytes_per_profile_at_%zu %.0f\n", stored, (double)(st.bytes - st0.bytes) / (double)stored);
        if (si > 0)
            printf("bytes_per_added_profile_%zu_to_%zu %.0f\n", sizes[si - 1], stored,
                   (double)(st.bytes - prev_bytes) / (double)(stored - sizes[si - 1]));
        prev_bytes = st.bytes;
        printf("stacks_at_%zu %" PRId64 "\n", stored, st.stacks - st0.stacks);
        fflush(stdout);
    }

    /* single-profile puts: one transaction (one fsync) each */
    size_t n1 = 200;
    for (size_t k = 0; k < n1; k++)
        make(pool, n_pool, &items[k], next + k, t0);
    double a = now_s();
    for (size_t k = 0; k < n1; k++) {
        size_t dups;
        ps[0] = &items[k].sp;
        if (hs_store_put(s, ps, 1, &dups, err, sizeof err) != 0) {
            fprintf(stderr, "store_bench: put: %s\n", err);
            return 1;
        }
    }
    printf("ingest_per_s_batch1 %.0f\n", (double)n1 / (now_s() - a));
    for (size_t k = 0; k < n_pool; k++)
        hs_stack_parts_free(pool[k].parts);
    free(pool);
    free(items);
    gen_model_free(m);
    hs_store_close(s);
    return 0;
}
