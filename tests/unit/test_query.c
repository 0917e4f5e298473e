/* test_query.c — the query API (server/query.c, query_shape.c) without
 * HTTP: profiles with known stacks and values go into a temporary sqlite
 * store (decomposed by store/stack.h, as ingest does), and hand-built
 * requests go to hs_query_handle. Every expected number below is worked out
 * by hand from the two profiles:
 *
 *   P1  version v1, instance=a, start now-600s:  main;f 10   main;g 5
 *   P2  version v2, instance=b, start now-540s:  main;f 3    main;h 7
 *
 * (sample counts; cpu/nanoseconds is 10 ms per sample). So the merge is
 * main 25 (f 13, h 7, g 5), P1 alone 15, P2 alone 10. The flame graph
 * built straight from the stack rows (query_tree.c) is compared with the
 * rebuilt profile's on generated data at the end. */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "server/query_cache.h"
#include "server/server.h"
#include "store/stack.h"
#include "store/store.h"

#define SEC 1000000000LL

typedef struct {
    char dir[64], src[80];
    hs_store *st;
    hs_query_ctx qc;
    const char *srcs[1];
    int64_t t0; /* P1's start, ns */
} fx;

typedef struct {
    const char *stack; /* root first, ';'-separated */
    int64_t n;
} tsample;

/* file and line of each test function */
static void where(const char *fn, const char **file, int64_t *line)
{
    *file = "src/app.c";
    *line = 1;
    if (strcmp(fn, "f") == 0)
        *line = 3;
    else if (strcmp(fn, "g") == 0)
        *line = 5;
    else if (strcmp(fn, "h") == 0)
        *line = 7;
    else if (strcmp(fn, "up") == 0)
        *file = "../../../../../../../../etc/passwd";
    else if (strcmp(fn, "abs") == 0)
        *file = "/etc/passwd";
}

static hs_profile *mk_profile(const tsample *s, size_t n)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    hs_profile_add_sample_type(p, "samples", "count");
    hs_profile_add_sample_type(p, "cpu", "nanoseconds");
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    for (size_t i = 0; i < n; i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", s[i].stack);
        char *frames[16];
        size_t nf = 0;
        for (char *tok = strtok(buf, ";"); tok && nf < 16; tok = strtok(NULL, ";"))
            frames[nf++] = tok;
        uint64_t locs[16];
        for (size_t k = 0; k < nf; k++) { /* leaf first */
            const char *fn = frames[nf - 1 - k], *file;
            int64_t line;
            where(fn, &file, &line);
            uint64_t fid = hs_profile_add_function(p, fn, fn, file, line);
            hs_line l = {.function_id = fid, .line = line};
            locs[k] = hs_profile_add_location(p, 0, 0x1000 + 16 * k, &l, 1);
        }
        int64_t v[2] = {s[i].n, s[i].n * 10000000};
        assert_int_equal(hs_profile_add_sample(p, locs, nf, v, NULL, 0), 0);
    }
    return p;
}

/* Store p (freed) as a profile of service/type. */
static void put_profile(fx *f, const char *service, const char *type, const char *id, const char *version,
                        const char *instance, int64_t start, hs_profile *p)
{
    hs_store_profile sp;
    memset(&sp, 0, sizeof sp);
    hs_stack_parts *parts = NULL;
    char err[256] = "";
    if (hs_stack_decompose(p, NULL, &sp, &parts, err, sizeof err) < 0)
        fail_msg("decompose: %s", err);
    hs_store_label lab = {"instance", instance};
    snprintf(sp.id, sizeof sp.id, "%s", id);
    sp.service = service;
    sp.type = type;
    sp.version = version;
    sp.labels = &lab;
    sp.n_labels = 1;
    sp.start_ns = start;
    sp.duration_ns = 10 * SEC;
    const hs_store_profile *pp = &sp;
    if (hs_store_put(f->st, &pp, 1, NULL, err, sizeof err) != 0)
        fail_msg("put: %s", err);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
}

static void put(fx *f, const char *id, const char *version, const char *instance, int64_t start,
                const tsample *s, size_t n)
{
    put_profile(f, "svc", "cpu", id, version, instance, start, mk_profile(s, n));
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/hs-query-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char err[256] = "";
    f->st = hs_store_open(f->dir, err, sizeof err);
    if (!f->st)
        fail_msg("open: %s", err);
    /* the source directory: app.c with ten numbered lines */
    snprintf(f->src, sizeof f->src, "%s/src", f->dir);
    assert_int_equal(mkdir(f->src, 0700), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/app.c", f->src);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = 1; i <= 10; i++)
        fprintf(fp, "line %d%s\n", i, i == 3 ? " <f>" : "");
    fclose(fp);
    f->srcs[0] = f->src;
    f->qc.store = f->st;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->t0 = ((int64_t)ts.tv_sec - 600) * SEC;
    static const tsample p1[] = {{"main;f", 10}, {"main;g", 5}};
    static const tsample p2[] = {{"main;f", 3}, {"main;h", 7}};
    put(f, "p1", "v1", "a", f->t0, p1, 2);
    put(f, "p2", "v2", "b", f->t0 + 60 * SEC, p2, 2);
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    fx *f = *state;
    hs_stack_cache_free(f->qc.cache);
    hs_store_close(f->st);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Run GET path?query ("&"-separated k=v, no URL decoding). Returns the
 * status; the body (NUL-terminated) in *out, to free. */
static int get(fx *f, const char *path, const char *query, char **out, hs_http_response *keep)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", query);
    hs_param params[64];
    size_t n = 0;
    for (char *q = buf, *next; *q && n < 64; q = next) {
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
    int st = hs_query_handle(&f->qc, &rq, &rs);
    assert_int_equal(st, rs.status);
    if (keep) {
        *keep = rs;
        *out = NULL;
        return st;
    }
    char *body = malloc(rs.len + 1);
    assert_non_null(body);
    memcpy(body, rs.body ? rs.body : "", rs.len);
    body[rs.len] = 0;
    free(rs.body);
    *out = body;
    return st;
}

/* GET and assert status and that the body contains every needle. */
static void expect(fx *f, const char *path, const char *query, int status, ...)
{
    char *body;
    int st = get(f, path, query, &body, NULL);
    if (st != status)
        fail_msg("%s?%s: status %d, want %d: %s", path, query, st, status, body);
    va_list ap;
    va_start(ap, status);
    for (const char *needle; (needle = va_arg(ap, const char *));)
        if (!strstr(body, needle))
            fail_msg("%s?%s: no %s in %s", path, query, needle, body);
    va_end(ap);
    free(body);
}

static void test_listings(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/services", "", 200, "{\"services\":[\"svc\"]}", NULL);
    expect(f, "/api/v1/services", "from=now-30s", 200, "{\"services\":[]}", NULL);
    expect(f, "/api/v1/versions", "service=svc&type=cpu", 200, "{\"versions\":[\"v1\",\"v2\"]}", NULL);
    /* listings cover everything stored; profile queries the last hour */
    static const tsample old[] = {{"main;g", 1}};
    put(f, "p0", "v0", "z", f->t0 - 7200 * SEC, old, 1);
    expect(f, "/api/v1/versions", "service=svc", 200, "{\"versions\":[\"v0\",\"v1\",\"v2\"]}", NULL);
    expect(f, "/api/v1/versions", "service=svc&from=now-1h", 200, "{\"versions\":[\"v1\",\"v2\"]}", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples", 200, "\"profiles\":2,", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&from=now-3h", 200, "\"profiles\":3,",
           NULL);
    expect(f, "/api/v1/versions", "service=svc&label=instance=b", 200, "{\"versions\":[\"v2\"]}", NULL);
    expect(f, "/api/v1/labels", "service=svc&type=cpu&from=now-1h", 200, "{\"labels\":{\"instance\":[\"a\",\"b\"]}}",
           NULL);
    expect(f, "/api/v1/labels", "service=svc&type=cpu", 200, "{\"labels\":{\"instance\":[\"a\",\"b\",\"z\"]}}",
           NULL);
    expect(f, "/api/v1/types", "service=svc", 200,
           "{\"types\":[{\"name\":\"cpu\",\"sample_types\":[{\"type\":\"samples\",\"unit\":\"count\"},"
           "{\"type\":\"cpu\",\"unit\":\"nanoseconds\"}],\"default\":\"cpu\"",
           NULL);
}

static void test_stats(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/stats", "", 200, "{\"store\":{\"profiles\":2,\"samples\":4,\"stacks\":3,", NULL);
    expect(f, "/api/v1/stats", "service=svc", 400, "unknown parameter 'service'", NULL);
}

static void test_functions(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples", 200,
           "\"profiles\":2,\"agg\":\"sum\",\"sample_type\":\"samples\",\"unit\":\"count\",\"total\":25,\"matched\":25",
           "\"functions\":[{\"name\":\"main\",\"file\":\"src/app.c\",\"self\":0,\"total\":25},"
           "{\"name\":\"f\",\"file\":\"src/app.c\",\"self\":13,\"total\":13},"
           "{\"name\":\"h\",\"file\":\"src/app.c\",\"self\":7,\"total\":7},"
           "{\"name\":\"g\",\"file\":\"src/app.c\",\"self\":5,\"total\":5}]",
           NULL);
    /* the default sample type is cpu: 10 ms per sample */
    expect(f, "/api/v1/functions", "service=svc&type=cpu", 200, "\"sample_type\":\"cpu\"", "\"total\":250000000",
           "{\"name\":\"f\",\"file\":\"src/app.c\",\"self\":130000000,\"total\":130000000}", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=0&limit=1", 200, "\"n_functions\":4",
           "\"functions\":[{\"name\":\"main\",\"file\":\"src/app.c\",\"self\":0,\"total\":25}]}", NULL);
}

static void test_selection(void **state)
{
    fx *f = *state;
    char q[256];
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&version=v1", 200, "\"profiles\":1",
           "\"total\":15", "{\"name\":\"f\",\"file\":\"src/app.c\",\"self\":10,\"total\":10}", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&version=v1&version=v2", 200,
           "\"profiles\":2", "\"total\":25", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&label=instance=b", 200,
           "\"profiles\":1", "\"total\":10", "{\"name\":\"h\",\"file\":\"src/app.c\",\"self\":7,\"total\":7}", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&label=instance=c", 200,
           "\"profiles\":0", "\"total\":0", "\"functions\":[]", NULL);
    /* time: P2 starts 60 s after P1 */
    snprintf(q, sizeof q, "service=svc&type=cpu&sample_index=samples&from=%lld", (long long)(f->t0 / SEC + 30));
    expect(f, "/api/v1/functions", q, 200, "\"profiles\":1", "\"total\":10", NULL);
    snprintf(q, sizeof q, "service=svc&type=cpu&sample_index=samples&from=%lld&until=%lld",
             (long long)(f->t0 / SEC), (long long)(f->t0 / SEC + 30));
    expect(f, "/api/v1/functions", q, 200, "\"profiles\":1", "\"total\":15", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&from=now-570s", 200,
           "\"profiles\":1", "\"total\":10", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&from=now-1d&until=now-570s", 200,
           "\"profiles\":1", "\"total\":15", NULL);
}

static void test_agg_weight(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&agg=avg", 200, "\"profiles\":2",
           "\"agg\":\"avg\"", "\"total\":12.5", "{\"name\":\"f\",\"file\":\"src/app.c\",\"self\":6.5,\"total\":6.5}",
           "{\"name\":\"g\",\"file\":\"src/app.c\",\"self\":2.5,\"total\":2.5}", NULL);
    /* top 50% of 2 profiles by total: P1 (15) */
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&weight=50", 200, "\"profiles\":1",
           "\"total\":15", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&weight=100", 200, "\"profiles\":2",
           "\"total\":25", NULL);
    expect(f, "/api/v1/profiles", "service=svc&type=cpu&sample_index=samples", 200,
           "{\"id\":\"p1\",\"version\":\"v1\",", "\"duration\":10,\"total\":15}",
           "{\"id\":\"p2\",\"version\":\"v2\",", "\"duration\":10,\"total\":10}", NULL);
    expect(f, "/api/v1/profiles", "service=svc&type=cpu&limit=2", 200, "\"truncated\":false", NULL);
    expect(f, "/api/v1/profiles", "service=svc&type=cpu&limit=1", 200, "\"profiles\":[{\"id\":\"p1\",",
           "\"truncated\":true", NULL);
    expect(f, "/api/v1/profiles", "service=svc&type=cpu&sample_index=samples&weight=50", 200,
           "\"profiles\":[{\"id\":\"p1\",", NULL);
}

static void test_flamegraph(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples", 200,
           "\"total\":25,\"matched\":25", "\"names\":[\"all\",\"main\",\"f\",\"h\",\"g\"]",
           "\"nodes\":[[-1,0,25,0],[0,1,25,0],[1,2,13,13],[1,3,7,7],[1,4,5,5]]", NULL);
    /* two nodes kept (main, f); h and g fold into main's "other" */
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&max_nodes=2", 200,
           "\"names\":[\"all\",\"main\",\"f\",\"other\"]", "\"nodes\":[[-1,0,25,0],[0,1,25,0],[1,2,13,13],[1,3,12,12]]",
           NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&max_nodes=3", 200,
           "\"names\":[\"all\",\"main\",\"f\",\"h\",\"other\"]",
           "\"nodes\":[[-1,0,25,0],[0,1,25,0],[1,2,13,13],[1,3,7,7],[1,4,5,5]]", NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&max_nodes=4", 200,
           "\"names\":[\"all\",\"main\",\"f\",\"h\",\"g\"]", NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&max_nodes=1", 200,
           "\"names\":[\"all\",\"main\",\"other\"]", "\"nodes\":[[-1,0,25,0],[0,1,25,0],[1,2,25,25]]", NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&version=v1&agg=avg", 200,
           "\"nodes\":[[-1,0,15,0],[0,1,15,0],[1,2,10,10],[1,3,5,5]]", NULL);
}

static void test_filters(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&sample_index=samples&focus=^h$", 200,
           "\"total\":25,\"matched\":7,\"unfiltered\":25", "\"nodes\":[[-1,0,7,0],[0,1,7,0],[1,2,7,7]]", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&ignore=^f$", 200, "\"matched\":12",
           NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&hide=^main$", 200,
           "\"functions\":[{\"name\":\"f\",\"file\":\"src/app.c\",\"self\":13,\"total\":13},", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&focus=(", 400, "focus", NULL);
    /* back-references: absent from RE2 (pprof's engine and ours) */
    expect(f, "/api/v1/functions", "service=svc&type=cpu&focus=(a*)*(\\1)*b", 400, "invalid focus regexp",
           "invalid escape sequence", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&tagfocus=k=(a)\\2", 400, "invalid escape", NULL);
    /* Regex bombs (issue 29): nested counted repeats made glibc's regcomp
     * take 3 GB and 11 s; RE2 refuses them while parsing, for any filter,
     * whether or not the service exists. The bound is generous: the
     * point is "not seconds". */
    static const char *const bombs[] = {
        "service=svc&type=cpu&focus=((x{32767}){32767})",
        "service=nosuch&type=cpu&hide=(((a{100}){100}){100})",
        "service=svc&type=cpu&show_from=((a{999}){999})",
        "service=svc&type=cpu&tagfocus=k=((a{500}){500})",
    };
    for (size_t i = 0; i < sizeof bombs / sizeof bombs[0]; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        expect(f, "/api/v1/flamegraph", bombs[i], 400, "regexp", "invalid repetition", NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms > 500)
            fail_msg("%s took %.0f ms", bombs[i], ms);
    }
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=samples&focus=\\\\1", 200, "\"matched\":0",
           NULL);
}

static void test_diff(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/diff", "service=svc&type=cpu&sample_index=samples&version=v2&base_version=v1", 200,
           "\"new\":{\"profiles\":1,\"total\":10,\"matched\":10},\"base\":{\"profiles\":1,\"total\":15,\"matched\":15}",
           "\"names\":[\"all\",\"main\",\"f\",\"h\",\"g\"]",
           "\"nodes\":[[-1,0,10,0,15,0],[0,1,10,0,15,0],[1,2,3,3,10,10],[1,3,7,7,0,0],[1,4,0,0,5,5]]",
           "{\"name\":\"f\",\"file\":\"src/app.c\",\"self_new\":3,\"total_new\":3,\"self_base\":10,\"total_base\":10}",
           NULL);
    /* base_label replaces label; agg=avg divides each side by its own count;
     * what has no base_X is shared (version=v2 alone: both sides alike) */
    expect(f, "/api/v1/diff", "service=svc&type=cpu&sample_index=samples&label=instance=b&base_label=instance=a",
           200, "\"new\":{\"profiles\":1,\"total\":10", "\"base\":{\"profiles\":1,\"total\":15", NULL);
    expect(f, "/api/v1/diff", "service=svc&type=cpu&sample_index=samples&version=v2&base_version=v1&base_version=v2&agg=avg", 200,
           "\"new\":{\"profiles\":1,\"total\":10", "\"base\":{\"profiles\":2,\"total\":12.5", NULL);
    expect(f, "/api/v1/diff", "service=svc&type=cpu&sample_index=samples&version=v2", 200,
           "\"base\":{\"profiles\":1,\"total\":10,", "[1,2,7,7,7,7]", NULL);
}

static void test_profile(void **state)
{
    fx *f = *state;
    char *body;
    hs_http_response rs;
    char err[256] = "";
    int st = get(f, "/api/v1/profile", "service=svc&type=cpu", &body, &rs);
    assert_int_equal(st, 200);
    assert_string_equal(rs.extra_header, "X-Hotspur-Profiles: 2");
    hs_profile *p = hs_profile_decode(rs.body, rs.len, err, sizeof err);
    free(rs.body);
    if (!p)
        fail_msg("decode: %s", err);
    assert_int_equal(p->n_samples, 3);
    int64_t sum[2] = {0, 0};
    for (size_t i = 0; i < p->n_samples; i++)
        for (int k = 0; k < 2; k++)
            sum[k] += p->samples[i].values[k];
    assert_int_equal(sum[0], 25);
    assert_int_equal(sum[1], 250000000);
    hs_profile_free(p);

    st = get(f, "/api/v1/profile", "service=svc&type=cpu&focus=^f$&agg=avg&sample_index=samples", &body, &rs);
    assert_int_equal(st, 200);
    p = hs_profile_decode(rs.body, rs.len, err, sizeof err);
    free(rs.body);
    assert_non_null(p);
    assert_int_equal(p->n_samples, 1);
    assert_int_equal(p->samples[0].values[0], 7); /* 13 / 2 rounded */
    assert_int_equal(p->samples[0].values[1], 65000000);
    assert_string_equal(hs_profile_string(p, p->default_sample_type), "samples");
    hs_profile_free(p);
}

static void test_series(void **state)
{
    fx *f = *state;
    char *body;
    assert_int_equal(get(f, "/api/v1/series", "service=svc&type=cpu&sample_index=samples&step=60", &body, NULL), 200);
    /* two profiles, 60 s apart: their totals in their own buckets */
    assert_non_null(strstr(body, "\"step\":60"));
    assert_non_null(strstr(body, ",15,1]"));
    assert_non_null(strstr(body, ",10,1]"));
    free(body);
    assert_int_equal(get(f, "/api/v1/series", "service=svc&type=cpu&sample_index=samples&step=3600", &body, NULL),
                     200);
    /* one hour buckets: both profiles together, or split at an hour mark */
    assert_true(strstr(body, ",25,2]") || (strstr(body, ",15,1]") && strstr(body, ",10,1]")));
    free(body);
    expect(f, "/api/v1/series", "service=svc&type=cpu&sample_index=samples&step=60&agg=avg&version=v1", 200,
           ",15,1]", NULL);
}

static void test_source(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/source", "service=svc&type=cpu&function=f", 404, "--source-path", NULL);
    f->qc.source_paths = f->srcs;
    f->qc.n_source_paths = 1;
    expect(f, "/api/v1/source", "service=svc&type=cpu&sample_index=samples&function=f", 200,
           "\"function\":\"f\"", "{\"file\":\"src/app.c\",\"found\":true,\"self\":13,\"total\":13,\"lines\":[",
           "{\"line\":3,\"self\":13,\"total\":13,\"text\":\"line 3 \\u003cf\\u003e\"}",
           "{\"line\":8,\"self\":0,\"total\":0,\"text\":\"line 8\"}", NULL);
    /* main (line 1) calls f and g: cum on its line */
    expect(f, "/api/v1/source", "service=svc&type=cpu&sample_index=samples&function=main", 200,
           "{\"line\":1,\"self\":0,\"total\":25,\"text\":\"line 1\"}", NULL);
    expect(f, "/api/v1/source", "service=svc&type=cpu&function=nosuch", 404, "nosuch", NULL);
    f->qc.source_paths = NULL;
    f->qc.n_source_paths = 0;
}

/* Paths that lead out of the source directory are never read. */
static void test_source_traversal(void **state)
{
    fx *f = *state;
    static const tsample p3[] = {{"main;up", 4}, {"main;abs", 2}};
    put(f, "p3", "v3", "c", f->t0 + 120 * SEC, p3, 2);
    /* a symlink inside the source dir that points outside */
    char link[128];
    snprintf(link, sizeof link, "%s/etc", f->src);
    assert_int_equal(symlink("/etc", link), 0);
    f->qc.source_paths = f->srcs;
    f->qc.n_source_paths = 1;
    expect(f, "/api/v1/source", "service=svc&type=cpu&sample_index=samples&version=v3&function=up", 200,
           "\"found\":false", "\"lines\":[{\"line\":1,\"self\":4,\"total\":4}]", NULL);
    expect(f, "/api/v1/source", "service=svc&type=cpu&sample_index=samples&version=v3&function=abs", 200,
           "\"found\":false", NULL);
    char *body;
    assert_int_equal(get(f, "/api/v1/source", "service=svc&type=cpu&version=v3&function=abs", &body, NULL), 200);
    assert_null(strstr(body, "root:"));
    assert_null(strstr(body, "\"text\""));
    free(body);
    f->qc.source_paths = NULL;
    f->qc.n_source_paths = 0;
}

static void test_errors(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/functions", "service=svc&type=cpu&bogus=1", 400, "{\"error\":\"unknown parameter 'bogus'",
           NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&base_version=v1", 400, "'base_version'", NULL);
    expect(f, "/api/v1/series", "service=svc&type=cpu&focus=f", 400, "'focus'", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&agg=avg&agg=sum", 400, "more than once", NULL);
    expect(f, "/api/v1/functions", "service=svc", 400, "type=T", NULL);
    expect(f, "/api/v1/functions", "type=cpu", 400, "service=S", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&from=yesterday", 400, "bad from", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&from=now-1h&until=now-2h", 400, "before", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&agg=median", 400, "agg", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&weight=0", 400, "weight", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&sample_index=bytes", 400, "no sample type 'bytes'", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=cpu&label=novalue", 400, "KEY=VALUE", NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=cpu&max_nodes=0", 400, "max_nodes", NULL);
    expect(f, "/api/v1/functions", "service=nosuch&type=cpu", 404, "nosuch", NULL);
    expect(f, "/api/v1/nosuch", "", 404, "no such endpoint", NULL);
    expect(f, "/api/v2/services", "", 404, "no such endpoint", NULL);
}

/* The record cache changes nothing in the answers: a warm cache, and one
 * too small for a query's records (evicting as it goes), give the answers
 * of no cache; its bytes stay within its bound. */
static void test_cache(void **state)
{
    fx *f = *state;
    static const char *const qs[] = {"service=svc&type=cpu&sample_index=samples",
                                     "service=svc&type=cpu&version=v1",
                                     "service=svc&type=cpu&focus=^h$&agg=avg"};
    static const char *const paths[] = {"/api/v1/flamegraph", "/api/v1/functions", "/api/v1/diff"};
    size_t sizes[] = {(size_t)64 << 20, 300};
    for (size_t z = 0; z < 2; z++) {
        for (size_t k = 0; k < 3; k++)
            for (size_t p = 0; p < 3; p++) {
                char *want, *got1, *got2;
                f->qc.cache = NULL;
                assert_int_equal(get(f, paths[p], qs[k], &want, NULL), 200);
                hs_stack_cache *c = hs_stack_cache_new(sizes[z]);
                assert_non_null(c);
                f->qc.cache = c;
                assert_int_equal(get(f, paths[p], qs[k], &got1, NULL), 200);
                hs_stack_cache_info a, b;
                hs_stack_cache_stats(c, &a);
                assert_int_equal(get(f, paths[p], qs[k], &got2, NULL), 200);
                hs_stack_cache_stats(c, &b);
                f->qc.cache = NULL;
                assert_string_equal(got1, want);
                assert_string_equal(got2, want);
                assert_true(b.bytes <= sizes[z]);
                if (z == 0) { /* everything fits: the second query only hits */
                    if (p != 2) /* (a diff's base reuses its new side's records) */
                        assert_int_equal(a.hits, 0);
                    assert_true(a.misses > 0);
                    assert_int_equal(b.misses, a.misses);
                    assert_int_equal(b.hits - a.hits, a.hits + a.misses);
                }
                hs_stack_cache_free(c);
                free(want);
                free(got1);
                free(got2);
            }
    }
}

static void test_params_helpers(void **state)
{
    (void)state;
    hs_param ps[] = {{"a", "1"}, {"b", "2"}, {"a", "3"}};
    hs_http_request rq = {.params = ps, .n_params = 3};
    assert_string_equal(hs_param_get(&rq, "a"), "1");
    assert_null(hs_param_get(&rq, "c"));
    hs_http_response rs;
    memset(&rs, 0, sizeof rs);
    assert_int_equal(hs_respond_error(&rs, 418, "bad \"%s\"\nsecond line", "x\\y"), 418);
    assert_int_equal(rs.status, 418);
    assert_string_equal(rs.content_type, "application/json");
    assert_int_equal(rs.len, strlen(rs.body));
    assert_string_equal(rs.body, "{\"error\":\"bad \\\"x\\\\y\\\" second line\"}\n");
    free(rs.body);
    hs_limits l;
    hs_limits_default(&l);
    assert_int_equal(l.max_body, 16 << 20);
}

/* ---- the flame graph straight from the stack rows (query_tree.c) ----
 *
 * It answers exactly what the rebuilt profile's view (the CLI's analysis
 * layer) answers: generated profiles with inline frames, several
 * mappings, frames without a function name, files that need cleaning,
 * labels, zero and (in one service) negative values; every flame graph
 * query of a matrix of granularities, filters (focus, ignore, hide, show,
 * show_from, tag filters and combinations), sample indexes, agg,
 * selections and max_nodes is run both ways (hs_query_ctx.rebuild_trees)
 * and the two bodies must be identical. The ctx's counter of direct trees
 * tells which way each query went: the direct path for all but negative
 * values and errors, which it leaves to the view. */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* The vocabulary: names with regex-special characters, an empty name
 * (named by its mapping and start line), files that clean differently. */
static const char *const fn_names[] = {"main", "run", "work", "alloc", "free_list", "std::vector<int>::push_back",
                                       "a.b", "parse(int)", "", "leaf", "spin", "hash_map::find"};
static const char *const files[] = {"src/main.c", "./src//util.c", "src/a/../b.c", "", "/usr/include/c++/vector",
                                    "lib/x.c"};
static const char *const maps[] = {"/usr/bin/app", "/usr/lib/x86_64-linux-gnu/libc.so.6", "", "[vdso]"};

/* One profile of n random samples; neg: some values negative. */
static hs_profile *gen_profile(int n, bool neg)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    hs_profile_add_sample_type(p, "alloc_space", "bytes");
    hs_profile_add_sample_type(p, "inuse_space", "bytes");
    p->default_sample_type = hs_profile_str(p, "inuse_space");
    uint64_t mids[4];
    for (int i = 0; i < 4; i++)
        mids[i] = *maps[i] ? hs_profile_add_mapping(p, 0x1000 * (uint64_t)(i + 1), 0x1000 * (uint64_t)(i + 2), 0,
                                                    maps[i], "")
                           : 0;
    for (int s = 0; s < n; s++) {
        uint64_t locs[12];
        size_t nl = 2 + rnd(9);
        for (size_t k = 0; k < nl; k++) {
            hs_line lines[3];
            size_t nlines = rnd(4) == 0 ? 2 + rnd(2) : 1; /* an inline chain */
            for (size_t j = 0; j < nlines; j++) {
                size_t fi = k + 1 == nl ? 0 : rnd(sizeof fn_names / sizeof *fn_names); /* main at the root */
                const char *file = files[rnd(sizeof files / sizeof *files)];
                int64_t start = 10 * (int64_t)rnd(3);
                uint64_t fid = hs_profile_add_function(p, fn_names[fi], fn_names[fi], file, start);
                assert_true(fid != 0);
                lines[j] = (hs_line){.function_id = fid, .line = 1 + rnd(4)};
            }
            uint64_t m = mids[rnd(4)];
            locs[k] = hs_profile_add_location(p, m, m ? m + 16 * rnd(8) : 0, lines, nlines);
            assert_true(locs[k] != 0);
        }
        int64_t v[2] = {1 + rnd(1000), rnd(3) == 0 ? 0 : (int64_t)rnd(500)};
        if (neg && rnd(5) == 0)
            v[1] = -v[1] - 1;
        hs_label lab[1] = {{hs_profile_str(p, "thread_name"), hs_profile_str(p, rnd(2) ? "worker" : "io"), 0, 0}};
        assert_int_equal(hs_profile_add_sample(p, locs, nl, v, lab, 1), 0);
    }
    return p;
}

static int setup_gen(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/hs-qtree-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char err[256] = "";
    f->st = hs_store_open(f->dir, err, sizeof err);
    if (!f->st)
        fail_msg("open: %s", err);
    f->qc.store = f->st;
    /* with a record cache: the first query fetches from the store, the
     * others find the records in the cache */
    f->qc.cache = hs_stack_cache_new((size_t)64 << 20);
    assert_non_null(f->qc.cache);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t t0 = ((int64_t)ts.tv_sec - 900) * SEC;
    rng_state = 0x9e3779b97f4a7c15ULL;
    put_profile(f, "svc", "heap", "p1", "v1", "a", t0, gen_profile(300, false));
    put_profile(f, "svc", "heap", "p2", "v2", "b", t0 + 60 * SEC, gen_profile(300, false));
    put_profile(f, "svc", "heap", "p3", "v2", "a", t0 + 120 * SEC, gen_profile(200, false));
    put_profile(f, "neg", "heap", "n1", "v1", "a", t0, gen_profile(100, true));
    *state = f;
    return 0;
}

/* The query both ways: same status, same bytes. Returns whether the
 * direct path answered it. */
static bool same(fx *f, const char *query)
{
    char *direct, *rebuilt;
    unsigned long before = f->qc.direct_trees;
    f->qc.rebuild_trees = false;
    int s1 = get(f, "/api/v1/flamegraph", query, &direct, NULL);
    bool was_direct = f->qc.direct_trees != before;
    f->qc.rebuild_trees = true;
    int s2 = get(f, "/api/v1/flamegraph", query, &rebuilt, NULL);
    assert_int_equal(f->qc.direct_trees, before + (was_direct ? 1 : 0));
    if (s1 != s2 || strcmp(direct, rebuilt) != 0)
        fail_msg("%s: direct %d %.300s\nrebuilt %d %.300s", query, s1, direct, s2, rebuilt);
    free(direct);
    free(rebuilt);
    return was_direct;
}

/* Number of nodes in an answer (to know the matrix is not all empty). */
static int n_nodes(fx *f, const char *query)
{
    char *body;
    assert_int_equal(get(f, "/api/v1/flamegraph", query, &body, NULL), 200);
    const char *p = strstr(body, "\"nodes\":[");
    assert_non_null(p);
    int n = 0;
    for (; *p; p++)
        n += *p == '[';
    free(body);
    return n - 1;
}

static void test_tree_matrix(void **state)
{
    fx *f = *state;
    static const char *const grans[] = {"", "&granularity=files", "&granularity=lines", "&granularity=addresses"};
    static const char *const filters[] = {
        "",
        "&focus=work",
        "&focus=^$",
        "&ignore=alloc",
        "&ignore=libc",
        "&hide=run|leaf",
        "&hide=libc\\.so",
        "&hide=.",
        "&show=work|spin",
        "&show=app$",
        "&show_from=parse",
        "&show_from=vdso",
        "&show_from=std::",
        "&focus=main&hide=spin&show_from=work",
        "&ignore=hash&show=a\\.b|leaf|main",
        "&focus=util\\.c",
        "&focus=b\\.c&show=leaf|spin",
        "&show_from=nomatch",
        "&focus=nomatch",
        "&tagfocus=thread_name=worker",
        "&tagignore=thread_name=io&focus=work",
        "&tagfocus=worker&show=leaf|spin",
        "&tagfocus=thread_name=nomatch",
    };
    static const char *const sels[] = {"", "&sample_index=alloc_space", "&sample_index=0&agg=avg", "&version=v2",
                                       "&agg=avg&max_nodes=7", "&max_nodes=1"};
    int direct = 0, total = 0;
    char q[512];
    for (size_t g = 0; g < sizeof grans / sizeof *grans; g++)
        for (size_t i = 0; i < sizeof filters / sizeof *filters; i++)
            for (size_t s = 0; s < sizeof sels / sizeof *sels; s++) {
                snprintf(q, sizeof q, "service=svc&type=heap&from=now-1h%s%s%s", grans[g], filters[i], sels[s]);
                direct += same(f, q);
                total++;
            }
    assert_int_equal(direct, total);
    /* the data is not trivial: hundreds of nodes, and filters change them */
    int all = n_nodes(f, "service=svc&type=heap&from=now-1h");
    assert_true(all > 200);
    int focused = n_nodes(f, "service=svc&type=heap&from=now-1h&focus=parse");
    assert_true(focused > 10 && focused < all);
}

/* What the direct path leaves to the view still answers the same. */
static void test_tree_fallbacks(void **state)
{
    fx *f = *state;
    assert_false(same(f, "service=neg&type=heap&from=now-1h"));
    /* the other sample type of that profile has no negative value */
    assert_true(same(f, "service=neg&type=heap&from=now-1h&sample_index=alloc_space&hide=run"));
    /* errors: the view's */
    assert_false(same(f, "service=svc&type=heap&from=now-1h&sample_index=7"));
    assert_false(same(f, "service=svc&type=heap&from=now-1h&sample_index=+1"));
    assert_false(same(f, "service=svc&type=heap&from=now-7200s&until=now-3600s"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agg_weight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flamegraph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_traversal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
        cmocka_unit_test(test_params_helpers),
        cmocka_unit_test_setup_teardown(test_tree_matrix, setup_gen, teardown),
        cmocka_unit_test_setup_teardown(test_tree_fallbacks, setup_gen, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
