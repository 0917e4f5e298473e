/* server_query.c — the query API's latency on realistic CPU profiles
 * (bench/store_gen.h), without HTTP (hs_query_handle called directly):
 *
 *   server_query URL [--profiles 1000] [--runs 7] [--pool 256]
 *
 * Fills the store (a fresh service per run) with --profiles profiles
 * spread over the last 50 minutes (100 instances, two versions), then
 * times, median of --runs each, the steps of one query — the store's merge
 * (hs_store_merge), fetching the stack records and rebuilding the merged
 * profile (hs_stack_cache_build without a cache; the fetch alone, hs_store_get_stacks,
 * too) — and whole answers: flamegraph,
 * functions, profile (gzipped pprof), series, a focused flame graph, and a
 * diff of the two versions, each without and with the stack record cache
 * (query_cache.c, warmed by one query first), run alternately. Prints one "key value" line per figure (ms),
 * for bench/server_query.sh to shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/query_cache.h"
#include "server/server.h"
#include "store/stack.h"
#include "store/store.h"
#include "store_gen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, size_t n)
{
    qsort(t, n, sizeof *t, dbl_cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

typedef struct {
    hs_store_profile sp;
    hs_stack_parts *parts;
} pooled;

static char svc[64];

/* One timed query: GET path?query ("&"-separated, no decoding needed). */
static double run_query(hs_query_ctx *qc, const char *path, const char *query, size_t *bytes)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "service=%s&type=cpu&%s", svc, query);
    hs_param params[32];
    size_t n = 0;
    for (char *q = buf, *next; *q && n < 32; q = next) {
        char *amp = strchr(q, '&');
        next = amp ? amp + 1 : q + strlen(q);
        if (amp)
            *amp = 0;
        char *eq = strchr(q, '=');
        if (eq)
            *eq = 0;
        params[n++] = (hs_param){q, eq ? eq + 1 : ""};
    }
    hs_http_request rq = {.method = "GET", .path = path, .params = params, .n_params = n};
    hs_http_response rs;
    memset(&rs, 0, sizeof rs);
    double a = now_s();
    int st = hs_query_handle(qc, &rq, &rs);
    double dt = now_s() - a;
    if (st != 200) {
        fprintf(stderr, "server_query: %s?%s: %d %.*s\n", path, query, st, (int)rs.len, rs.body ? rs.body : "");
        exit(1);
    }
    *bytes = rs.len;
    free(rs.body);
    return dt;
}

static void count_record(void *arg, uint64_t hash, const void *data, size_t len)
{
    (void)hash;
    (void)data;
    (void)len;
    ++*(size_t *)arg;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: server_query URL [--profiles N] [--runs R] [--pool P]\n");
        return 2;
    }
    size_t n_prof = 1000, runs = 7, n_pool = 256;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--profiles"))
            n_prof = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--runs"))
            runs = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--pool"))
            n_pool = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "server_query: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (runs < 1 || n_prof < 1 || n_pool < 1) {
        fprintf(stderr, "server_query: bad --runs, --profiles or --pool\n");
        return 2;
    }
    char err[512] = "";
    snprintf(svc, sizeof svc, "qbench-%d-%ld", (int)getpid(), (long)time(NULL));
    hs_store *s = hs_store_open(argv[1], err, sizeof err);
    if (!s) {
        fprintf(stderr, "server_query: %s\n", err);
        return 1;
    }
    gen_model *m = gen_model_new(7, 2000);
    pooled *pool = calloc(n_pool, sizeof *pool);
    if (!m || !pool)
        return 1;
    for (size_t i = 0; i < n_pool; i++) {
        hs_profile *p = gen_profile(m, 1000003 * (uint64_t)i + 7, (int)(i % 100), 400, 4);
        if (!p || hs_stack_decompose(p, NULL, &pool[i].sp, &pool[i].parts, err, sizeof err) < 0) {
            fprintf(stderr, "server_query: decompose: %s\n", err);
            return 1;
        }
        hs_profile_free(p);
    }
    int64_t now = (int64_t)time(NULL) * 1000000000LL;
    char inst[64][32];
    hs_store_label labels[64][1];
    hs_store_profile items[64];
    const hs_store_profile *ps[64];
    for (size_t done = 0; done < n_prof;) {
        size_t b = n_prof - done < 64 ? n_prof - done : 64;
        for (size_t k = 0; k < b; k++) {
            size_t i = done + k;
            items[k] = pool[i % n_pool].sp;
            snprintf(inst[k], sizeof inst[k], "host-%zu", i % 100);
            labels[k][0] = (hs_store_label){"instance", inst[k]};
            items[k].service = svc;
            items[k].type = "cpu";
            items[k].version = i % 2 ? "1.5.0" : "1.4.2";
            items[k].labels = labels[k];
            items[k].n_labels = 1;
            items[k].start_ns = now - 3000LL * 1000000000 + (int64_t)(i * 3000 / n_prof) * 1000000000;
            items[k].duration_ns = 10LL * 1000000000;
            hs_stack_profile_id(&i, sizeof i, &items[k], items[k].id);
            ps[k] = &items[k];
        }
        if (hs_store_put(s, ps, b, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "server_query: put: %s\n", err);
            return 1;
        }
        done += b;
    }
    printf("profiles %zu\n", n_prof);

    double *t = calloc(runs, sizeof *t);
    if (!t)
        return 1;
    hs_store_query q = {.service = svc, .type = "cpu", .from_ns = now - 3600LL * 1000000000};
    size_t rows = 0, missing = 0;
    for (size_t r = 0; r < runs; r++) {
        hs_store_merged mg;
        double a = now_s();
        if (hs_store_merge(s, &q, &mg, err, sizeof err) != 0) {
            fprintf(stderr, "server_query: merge: %s\n", err);
            return 1;
        }
        t[r] = now_s() - a;
        rows = mg.n_rows;
        hs_store_merged_free(&mg);
    }
    printf("merged_stacks %zu\n", rows);
    printf("step_merge_ms %.1f\n", 1e3 * median(t, runs));
    hs_store_merged mg;
    if (hs_store_merge(s, &q, &mg, err, sizeof err) != 0)
        return 1;
    uint64_t *hashes = malloc((mg.n_rows + 1) * sizeof *hashes);
    if (!hashes)
        return 1;
    for (size_t i = 0; i < mg.n_rows; i++)
        hashes[i] = mg.rows[i].stack;
    size_t got = 0;
    for (size_t r = 0; r < runs; r++) {
        double a = now_s();
        if (hs_store_get_stacks(s, hashes, mg.n_rows, count_record, &got, err, sizeof err) != 0) {
            fprintf(stderr, "server_query: get_stacks: %s\n", err);
            return 1;
        }
        t[r] = now_s() - a;
    }
    free(hashes);
    printf("step_fetch_records_ms %.1f\n", 1e3 * median(t, runs));
    for (size_t r = 0; r < runs; r++) {
        double a = now_s();
        int src = 0;
        hs_profile *p = hs_stack_cache_build(NULL, s, &mg, &missing, &src, err, sizeof err);
        t[r] = now_s() - a;
        if (!p) {
            fprintf(stderr, "server_query: build: %s\n", err);
            return 1;
        }
        hs_profile_free(p);
    }
    hs_store_merged_free(&mg);
    printf("step_records_and_rebuild_ms %.1f\n", 1e3 * median(t, runs));

    hs_stack_cache *cache = hs_stack_cache_new((size_t)64 << 20);
    if (!cache)
        return 1;
    hs_query_ctx qc = {.store = s}, qcc = {.store = s, .cache = cache};
    double *tc = calloc(runs, sizeof *tc);
    if (!tc)
        return 1;
    static const struct {
        const char *key, *path, *query;
    } qs[] = {
        {"flamegraph", "/api/v1/flamegraph", "from=now-1h"},
        {"functions", "/api/v1/functions", "from=now-1h"},
        {"profile", "/api/v1/profile", "from=now-1h"},
        {"series", "/api/v1/series", "from=now-1h&step=60"},
        {"flamegraph_focus", "/api/v1/flamegraph", "from=now-1h&focus=function_12\\("},
        {"flamegraph_one_instance", "/api/v1/flamegraph", "from=now-1h&label=instance=host-7"},
        {"diff_versions", "/api/v1/diff", "from=now-1h&version=1.5.0&base_version=1.4.2"},
    };
    /* each query without and with the (warmed) cache, alternately */
    for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        size_t bytes = 0, bytes_c = 0;
        run_query(&qcc, qs[k].path, qs[k].query, &bytes_c);
        for (size_t r = 0; r < runs; r++) {
            t[r] = run_query(&qc, qs[k].path, qs[k].query, &bytes);
            tc[r] = run_query(&qcc, qs[k].path, qs[k].query, &bytes_c);
        }
        if (bytes != bytes_c) {
            fprintf(stderr, "server_query: %s: %zu bytes without the cache, %zu with it\n", qs[k].key, bytes,
                    bytes_c);
            return 1;
        }
        printf("%s_ms %.1f\n", qs[k].key, 1e3 * median(t, runs));
        printf("%s_cached_ms %.1f\n", qs[k].key, 1e3 * median(tc, runs));
        printf("%s_bytes %zu\n", qs[k].key, bytes);
    }
    hs_stack_cache_info ci;
    hs_stack_cache_stats(cache, &ci);
    printf("cache_entries %zu\ncache_bytes %zu\n", ci.entries, ci.bytes);
    hs_stack_cache_free(cache);
    free(t);
    free(tc);
    for (size_t i = 0; i < n_pool; i++)
        hs_stack_parts_free(pool[i].parts);
    free(pool);
    gen_model_free(m);
    hs_store_close(s);
    return 0;
}
