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
 * main 25 (f 13, h 7, g 5), P1 alone 15, P2 alone 10. At the end, the
 * answers on generated data are compared with the CLI's analysis of the
 * same profiles (the files, before the store). */
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
#include <getopt.h>
#include <jansson.h>

#include "analysis/analysis.h"
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
    hs_profile *gen[4]; /* the generated profiles as stored (setup_gen) */
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

/* Store p as a profile of service/type. */
static void put_profile_keep(fx *f, const char *service, const char *type, const char *id, const char *version,
                             const char *instance, int64_t start, const hs_profile *p)
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
}

/* The same, and p freed. */
static void put_profile(fx *f, const char *service, const char *type, const char *id, const char *version,
                        const char *instance, int64_t start, hs_profile *p)
{
    put_profile_keep(f, service, type, id, version, instance, start, p);
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

/* ---- the answers are the CLI's, by construction ----
 *
 * The server's view comes from the stored stack rows (query_view.c), the
 * CLI's from a profile file (hs_view_build): the one the server gives for
 * the selection (/api/v1/profile, what a user downloads and runs `hotspur
 * top` on; it differs from the uploaded file where ingest named frames
 * that had no function name, as module+offset). On generated profiles with
 * inline frames, several mappings, frames without a function name, files
 * that need cleaning, labels, zero and (in one service) negative values,
 * every query of a matrix of granularities, filters (focus, ignore, hide,
 * show, show_from, tag filters and combinations), sample indexes and
 * selections gives the numbers the CLI's view of the same profiles gives:
 * every function's self and total (`hotspur top`'s call graph), every
 * flame graph node's total and self by its path from the root (the call
 * tree), the diff's both sides, the totals. */

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
    snprintf(f->dir, sizeof f->dir, "/tmp/hs-qview-XXXXXX");
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
    static const int sizes[4] = {300, 300, 200, 100};
    for (int i = 0; i < 4; i++)
        f->gen[i] = gen_profile(sizes[i], i == 3);
    put_profile_keep(f, "svc", "heap", "p1", "v1", "a", t0, f->gen[0]);
    put_profile_keep(f, "svc", "heap", "p2", "v2", "b", t0 + 60 * SEC, f->gen[1]);
    put_profile_keep(f, "svc", "heap", "p3", "v2", "a", t0 + 120 * SEC, f->gen[2]);
    put_profile_keep(f, "neg", "heap", "n1", "v1", "a", t0, f->gen[3]);
    *state = f;
    return 0;
}

static int teardown_gen(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 4; i++)
        hs_profile_free(f->gen[i]);
    return teardown(state);
}

/* The CLI's options for a query's filter part ("&focus=x&granularity=files"):
 * each key=value as --key=value (show_from as --show-from, granularity=G as
 * --G), read by the CLI's own option parser. */
static void cli_options(const char *params, hs_analysis_options *o)
{
    static const struct option lo[] = {HS_ANALYSIS_LONGOPTS, {0, 0, 0, 0}};
    char buf[512], args[16][160];
    char *argv[17] = {"hotspur"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", params);
    for (char *tok = strtok(buf, "&"); tok; tok = strtok(NULL, "&")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        char key[64];
        snprintf(key, sizeof key, "%s", tok);
        for (char *k = key; *k; k++)
            if (*k == '_')
                *k = '-';
        if (strcmp(key, "granularity") == 0)
            snprintf(args[argc - 1], sizeof args[0], "--%s", eq + 1);
        else
            snprintf(args[argc - 1], sizeof args[0], "--%s=%s", key, eq + 1);
        argv[argc] = args[argc - 1];
        argc++;
    }
    hs_analysis_options_init(o);
    optind = 1;
    int c;
    char err[256];
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
        if (hs_analysis_parse_option(o, c, optarg, err, sizeof err) != 1)
            fail_msg("option %c: %s", c, err);
}

/* "name\tself\ttotal" (diff: and base self, base total) lines of view v's
 * functions with anything to show, sorted. */
static char *ref_functions(const hs_view *v)
{
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    hs_graph g;
    char err[256];
    assert_int_equal(hs_graph_build(v, &no, &g, err, sizeof err), 0);
    size_t n = 0;
    char **lines = calloc(v->n_nodes + 1, sizeof *lines);
    assert_non_null(lines);
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_graph_node *gn = &g.nodes[i];
        if (!(gn->flat || gn->cum || gn->base_flat || gn->base_cum))
            continue;
        if (v->diff)
            assert_true(asprintf(&lines[n++], "%s\t%lld\t%lld\t%lld\t%lld", v->nodes[i].name, (long long)gn->flat,
                                 (long long)gn->cum, (long long)gn->base_flat, (long long)gn->base_cum) > 0);
        else
            assert_true(asprintf(&lines[n++], "%s\t%lld\t%lld", v->nodes[i].name, (long long)gn->flat,
                                 (long long)gn->cum) > 0);
    }
    hs_graph_free(&g);
    return (char *)lines; /* joined by join_sorted */
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* lines[0..n) sorted and joined by newlines (lines freed). */
static char *join_sorted(char **lines, size_t n)
{
    qsort(lines, n, sizeof *lines, cmp_str);
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(lines[i]) + 1;
    char *out = malloc(len), *w = out;
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        w = stpcpy(w, lines[i]);
        *w++ = '\n';
        free(lines[i]);
    }
    *w = 0;
    free(lines);
    return out;
}

static size_t count_lines(char **lines)
{
    size_t n = 0;
    while (lines[n])
        n++;
    return n;
}

/* The same lines from a functions or diff answer. */
static char *srv_functions(json_t *ans, bool diff)
{
    json_t *fns = json_object_get(ans, "functions");
    assert_true(json_is_array(fns));
    size_t n = json_array_size(fns);
    assert_int_equal(json_integer_value(json_object_get(ans, "n_functions")), n);
    char **lines = calloc(n + 1, sizeof *lines);
    assert_non_null(lines);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(fns, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        if (diff)
            assert_true(asprintf(&lines[i], "%s\t%lld\t%lld\t%lld\t%lld", name,
                                 (long long)json_integer_value(json_object_get(e, "self_new")),
                                 (long long)json_integer_value(json_object_get(e, "total_new")),
                                 (long long)json_integer_value(json_object_get(e, "self_base")),
                                 (long long)json_integer_value(json_object_get(e, "total_base"))) > 0);
        else
            assert_true(asprintf(&lines[i], "%s\t%lld\t%lld", name,
                                 (long long)json_integer_value(json_object_get(e, "self")),
                                 (long long)json_integer_value(json_object_get(e, "total"))) > 0);
    }
    return join_sorted(lines, n);
}

/* "path\ttotal\tself" lines of call tree ct's nodes over view v (the
 * path: names from the root's child down, joined by ';'). */
static void tree_lines(const hs_view *v, const hs_calltree *ct, uint32_t id, const char *path, char ***lines,
                       size_t *n, size_t *cap)
{
    const hs_tree_node *t = &ct->t[id];
    char *mine = NULL;
    if (id != 0) {
        assert_true(asprintf(&mine, "%s;%s", path, v->nodes[t->node].name) > 0);
        if (*n + 1 >= *cap) {
            *cap = *cap ? 2 * *cap : 256;
            *lines = realloc(*lines, *cap * sizeof **lines);
            assert_non_null(*lines);
        }
        assert_true(asprintf(&(*lines)[(*n)++], "%s\t%lld\t%lld", mine, (long long)t->total, (long long)t->self) > 0);
    }
    for (uint32_t k = t->first_child; k; k = ct->t[k].next_sibling)
        tree_lines(v, ct, k, mine ? mine : "", lines, n, cap);
    free(mine);
}

static char *ref_tree(const hs_view *v)
{
    hs_calltree ct;
    char err[256];
    assert_int_equal(hs_calltree_build(v, &ct, err, sizeof err), 0);
    char **lines = NULL;
    size_t n = 0, cap = 0;
    tree_lines(v, &ct, 0, "", &lines, &n, &cap);
    hs_calltree_free(&ct);
    if (!lines)
        lines = calloc(1, sizeof *lines);
    return join_sorted(lines, n);
}

/* The same lines from a flame graph answer: "names", and "nodes" as
 * [parent, name, total, self] in preorder. */
static char *srv_tree(json_t *ans)
{
    json_t *names = json_object_get(ans, "names"), *nodes = json_object_get(ans, "nodes");
    assert_true(json_is_array(names) && json_is_array(nodes));
    size_t n = json_array_size(nodes);
    char **paths = calloc(n + 1, sizeof *paths), **lines = calloc(n + 1, sizeof *lines);
    assert_true(paths && lines);
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(nodes, i);
        json_int_t parent = json_integer_value(json_array_get(e, 0));
        const char *name = json_string_value(json_array_get(names, (size_t)json_integer_value(json_array_get(e, 1))));
        assert_non_null(name);
        if (parent < 0) { /* the root, "all" */
            paths[i] = strdup("");
            continue;
        }
        assert_true(parent < (json_int_t)i);
        assert_true(asprintf(&paths[i], "%s;%s", paths[parent], name) > 0);
        assert_true(asprintf(&lines[nl++], "%s\t%lld\t%lld", paths[i],
                             (long long)json_integer_value(json_array_get(e, 2)),
                             (long long)json_integer_value(json_array_get(e, 3))) > 0);
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return join_sorted(lines, nl);
}

/* The profile the server gives for a selection (unfiltered, summed). */
static hs_profile *download(fx *f, const char *service, const char *sel)
{
    char q[256];
    snprintf(q, sizeof q, "service=%s&type=heap&from=now-1h&agg=sum%s", service, sel);
    hs_http_response rs;
    char *unused, err[256];
    assert_int_equal(get(f, "/api/v1/profile", q, &unused, &rs), 200);
    hs_profile *p = hs_profile_decode(rs.body, rs.len, err, sizeof err);
    if (!p)
        fail_msg("decode: %s", err);
    free(rs.body);
    return p;
}

/* One query both ways. service: "svc" or "neg"; sel: "" or
 * "&version=v2"; filters: the filter and granularity part, as URL
 * parameters. diff: /api/v1/diff of v2 against v1 (svc). Returns the
 * number of functions compared. */
static size_t compare(fx *f, const char *service, const char *sel, const char *filters, bool diff)
{
    hs_profile *p = download(f, service, diff ? "&version=v2" : sel);
    hs_profile *base = diff ? download(f, service, "&version=v1") : NULL;
    char err[256];
    hs_analysis_options o;
    cli_options(filters, &o);
    hs_view *v = hs_view_build(&p, 1, base ? &base : NULL, base ? 1 : 0, &o, err, sizeof err);
    if (!v)
        fail_msg("%s: the CLI's view: %s", filters, err);
    char q[768];
    /* agg=sum: the inuse_* levels would be averaged over the profiles */
    snprintf(q, sizeof q, "service=%s&type=heap&from=now-1h&agg=sum%s%s%s", service,
             diff ? "&base_version=v1&version=v2" : "", diff ? "" : sel, filters);
    size_t nf = 0;
    for (int which = 0; which < (diff ? 1 : 2); which++) {
        const char *path = diff ? "/api/v1/diff" : which ? "/api/v1/flamegraph" : "/api/v1/functions";
        char *body;
        int st = get(f, path, q, &body, NULL);
        if (st != 200)
            fail_msg("%s?%s: %d %s", path, q, st, body);
        json_error_t je;
        json_t *ans = json_loads(body, 0, &je);
        if (!ans)
            fail_msg("%s: not JSON: %s", path, je.text);
        assert_int_equal(json_integer_value(json_object_get(ans, "total")), v->total);
        assert_int_equal(json_integer_value(json_object_get(ans, "matched")), v->kept_total);
        char *want, *got;
        if (which == 0) {
            char **lines = (char **)ref_functions(v);
            nf = count_lines(lines);
            want = join_sorted(lines, nf);
            got = srv_functions(ans, diff);
        } else {
            want = ref_tree(v);
            got = srv_tree(ans);
        }
        if (strcmp(want, got) != 0)
            fail_msg("%s?%s:\nCLI:\n%s\nserver:\n%s", path, q, want, got);
        if (diff) {
            json_t *b = json_object_get(ans, "base");
            assert_int_equal(json_integer_value(json_object_get(b, "total")), v->base_total);
            assert_int_equal(json_integer_value(json_object_get(b, "matched")), v->kept_base);
        }
        free(want);
        free(got);
        json_decref(ans);
        free(body);
    }
    hs_view_free(v);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
    hs_profile_free(base);
    return nf;
}

static void test_cli_matrix(void **state)
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
    static const char *const sis[] = {"", "&sample_index=alloc_space"};
    size_t runs = 0, most = 0, focused = 0;
    char fl[256];
    for (size_t g = 0; g < sizeof grans / sizeof *grans; g++)
        for (size_t i = 0; i < sizeof filters / sizeof *filters; i++)
            for (size_t k = 0; k < sizeof sis / sizeof *sis; k++) {
                snprintf(fl, sizeof fl, "%s%s%s", sis[k], grans[g], filters[i]);
                size_t n = compare(f, "svc", "", fl, false);
                most = n > most ? n : most;
                if (strcmp(filters[i], "&focus=work") == 0 && !*grans[g])
                    focused = n;
                compare(f, "svc", "&version=v2", fl, false);
                compare(f, "neg", "", fl, false);
                if (k == 1 && (i < 4 || i == 19))
                    compare(f, "svc", "", fl, true);
                runs += 3;
            }
    /* the data is not trivial: hundreds of nodes, and filters change them */
    assert_true(most > 200);
    assert_true(focused > 5 && focused < most);
    assert_true(runs > 500);
}

/* The view's errors are the server's: a sample index the profiles do not
 * have, a bad regex; an empty selection is an empty answer. */
static void test_view_errors(void **state)
{
    fx *f = *state;
    expect(f, "/api/v1/flamegraph", "service=svc&type=heap&from=now-1h&sample_index=7", 400,
           "no sample type '7' in heap profiles (alloc_space, inuse_space)", NULL);
    expect(f, "/api/v1/functions", "service=svc&type=heap&from=now-1h&focus=(", 400, "focus", NULL);
    expect(f, "/api/v1/flamegraph", "service=svc&type=heap&from=now-7200s&until=now-3600s", 200,
           "\"total\":0,\"matched\":0", "\"nodes\":[[-1,0,0,0]]", NULL);
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
        cmocka_unit_test_setup_teardown(test_cli_matrix, setup_gen, teardown_gen),
        cmocka_unit_test_setup_teardown(test_view_errors, setup_gen, teardown_gen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
