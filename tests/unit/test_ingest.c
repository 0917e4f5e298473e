/* test_ingest.c — the ingest handlers (ingest.c) and the batcher (batch.c)
 * against a temporary sqlite store, with hand-built requests: our pprof
 * upload (gzipped and plain, one gzip member or many), Pyroscope's /ingest (folded, lines, raw and
 * multipart pprof, Node.js wall+cpu), name parsing, type inference, ids and
 * idempotency, every bound refused with a 4xx leaving nothing stored,
 * concurrent submitters sharing group commits, and (against a fake store)
 * what the batcher puts: one put per batch, duplicates told apart, a refused
 * profile failing alone, an unavailable store answered 503. */
#define _GNU_SOURCE /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <time.h>

#include "ingest_util.h"
#include "server/ingest.h"
#include "store/stack.h"

#define T0 1700000000LL /* unix seconds */
#define NS 1000000000LL

static const iu_prof cpu_prof = {.types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
                                 .n_types = 2,
                                 .time_nanos = T0 * NS,
                                 .duration_nanos = 10 * NS,
                                 .n_samples = 20};

static int setup(void **state)
{
    *state = iu_env_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    iu_env_free(*state);
    return 0;
}

/* The merged totals of (service, type); n_profiles in *np. */
static void merged(ingest_env *e, const char *service, const char *type, int64_t *np, int64_t totals[4])
{
    char err[256];
    hs_store_query q = {.service = service, .type = type};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(e->st, &q, &m, err, sizeof err), 0);
    *np = m.n_profiles;
    memcpy(totals, m.totals, sizeof m.totals);
    hs_store_merged_free(&m);
}

static int has_string(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

/* The types stored for service, as "a,b". */
static void types_of(ingest_env *e, const char *service, char *out, size_t cap)
{
    char err[256], **v;
    size_t n;
    hs_store_query q = {.service = service};
    assert_int_equal(hs_store_types_of(e->st, &q, &v, &n, err, sizeof err), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", v[i]);
    hs_store_strings_free(v, n);
}

/* The C entry point, no HTTP in the way (scrape.c and `hotspur web` use
 * it): a profile stored, its retry a duplicate, bad metadata and a body
 * over the limit refused with a code and a message, nothing stored; the
 * one table from codes to HTTP statuses. */
static void test_entry_point(void **state)
{
    ingest_env *e = *state;
    size_t len;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    const char *labels[] = {"zone=a"};
    hs_ingest_meta m = {.service = "direct", .version = "1", .labels = labels, .n_labels = 1};
    hs_ingest_result r;
    assert_int_equal(hs_ingest_pprof(e->b, &e->lim, &m, gz, len, &r), HS_INGEST_OK);
    assert_int_equal(r.stored, 1);
    assert_int_equal(r.n_ids, 1);
    assert_false(r.duplicate[0]);
    char id[HS_MAX_ID + 1];
    snprintf(id, sizeof id, "%s", r.ids[0]);
    assert_int_equal(hs_ingest_pprof(e->b, &e->lim, &m, gz, len, &r), HS_INGEST_OK);
    assert_int_equal(r.stored, 0);
    assert_true(r.duplicate[0]);
    assert_string_equal(r.ids[0], id);
    assert_int_equal(iu_stored(e), 1);
    const char *bad[] = {"no_equals_sign"};
    hs_ingest_meta mb = {.service = "direct", .labels = bad, .n_labels = 1};
    assert_int_equal(hs_ingest_pprof(e->b, &e->lim, &mb, gz, len, &r), HS_INGEST_BAD);
    assert_non_null(strstr(r.msg, "label=no_equals_sign"));
    hs_ingest_meta mt = {.service = "direct", .have_from = true, .have_until = true, .from_ns = 2 * NS, .until_ns = NS};
    assert_int_equal(hs_ingest_pprof(e->b, &e->lim, &mt, gz, len, &r), HS_INGEST_BAD);
    assert_non_null(strstr(r.msg, "until is before from"));
    hs_limits small = e->lim;
    small.max_body = len - 1;
    assert_int_equal(hs_ingest_pprof(e->b, &small, &m, gz, len, &r), HS_INGEST_TOO_LARGE);
    assert_int_equal(iu_stored(e), 1);
    /* the query-parameter form: unknown parameters refused by name */
    hs_param ps[] = {{"service", "s"}, {"label", "a=b"}, {"sevrice", "x"}};
    const char *lb[3];
    assert_int_equal(hs_ingest_meta_from_params(ps, 2, &m, lb, &r), 0);
    assert_string_equal(m.service, "s");
    assert_int_equal(m.n_labels, 1);
    assert_int_equal(hs_ingest_meta_from_params(ps, 3, &m, lb, &r), HS_INGEST_BAD);
    assert_non_null(strstr(r.msg, "unknown parameter sevrice"));
    assert_int_equal(hs_ingest_http_status(HS_INGEST_OK), 200);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_BAD), 400);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_TOO_LARGE), 413);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_ENCODING), 415);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_CONFLICT), 409);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_BUSY), 503);
    assert_int_equal(hs_ingest_http_status(HS_INGEST_FAILED), 500);
    free(gz);
}

static void test_native_gzip_and_plain(void **state)
{
    ingest_env *e = *state;
    size_t len, plen;
    void *gz = iu_pprof(&cpu_prof, 1, &len), *plain = iu_pprof(&cpu_prof, 0, &plen);
    assert_non_null(gz);
    assert_non_null(plain);
    /* one gzipped (a profile this small is stored in it: no smaller), one not */
    assert_true(len > 2 && ((unsigned char *)gz)[0] == 0x1f && ((unsigned char *)gz)[1] == 0x8b);
    assert_false(plen > 2 && ((unsigned char *)plain)[0] == 0x1f && ((unsigned char *)plain)[1] == 0x8b);
    iu_req r;
    char *out;
    iu_req_init(&r, "/api/v1/ingest", "service=api&version=1.2&label=zone=eu&label=host=a", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":1"));
    assert_null(strstr(out, "duplicate"));
    free(out);
    /* the same profile, not gzipped, other labels: a second profile */
    iu_req_init(&r, "/api/v1/ingest", "service=api&version=1.2&label=zone=us", plain, plen);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":1"));
    free(out);
    assert_int_equal(iu_stored(e), 2);
    int64_t np, tot[4];
    merged(e, "api", "cpu", &np, tot);
    assert_int_equal(np, 2);
    /* samples i+1 for i < 20: 210 each, twice */
    assert_int_equal(tot[0], 2 * 210);
    assert_int_equal(tot[1], 2 * 210 * 10000000LL);
    /* time and duration from the profile */
    char err[256];
    hs_store_query q = {.service = "api", .type = "cpu"};
    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(e->st, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].start_ns, T0 * NS);
    assert_int_equal(rows[0].duration_ns, 10 * NS);
    assert_string_equal(rows[0].version, "1.2");
    hs_store_profile_rows_free(rows, n);
    /* labels */
    char **v;
    q.type = NULL;
    assert_int_equal(hs_store_label_values(e->st, &q, "zone", &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_true(has_string(v, n, "eu") && has_string(v, n, "us"));
    hs_store_strings_free(v, n);
    free(gz);
    free(plain);
}

/* gzip bodies off the one-call path: several members (their outputs
 * concatenated, as gzip -d does), trailing bytes that are not gzip
 * (ignored), a trailer whose size or CRC is wrong (refused: corrupt). */
static void test_native_gzip_members(void **state)
{
    ingest_env *e = *state;
    size_t plen, l1, l2;
    unsigned char *plain = iu_pprof(&cpu_prof, 0, &plen);
    unsigned char *g1 = iu_gzip(plain, plen / 3, &l1), *g2 = iu_gzip(plain + plen / 3, plen - plen / 3, &l2);
    assert_non_null(g1);
    assert_non_null(g2);
    unsigned char *two = malloc(l1 + l2 + 5);
    memcpy(two, g1, l1);
    memcpy(two + l1, g2, l2);
    iu_req r;
    char *out;
    iu_req_init(&r, "/api/v1/ingest", "service=m&id=two", two, l1 + l2);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":1"));
    free(out);
    memcpy(two + l1 + l2, "junk!", 5); /* not gzip: ignored */
    iu_req_init(&r, "/api/v1/ingest", "service=m&id=junk", two, l1 + l2 + 5);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    free(out);
    int64_t np, tot[4];
    merged(e, "m", "cpu", &np, tot);
    assert_int_equal(np, 2);
    assert_int_equal(tot[0], 2 * 210);
    /* one member whose trailer lies: a size one larger, then one smaller, then a wrong CRC */
    size_t gl;
    unsigned char *gz = iu_gzip(plain, plen, &gl);
    for (int k = 0; k < 3; k++) {
        unsigned char *bad = malloc(gl);
        memcpy(bad, gz, gl);
        if (k < 2)
            bad[gl - 4] = (unsigned char)(bad[gl - 4] + (k == 0 ? 1 : -1));
        else
            bad[gl - 8] ^= 0x55;
        iu_req_init(&r, "/api/v1/ingest", "service=bad", bad, gl);
        assert_int_equal(iu_call(e, 0, &r, &out), 400);
        assert_non_null(strstr(out, "gzip"));
        free(out);
        free(bad);
    }
    assert_int_equal(iu_stored(e), 2);
    free(gz);
    free(two);
    free(g1);
    free(g2);
    free(plain);
}

/* POST body to our endpoint: the status is want, the answer contains has. */
static void post_native(ingest_env *e, const char *query, const void *body, size_t len, int want, const char *has)
{
    iu_req r;
    char *out;
    iu_req_init(&r, "/api/v1/ingest", query, body, len);
    assert_int_equal(iu_call(e, 0, &r, &out), want);
    if (!strstr(out, has))
        fail_msg("%s: answered %s", query, out);
    free(out);
}

/* A large profile as hs_profile_encode writes it (a gzip member per ~2 MiB,
 * compressing more than 4x: inflated member after member into room that
 * grows) is stored whole; the limits still hold on it: the decompressed
 * size, the ratio, and a bomb cut into members. */
static void test_native_gzip_many_members(void **state)
{
    ingest_env *e = *state;
    /* 200 locations, 150 000 samples on 50 stacks 16 deep */
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    assert_int_equal(hs_profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    p->time_nanos = T0 * NS;
    p->duration_nanos = 10 * NS;
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "fn_%d", i);
        hs_line ln = {hs_profile_add_function(p, name, name, "app.c", i), 10 + i, 0};
        assert_true(hs_profile_add_location(p, 0, 0x1000 + (uint64_t)i * 16, &ln, 1) != 0);
    }
    uint64_t st[16];
    for (int i = 0; i < 150000; i++) {
        int64_t v[2] = {1, 10000000};
        for (int d = 0; d < 16; d++)
            st[d] = (uint64_t)((i % 50) * 3 + d * 7) % 200 + 1;
        assert_int_equal(hs_profile_add_sample(p, st, 16, v, NULL, 0), 0);
    }
    size_t gl, plen;
    void *gzv;
    char err[256];
    assert_int_equal(hs_profile_encode(p, &gzv, &gl, err, sizeof err), 0);
    hs_profile_free(p);
    unsigned char *gz = gzv, *plain = iu_gunzip(gz, gl, &plen);
    assert_non_null(plain);
    assert_true(plen > ((size_t)4 << 20) && plen / gl > 4);
    /* several members: the trailer's size is the last one's */
    const unsigned char *t = gz + gl - 4;
    size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    assert_true(isize < plen);
    post_native(e, "service=big", gz, gl, 200, "\"stored\":1");
    int64_t np, tot[4];
    merged(e, "big", "cpu", &np, tot);
    assert_int_equal(np, 1);
    post_native(e, "service=plain", plain, plen, 200, "");
    int64_t np2, tot2[4];
    merged(e, "plain", "cpu", &np2, tot2);
    assert_memory_equal(tot, tot2, sizeof tot);
    /* one byte over the decompressed limit; just at it */
    e->lim.max_decompressed = plen - 1;
    post_native(e, "service=big2", gz, gl, 413, "decompressed data is over the limit");
    e->lim.max_decompressed = plen;
    post_native(e, "service=big2", gz, gl, 200, "");
    hs_limits_default(&e->lim);
    /* the ratio: refused at plen / gl, taken one above */
    e->lim.max_ratio = (unsigned)(plen / gl);
    post_native(e, "service=big3", gz, gl, 413, "expands more than");
    e->lim.max_ratio = (unsigned)(plen / gl) + 1;
    post_native(e, "service=big3", gz, gl, 200, "");
    hs_limits_default(&e->lim);
    /* two members of 16 MiB of zeros each */
    size_t zl = (size_t)16 << 20, bl;
    char *zeros = calloc(1, zl);
    unsigned char *bomb = iu_gzip(zeros, zl, &bl), *two = malloc(2 * bl);
    free(zeros);
    memcpy(two, bomb, bl);
    memcpy(two + bl, bomb, bl);
    post_native(e, "service=bomb", two, 2 * bl, 413, "expands more than 100x");
    assert_int_equal(iu_stored(e), 4);
    free(bomb);
    free(two);
    free(gz);
    free(plain);
}

static void test_native_from_until_override(void **state)
{
    ingest_env *e = *state;
    size_t len;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    iu_req r;
    iu_req_init(&r, "/api/v1/ingest", "service=s&from=1700000100&until=1700000160", gz, len);
    assert_int_equal(iu_call(e, 0, &r, NULL), 200);
    char err[256];
    hs_store_query q = {.service = "s", .type = "cpu"};
    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(e->st, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].start_ns, 1700000100LL * NS);
    assert_int_equal(rows[0].duration_ns, 60 * NS);
    hs_store_profile_rows_free(rows, n);
    /* fractions, to the nanosecond (the agent sends its window so) */
    iu_req_init(&r, "/api/v1/ingest", "service=f&from=1700000100.25&until=1700000110.500000001", gz, len);
    assert_int_equal(iu_call(e, 0, &r, NULL), 200);
    q.service = "f";
    assert_int_equal(hs_store_profiles(e->st, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].start_ns, 1700000100LL * NS + 250000000);
    assert_int_equal(rows[0].duration_ns, 10 * NS + 250000001);
    hs_store_profile_rows_free(rows, n);
    /* malformed times are refused */
    static const char *const bad[] = {"from=1.", "from=.5", "from=1.0000000001", "from=1e9", "from=-1",
                                      "until=12a", "from=9000000001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char query[64];
        char *out;
        snprintf(query, sizeof query, "service=g&%s", bad[i]);
        iu_req_init(&r, "/api/v1/ingest", query, gz, len);
        assert_int_equal(iu_call(e, 0, &r, &out), 400);
        free(out);
    }
    free(gz);
}

static void test_native_idempotent(void **state)
{
    ingest_env *e = *state;
    size_t len;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    iu_req r;
    char *out;
    /* an explicit id */
    iu_req_init(&r, "/api/v1/ingest", "service=s&id=upload-0001", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "\"id\":\"upload-0001\""));
    assert_non_null(strstr(out, "\"stored\":1"));
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=s&id=upload-0001&label=x=y", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":0,\"duplicate\":true"));
    free(out);
    assert_int_equal(iu_stored(e), 1);
    /* a computed id: the same body and metadata twice */
    iu_req_init(&r, "/api/v1/ingest", "service=t", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    char id[40] = "";
    const char *p = strstr(out, "\"id\":\"");
    assert_non_null(p);
    memcpy(id, p + 6, 32);
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=t", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "duplicate"));
    assert_non_null(strstr(out, id));
    free(out);
    /* other metadata: another id */
    iu_req_init(&r, "/api/v1/ingest", "service=t&version=2", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_null(strstr(out, id));
    free(out);
    assert_int_equal(iu_stored(e), 3);
    free(gz);
    /* a profile without time_nanos is stored at its arrival, but a retry
     * is still the same upload */
    iu_prof o = cpu_prof;
    o.time_nanos = 0;
    gz = iu_pprof(&o, 1, &len);
    iu_req_init(&r, "/api/v1/ingest", "service=u", gz, len);
    assert_int_equal(iu_call(e, 0, &r, NULL), 200);
    iu_req_init(&r, "/api/v1/ingest", "service=u", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 200);
    assert_non_null(strstr(out, "duplicate"));
    free(out);
    assert_int_equal(iu_stored(e), 4);
    free(gz);
}

static void test_type_inference(void **state)
{
    ingest_env *e = *state;
    struct {
        const char *types[4][2];
        size_t n;
        const char *service, *expect;
    } cases[] = {
        {{{"samples", "count"}, {"cpu", "nanoseconds"}}, 2, "c1", "cpu"},
        {{{"samples", "count"}, {"wall", "nanoseconds"}}, 2, "c2", "wall"},
        {{{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
         4, "c3", "heap"},
        {{{"contentions", "count"}, {"delay", "nanoseconds"}}, 2, "c4", "lock"},
        {{{"goroutine", "count"}}, 1, "c5", "goroutine"},
        {{{"objects", "count"}, {"space", "bytes"}}, 2, "c6", "heap"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        iu_prof o = cpu_prof;
        memcpy(o.types, cases[i].types, sizeof o.types);
        o.n_types = cases[i].n;
        size_t len;
        void *gz = iu_pprof(&o, 1, &len);
        char q[64], got[128];
        snprintf(q, sizeof q, "service=%s", cases[i].service);
        iu_req r;
        iu_req_init(&r, "/api/v1/ingest", q, gz, len);
        assert_int_equal(iu_call(e, 0, &r, NULL), 200);
        types_of(e, cases[i].service, got, sizeof got);
        assert_string_equal(got, cases[i].expect);
        free(gz);
    }
    /* type= wins */
    size_t len;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    iu_req r;
    iu_req_init(&r, "/api/v1/ingest", "service=c7&type=itimer", gz, len);
    assert_int_equal(iu_call(e, 0, &r, NULL), 200);
    char got[64];
    types_of(e, "c7", got, sizeof got);
    assert_string_equal(got, "itimer");
    free(gz);
}

/* Every bound and malformed input: a 4xx naming the problem, nothing stored. */
static void test_bounds_rejected(void **state)
{
    ingest_env *e = *state;
    size_t len, plen;
    void *gz = iu_pprof(&cpu_prof, 1, &len), *plain = iu_pprof(&cpu_prof, 0, &plen);
    iu_req r;
    char *out;
    struct {
        const char *query, *expect;
        int status;
    } q[] = {
        {"service=s&bogus=1", "unknown parameter bogus", 400},
        {"", "missing parameter service", 400},
        {"service=s&service=t", "given twice", 400},
        {"service=s&id=has space", "id=", 400},
        {"service=s&id=0123456789012345678901234567890123", "id=", 400},
        {"service=s&from=yesterday", "from=", 400},
        {"service=s&from=200&until=100", "until is before from", 400},
        {"service=s&label=novalue", "KEY=VALUE", 400},
        {"service=s&label=bad key=1", "label name", 400},
        {"service=s&label==v", "empty name", 400},
        {"service=s&label=a=1&label=a=2", "given twice", 400},
        {"service=s&type=a/b", "type=", 400},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        iu_req_init(&r, "/api/v1/ingest", q[i].query, gz, len);
        assert_int_equal(iu_call(e, 0, &r, &out), q[i].status);
        if (!strstr(out, q[i].expect))
            fail_msg("%s: %s (expected %s)", q[i].query, out, q[i].expect);
        assert_non_null(strstr(out, "{\"error\":\""));
        free(out);
    }
    /* labels: count and length */
    e->lim.max_labels = 2;
    iu_req_init(&r, "/api/v1/ingest", "service=s&label=a=1&label=b=2&label=c=3", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    assert_non_null(strstr(out, "more than 2 labels"));
    free(out);
    e->lim.max_label_len = 8;
    iu_req_init(&r, "/api/v1/ingest", "service=s&label=a=123456789", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    free(out);
    hs_limits_default(&e->lim);
    /* sample labels are bounded too */
    iu_prof lo = cpu_prof;
    lo.with_labels = 1;
    void *lgz = iu_pprof(&lo, 1, &plen);
    e->lim.max_label_len = 5; /* "worker0" is 7 bytes */
    iu_req_init(&r, "/api/v1/ingest", "service=s", lgz, plen);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    assert_non_null(strstr(out, "label"));
    free(out);
    hs_limits_default(&e->lim);
    free(lgz);
    /* body size (http.c checks first; the handler does not trust it) */
    e->lim.max_body = len - 1;
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 413);
    free(out);
    hs_limits_default(&e->lim);
    /* decompressed size */
    e->lim.max_decompressed = 100;
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 413);
    assert_non_null(strstr(out, "decompressed"));
    free(out);
    hs_limits_default(&e->lim);
    /* a gzip bomb: 32 MiB of zeros, ~32 KiB gzipped (ratio ~1000) */
    size_t zl = (size_t)32 << 20, bl;
    char *zeros = calloc(1, zl);
    void *bomb = iu_gzip(zeros, zl, &bl);
    free(zeros);
    iu_req_init(&r, "/api/v1/ingest", "service=s", bomb, bl);
    assert_int_equal(iu_call(e, 0, &r, &out), 413);
    assert_non_null(strstr(out, "expands more than 100x"));
    free(out);
    free(bomb);
    /* stack depth and samples */
    iu_prof deep = cpu_prof;
    deep.depth_base = 40;
    void *dgz = iu_pprof(&deep, 1, &plen);
    e->lim.max_depth = 20;
    iu_req_init(&r, "/api/v1/ingest", "service=s", dgz, plen);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    assert_non_null(strstr(out, "deep"));
    free(out);
    hs_limits_default(&e->lim);
    free(dgz);
    e->lim.max_samples = 10;
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len);
    assert_int_equal(iu_call(e, 0, &r, &out), 413);
    assert_non_null(strstr(out, "samples"));
    free(out);
    hs_limits_default(&e->lim);
    /* corrupt, truncated, not pprof, empty, wrong encoding */
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len / 2);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    assert_non_null(strstr(out, "truncated gzip"));
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=s", "hello world", 11);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    assert_non_null(strstr(out, "not a pprof"));
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=s", "", 0);
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len);
    r.rq.content_encoding = "br";
    assert_int_equal(iu_call(e, 0, &r, &out), 415);
    free(out);
    iu_req_init(&r, "/api/v1/ingest", "service=s", plain, plen);
    r.rq.content_encoding = "gzip";
    assert_int_equal(iu_call(e, 0, &r, &out), 400);
    free(out);
    assert_int_equal(iu_stored(e), 0);
    /* and the store still takes a good one */
    iu_req_init(&r, "/api/v1/ingest", "service=s", gz, len);
    r.rq.content_encoding = "identity";
    assert_int_equal(iu_call(e, 0, &r, NULL), 200);
    assert_int_equal(iu_stored(e), 1);
    free(gz);
    free(plain);
}

/* ---- Pyroscope ---- */

static void test_pyro_folded(void **state)
{
    ingest_env *e = *state;
    const char *text = "main;work;leaf 3\nmain;other 2\n\nmain;work;leaf 1\n";
    iu_req r;
    char *out;
    iu_req_init(&r, "/ingest",
                "name=my.awesome.app.cpu{env=staging,region=us-west-1}&from=1700000000&until=1700000010"
                "&sampleRate=100&spyName=gospy&units=samples&aggregationType=sum",
                text, strlen(text));
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":1"));
    free(out);
    int64_t np, tot[4];
    merged(e, "my.awesome.app", "cpu", &np, tot);
    assert_int_equal(np, 1);
    assert_int_equal(tot[0], 6);
    assert_int_equal(tot[1], 6 * 10000000LL); /* 100 Hz: 10 ms a sample */
    char err[256], **v;
    size_t n;
    hs_store_query q = {.service = "my.awesome.app"};
    assert_int_equal(hs_store_label_names(e->st, &q, &v, &n, err, sizeof err), 0);
    assert_true(has_string(v, n, "env") && has_string(v, n, "region") && has_string(v, n, "pyroscope_spy"));
    hs_store_strings_free(v, n);
    hs_store_types tinfo;
    q.type = "cpu";
    assert_int_equal(hs_store_type_info(e->st, &q, &tinfo, err, sizeof err), 0);
    assert_int_equal(tinfo.n, 2);
    assert_string_equal(tinfo.type[1], "cpu");
    assert_string_equal(tinfo.unit[1], "nanoseconds");
    /* no format at all is folded too, wall at 1000 Hz, gzip Content-Encoding */
    size_t gl;
    void *gz = iu_gzip(text, strlen(text), &gl);
    iu_req_init(&r, "/ingest", "name=svc.wall&from=1700000000&until=1700000010&sampleRate=1000&format=folded", gz,
                gl);
    r.rq.content_encoding = "gzip";
    assert_int_equal(iu_call(e, 1, &r, NULL), 200);
    merged(e, "svc", "wall", &np, tot);
    assert_int_equal(tot[1], 6 * 1000000LL);
    free(gz);
    /* lines: one sample per line */
    const char *lines = "a;b;c\na;b;c\nx;y\n";
    iu_req_init(&r, "/ingest", "name=lines.cpu{}&from=1700000000&until=1700000010&format=lines", lines,
                strlen(lines));
    assert_int_equal(iu_call(e, 1, &r, NULL), 200);
    merged(e, "lines", "cpu", &np, tot);
    assert_int_equal(tot[0], 3);
    /* a non-time type keeps its own name and unit */
    iu_req_init(&r, "/ingest", "name=mem.inuse_space&from=1700000000&until=1700000010&units=bytes", text,
                strlen(text));
    assert_int_equal(iu_call(e, 1, &r, NULL), 200);
    q = (hs_store_query){.service = "mem", .type = "inuse_space"};
    assert_int_equal(hs_store_type_info(e->st, &q, &tinfo, err, sizeof err), 0);
    assert_string_equal(tinfo.type[0], "inuse_space");
    assert_string_equal(tinfo.unit[0], "bytes");
    assert_int_equal(iu_stored(e), 4);
}

static void test_pyro_folded_rejected(void **state)
{
    ingest_env *e = *state;
    struct {
        const char *query, *body, *expect;
        int status;
    } c[] = {
        {"name=a.cpu", "main;f 1.5\n", "line 1", 400},
        {"name=a.cpu", "main;f 2\nmain;g x\n", "line 2", 400},
        {"name=a.cpu", "main;f -3\n", "negative", 400},
        {"name=a.cpu", "main;f 3\n\n\nno_count\n", "line 4", 400},
        {"name=a.cpu", "", "no stacks", 400},
        {"name=a.cpu&format=trie", "x", "not supported", 415},
        {"name=a.cpu&format=jfr", "x", "not supported", 415},
        {"name=a.cpu&format=weird", "x", "unknown format", 400},
        {"name=a.cpu&sampleRate=0", "f 1\n", "sampleRate", 400},
        {"name=a.cpu&sampleRate=abc", "f 1\n", "sampleRate", 400},
        {"name=a.cpu&units=furlongs", "f 1\n", "units", 400},
        {"name=a.cpu&aggregationType=max", "f 1\n", "aggregationType", 400},
        {"name=a.cpu&spyName=a b", "f 1\n", "spyName", 400},
        {"name=a.cpu&foo=bar", "f 1\n", "unknown parameter foo", 400},
        {"name=a.cpu&from=1&from=2", "f 1\n", "given twice", 400},
        {"", "f 1\n", "missing parameter name", 400},
        {"name=app{a=b", "f 1\n", "without '}'", 400},
        {"name=bad app{}", "f 1\n", "application name", 400},
        {"name={a=b}", "f 1\n", "empty", 400},
        {"name=app{k/x=1}", "f 1\n", "tag names", 400},
        {"name=app{novalue}", "f 1\n", "without '='", 400},
        {"name=app{a=1,a=2}", "f 1\n", "given twice", 400},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        iu_req r;
        char *out;
        iu_req_init(&r, "/ingest", c[i].query, c[i].body, strlen(c[i].body));
        int st = iu_call(e, 1, &r, &out);
        if (st != c[i].status || !strstr(out, c[i].expect))
            fail_msg("%s / %s: %d %s (expected %d %s)", c[i].query, c[i].body, st, out, c[i].status,
                     c[i].expect);
        free(out);
    }
    assert_int_equal(iu_stored(e), 0);
}

static void test_pyro_names(void **state)
{
    ingest_env *e = *state;
    struct {
        const char *name, *service, *type, *label, *value;
    } c[] = {
        {"plain", "plain", "cpu", NULL, NULL},
        {"my.app", "my.app", "cpu", NULL, NULL}, /* .app is not a type: part of the name */
        {" spaced.cpu { a = 1 , b=2 }", "spaced", "cpu", "a", "1"},
        {"x.wall{}", "x", "wall", NULL, NULL},
        {"app.cpu{service_name=svc,env=prod}", "svc", "cpu", "app_name", "app"},
        {"app.cpu{env=prod}trailing", "app", "cpu", "env", "prod"},
        {"njs{otel.scope.name=com.grafana.pyroscope/nodejs}", "njs", "cpu", "otel.scope.name",
         "com.grafana.pyroscope/nodejs"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char q[256];
        snprintf(q, sizeof q, "name=%s&from=1700000000&until=1700000010", c[i].name);
        iu_req r;
        char *out;
        iu_req_init(&r, "/ingest", q, "main;f 1\n", 9);
        if (iu_call(e, 1, &r, &out) != 200)
            fail_msg("%s: %s", c[i].name, out);
        free(out);
        char got[64];
        types_of(e, c[i].service, got, sizeof got);
        assert_string_equal(got, c[i].type);
        if (c[i].label) {
            char err[256], **v;
            size_t n;
            hs_store_query sq = {.service = c[i].service};
            assert_int_equal(hs_store_label_values(e->st, &sq, c[i].label, &v, &n, err, sizeof err), 0);
            assert_int_equal(n, 1);
            assert_string_equal(v[0], c[i].value);
            hs_store_strings_free(v, n);
        }
    }
}

static void test_pyro_pprof(void **state)
{
    ingest_env *e = *state;
    size_t len, ml;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    iu_req r;
    char *out;
    /* raw body, format=pprof; the profile's time wins over from/until */
    iu_req_init(&r, "/ingest", "name=goapp.cpu{env=prod}&from=1600000000&until=1600000010&format=pprof", gz, len);
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    free(out);
    char got[64];
    types_of(e, "goapp", got, sizeof got);
    assert_string_equal(got, "cpu");
    char err[256];
    hs_store_query q = {.service = "goapp", .type = "cpu"};
    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(e->st, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].start_ns, T0 * NS);
    hs_store_profile_rows_free(rows, n);
    /* multipart as pyroscope-go sends it (no format=), with a sample_type_config */
    char *mp = iu_multipart(gz, len, "{\"samples\":{\"units\":\"samples\"}}", &ml);
    iu_req_init(&r, "/ingest", "name=goapp2.cpu&from=1700000000&until=1700000010&spyName=gospy", mp, ml);
    r.rq.content_type = "multipart/form-data; boundary=XyZb0und";
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    free(out);
    int64_t np, tot[4];
    merged(e, "goapp2", "cpu", &np, tot);
    assert_int_equal(np, 1);
    assert_int_equal(tot[0], 210);
    free(mp);
    /* a heap profile named .alloc_objects is one heap profile */
    iu_prof heap = cpu_prof;
    memcpy(heap.types,
           (const char *[4][2]){{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"},
                                {"inuse_space", "bytes"}},
           sizeof heap.types);
    heap.n_types = 4;
    void *hgz = iu_pprof(&heap, 1, &len);
    mp = iu_multipart(hgz, len, NULL, &ml);
    iu_req_init(&r, "/ingest", "name=goapp3.alloc_objects{}&from=1700000000&until=1700000010", mp, ml);
    r.rq.content_type = "multipart/form-data; boundary=\"XyZb0und\"";
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    free(out);
    types_of(e, "goapp3", got, sizeof got);
    assert_string_equal(got, "heap");
    free(mp);
    free(hgz);
    /* Go's block profile: lock's sample types, named .block_count */
    iu_prof blk = cpu_prof;
    memcpy(blk.types, (const char *[4][2]){{"contentions", "count"}, {"delay", "nanoseconds"}}, sizeof blk.types);
    void *bgz = iu_pprof(&blk, 1, &len);
    iu_req_init(&r, "/ingest", "name=goapp4.block_count&format=pprof", bgz, len);
    assert_int_equal(iu_call(e, 1, &r, NULL), 200);
    types_of(e, "goapp4", got, sizeof got);
    assert_string_equal(got, "block");
    free(bgz);
    assert_int_equal(iu_stored(e), 4);
    free(gz);
}

/* A Node.js wall profile with CPU time: stored as wall and cpu, together. */
static void test_pyro_nodejs_wall_cpu(void **state)
{
    ingest_env *e = *state;
    iu_prof o = {.types = {{"samples", "count"}, {"wall", "nanoseconds"}, {"cpu", "nanoseconds"}},
                 .n_types = 3,
                 .time_nanos = T0 * NS,
                 .duration_nanos = 10 * NS,
                 .n_samples = 12,
                 .fn_prefix = "js_"};
    size_t len, ml;
    void *plain = iu_pprof(&o, 0, &len); /* @datadog/pprof's encode: gzipped or not, both work */
    char *mp = iu_multipart(plain, len, NULL, &ml);
    iu_req r;
    char *out;
    iu_req_init(&r, "/ingest", "name=nodeapp{region=eu}&from=1700000000&until=1700000010&spyName=nodespy&sampleRate=100",
                mp, ml);
    r.rq.content_type = "multipart/form-data; boundary=XyZb0und";
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":2"));
    free(out);
    char got[64];
    types_of(e, "nodeapp", got, sizeof got);
    assert_string_equal(got, "cpu,wall");
    char err[256];
    hs_store_types t;
    hs_store_query q = {.service = "nodeapp", .type = "cpu"};
    assert_int_equal(hs_store_type_info(e->st, &q, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.type[0], "cpu");
    q.type = "wall";
    assert_int_equal(hs_store_type_info(e->st, &q, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.type[1], "wall");
    int64_t np, tot[4];
    merged(e, "nodeapp", "cpu", &np, tot);
    assert_int_equal(tot[0], 78 * 10000000LL); /* sum of 1..12 */
    /* the retry of the same upload stores nothing more */
    iu_req_init(&r, "/ingest", "name=nodeapp{region=eu}&from=1700000000&until=1700000010&spyName=nodespy&sampleRate=100",
                mp, ml);
    r.rq.content_type = "multipart/form-data; boundary=XyZb0und";
    assert_int_equal(iu_call(e, 1, &r, &out), 200);
    assert_non_null(strstr(out, "\"stored\":0,\"duplicates\":2"));
    free(out);
    assert_int_equal(iu_stored(e), 2);
    free(mp);
    free(plain);
}

static void test_pyro_multipart_rejected(void **state)
{
    ingest_env *e = *state;
    size_t len, ml;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    char *mp = iu_multipart(gz, len, "not json", &ml);
    iu_req r;
    char *out;
    struct {
        const char *ctype;
        size_t cut;
        const char *expect;
    } c[] = {
        {"multipart/form-data; boundary=XyZb0und", 0, "sample_type_config"},
        {"multipart/form-data", 0, "without a boundary"},
        {"multipart/form-data; boundary=other", 0, "without its boundary"},
        {"multipart/form-data; boundary=XyZb0und", 40, "headers"},
        {"multipart/form-data; boundary=XyZb0und", 200, "not terminated"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        iu_req_init(&r, "/ingest", "name=mp.cpu", mp, c[i].cut ? c[i].cut : ml);
        r.rq.content_type = c[i].ctype;
        int st = iu_call(e, 1, &r, &out);
        if (st != 400 || !strstr(out, c[i].expect))
            fail_msg("case %zu: %d %s (expected %s)", i, st, out, c[i].expect);
        free(out);
    }
    free(mp);
    /* an unknown part and prev_profile are refused by name */
    const char *body = "--B\r\nContent-Disposition: form-data; name=\"extra\"\r\n\r\nx\r\n--B--\r\n";
    iu_req_init(&r, "/ingest", "name=mp.cpu", body, strlen(body));
    r.rq.content_type = "multipart/form-data; boundary=B";
    assert_int_equal(iu_call(e, 1, &r, &out), 400);
    assert_non_null(strstr(out, "unknown part extra"));
    free(out);
    body = "--B\r\nContent-Disposition: form-data; name=\"prev_profile\"\r\n\r\nx\r\n--B--\r\n";
    iu_req_init(&r, "/ingest", "name=mp.cpu", body, strlen(body));
    r.rq.content_type = "multipart/form-data; boundary=B";
    assert_int_equal(iu_call(e, 1, &r, &out), 400);
    assert_non_null(strstr(out, "prev_profile"));
    free(out);
    body = "--B\r\nContent-Disposition: form-data; name=\"sample_type_config\"\r\n\r\n{}\r\n--B--\r\n";
    iu_req_init(&r, "/ingest", "name=mp.cpu", body, strlen(body));
    r.rq.content_type = "multipart/form-data; boundary=B";
    assert_int_equal(iu_call(e, 1, &r, &out), 400);
    assert_non_null(strstr(out, "no profile part"));
    free(out);
    /* at most 8 parts */
    char many[2048] = "";
    for (int i = 0; i < 9; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "--B\r\nContent-Disposition: form-data; name=\"sample_type_config\"\r\n\r\n{}\r\n");
    strcat(many, "--B--\r\n");
    iu_req_init(&r, "/ingest", "name=mp.cpu", many, strlen(many));
    r.rq.content_type = "multipart/form-data; boundary=B";
    assert_int_equal(iu_call(e, 1, &r, &out), 400);
    assert_non_null(strstr(out, "more than 8 parts"));
    free(out);
    assert_int_equal(iu_stored(e), 0);
    free(gz);
}

/* ---- the batcher under concurrency ---- */

typedef struct {
    ingest_env *e;
    int idx;
    int ok;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    iu_prof o = cpu_prof;
    o.n_samples = 5 + (size_t)w->idx % 7;
    size_t len;
    void *gz = iu_pprof(&o, 1, &len);
    for (int i = 0; i < 25; i++) {
        char q[128];
        /* ids repeat across workers: w and w^1 upload the same ids */
        snprintf(q, sizeof q, "service=conc&id=w%d-%d", w->idx / 2, i);
        iu_req r;
        iu_req_init(&r, "/api/v1/ingest", q, gz, len);
        if (iu_call(w->e, 0, &r, NULL) == 200)
            w->ok++;
    }
    free(gz);
    return NULL;
}

static void test_concurrent_group_commit(void **state)
{
    ingest_env *e = *state;
    pthread_t th[8];
    worker_arg w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker_arg){e, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, 25);
    }
    /* 4 distinct id sets of 25 */
    assert_int_equal(iu_stored(e), 100);
}

/* ---- the batcher against a fake store: what it puts, and its answers ---- */

typedef struct {
    hs_store base;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* puts wait here while hold is set; put_sizes change */
    int hold;
    int in_put, max_in_put; /* puts in flight now, at most */
    size_t put_sizes[64];  /* of the first 64 puts */
    int puts;
    size_t max_put;
    int unavailable;
    char bad_id[33];
    char ids[256][33];
    size_t n_ids;
} fake_store;

static int fake_has(fake_store *f, const char *id)
{
    for (size_t i = 0; i < f->n_ids; i++)
        if (!strcmp(f->ids[i], id))
            return 1;
    return 0;
}

static int fake_put(hs_store *s, const hs_store_profile *const *p, size_t n, unsigned char *dup, char *err,
                    size_t errlen)
{
    fake_store *f = (fake_store *)s;
    pthread_mutex_lock(&f->mu);
    if (f->puts < 64)
        f->put_sizes[f->puts] = n;
    f->puts++;
    if (n > f->max_put)
        f->max_put = n;
    if (++f->in_put > f->max_in_put)
        f->max_in_put = f->in_put;
    pthread_cond_broadcast(&f->cv);
    while (f->hold)
        pthread_cond_wait(&f->cv, &f->mu);
    f->in_put--;
    int rc = 0;
    if (f->unavailable) {
        snprintf(err, errlen, "connection refused");
        rc = HS_STORE_UNAVAILABLE;
    }
    for (size_t i = 0; i < n && !rc; i++)
        if (!strcmp(p[i]->id, f->bad_id)) {
            snprintf(err, errlen, "bad profile %s", p[i]->id);
            rc = -1;
        }
    for (size_t i = 0; i < n && !rc; i++) {
        if ((dup[i] = (unsigned char)fake_has(f, p[i]->id)) == 0)
            snprintf(f->ids[f->n_ids++], 33, "%s", p[i]->id);
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fake_profiles(hs_store *s, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                         char *err, size_t errlen)
{
    (void)limit;
    (void)err;
    (void)errlen;
    fake_store *f = (fake_store *)s;
    pthread_mutex_lock(&f->mu);
    *out = calloc(q->n_ids + 1, sizeof **out);
    *n = 0;
    for (size_t i = 0; i < q->n_ids; i++)
        if (fake_has(f, q->ids[i])) {
            snprintf((*out)[*n].id, 33, "%s", q->ids[i]);
            (*out)[(*n)++].version = strdup("");
        }
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static const hs_store_ops fake_ops = {.name = "fake", .put = fake_put, .profiles = fake_profiles};

typedef struct {
    hs_batcher *b;
    hs_store_profile prof;
    int rc;
    char err[256];
} submitter;

static void *submit_one(void *arg)
{
    submitter *s = arg;
    s->rc = hs_batcher_submit(s->b, &s->prof, s->err, sizeof s->err);
    return NULL;
}

/* n profiles submitted from n threads, announced first: one batch. */
static void submit_batch(hs_batcher *b, submitter *s, const char *const *ids, size_t n, hs_store_profile *tmpl)
{
    pthread_t th[16];
    hs_batcher_expect(b, (int)n);
    for (size_t i = 0; i < n; i++) {
        s[i] = (submitter){.b = b, .prof = *tmpl};
        snprintf(s[i].prof.id, sizeof s[i].prof.id, "%s", ids[i]);
        assert_int_equal(pthread_create(&th[i], NULL, submit_one, &s[i]), 0);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* The profile every fake submit stores: cpu_prof decomposed, service svc. */
static void fake_template(hs_profile **p, hs_stack_parts **parts, hs_store_profile *tmpl)
{
    char err[256];
    *p = iu_build(&cpu_prof);
    *tmpl = (hs_store_profile){0};
    assert_int_equal(hs_stack_decompose(*p, NULL, tmpl, parts, err, sizeof err), 0);
    tmpl->service = "svc";
    tmpl->type = "cpu";
    tmpl->version = "";
}

static void test_batcher_results(void **state)
{
    (void)state;
    fake_store f = {.base = {.ops = &fake_ops}};
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    /* the writer waits up to 5 s for announced requests: the batches below
     * are complete long before */
    hs_batcher *b = hs_batcher_new(&f.base, &(hs_store_batching){.max_profiles = 64, .wait_ms = 5000, .writers = 1});
    hs_profile *p;
    hs_stack_parts *parts;
    hs_store_profile tmpl;
    fake_template(&p, &parts, &tmpl);
    submitter s[16];

    /* 8 concurrent submits: one put of 8 */
    const char *ids1[] = {"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"};
    submit_batch(b, s, ids1, 8, &tmpl);
    for (int i = 0; i < 8; i++)
        assert_int_equal(s[i].rc, 0);
    assert_int_equal(f.puts, 1);
    assert_int_equal(f.max_put, 8);

    /* known ids and a repeat inside the batch are duplicates, the rest stored */
    const char *ids2[] = {"a1", "b1", "a2", "b2", "b2"};
    f.puts = 0;
    f.max_put = 0;
    submit_batch(b, s, ids2, 5, &tmpl);
    int dup_b2 = 0;
    assert_int_equal(s[0].rc, 1);
    assert_int_equal(s[1].rc, 0);
    assert_int_equal(s[2].rc, 1);
    dup_b2 = s[3].rc + s[4].rc; /* one of the two is stored, the other a duplicate */
    assert_int_equal(dup_b2, 1);
    assert_int_equal(f.puts, 1);
    assert_int_equal(f.max_put, 5); /* one put: the store tells which were duplicates */
    assert_int_equal(f.n_ids, 10);

    /* a profile the store refuses fails alone: the others are stored */
    snprintf(f.bad_id, sizeof f.bad_id, "c3");
    const char *ids3[] = {"c1", "c2", "c3", "c4"};
    f.puts = 0;
    submit_batch(b, s, ids3, 4, &tmpl);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s[i].rc, i == 2 ? -1 : 0);
    assert_non_null(strstr(s[2].err, "bad profile c3"));
    assert_int_equal(f.puts, 1 + 4); /* the batch, then one put per request */
    assert_int_equal(f.n_ids, 13);

    /* an unavailable store fails every request of the batch with its code */
    f.unavailable = 1;
    const char *ids4[] = {"d1", "d2"};
    submit_batch(b, s, ids4, 2, &tmpl);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s[i].rc, HS_STORE_UNAVAILABLE);
        assert_non_null(strstr(s[i].err, "connection refused"));
    }
    /* and the handler answers 503 with Retry-After */
    size_t len;
    void *gz = iu_pprof(&cpu_prof, 1, &len);
    hs_limits lim;
    hs_limits_default(&lim);
    iu_req r;
    iu_req_init(&r, "/api/v1/ingest", "service=svc", gz, len);
    hs_http_response rs = {0};
    assert_int_equal(hs_ingest_native(b, &lim, &r.rq, &rs), 503);
    assert_string_equal(rs.extra_header, "Retry-After: 1");
    assert_non_null(strstr(rs.body, "retry"));
    free(rs.body);
    assert_int_equal(f.n_ids, 13);
    f.unavailable = 0;
    memset(&rs, 0, sizeof rs);
    assert_int_equal(hs_ingest_native(b, &lim, &r.rq, &rs), 200);
    free(rs.body);
    assert_int_equal(f.n_ids, 14);

    hs_batcher_free(b);
    free(gz);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
    pthread_mutex_destroy(&f.mu);
}

/* Wait (f->mu held) until the fake has seen `puts` puts. */
static void fake_wait_puts(fake_store *f, int puts)
{
    while (f->puts < puts)
        pthread_cond_wait(&f->cv, &f->mu);
}

static void start_submit(pthread_t *th, submitter *s, hs_batcher *b, const hs_store_profile *tmpl, const char *id)
{
    *s = (submitter){.b = b, .prof = *tmpl};
    snprintf(s->prof.id, sizeof s->prof.id, "%s", id);
    assert_int_equal(pthread_create(th, NULL, submit_one, s), 0);
}

/* Wait (at most 30 s) until n profiles are queued that no writer took. */
static void wait_queued(hs_batcher *b, size_t n)
{
    for (int i = 0; i < 3000 && hs_batcher_queued(b) != n; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(hs_batcher_queued(b), n);
}

/* Several writers and the window: while a put is in flight, the next
 * batch grows (no second put of a few profiles at once) until the window
 * is over; then it goes beside the first (two puts in flight). */
static void test_batcher_writers(void **state)
{
    (void)state;
    fake_store f = {.base = {.ops = &fake_ops}};
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    hs_profile *p;
    hs_stack_parts *parts;
    hs_store_profile tmpl;
    fake_template(&p, &parts, &tmpl);
    submitter s[8];
    pthread_t th[8];

    /* 1. a window far longer than the test: the first put is held; four
     * uploads that come meanwhile (none announced) wait for it to end and
     * then go as one put, not as four, though a second writer is idle */
    hs_batcher *b = hs_batcher_new(&f.base, &(hs_store_batching){.max_profiles = 64, .wait_ms = 10000, .writers = 2});
    assert_non_null(b);
    pthread_mutex_lock(&f.mu);
    f.hold = 1;
    pthread_mutex_unlock(&f.mu);
    start_submit(&th[0], &s[0], b, &tmpl, "w0");
    pthread_mutex_lock(&f.mu);
    fake_wait_puts(&f, 1);
    pthread_mutex_unlock(&f.mu);
    for (int i = 1; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof id, "w%d", i);
        start_submit(&th[i], &s[i], b, &tmpl, id);
    }
    wait_queued(b, 4);
    pthread_mutex_lock(&f.mu);
    assert_int_equal(f.puts, 1); /* still only the held one */
    f.hold = 0;
    pthread_cond_broadcast(&f.cv);
    fake_wait_puts(&f, 2);
    pthread_mutex_unlock(&f.mu);
    for (int i = 0; i < 5; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(s[i].rc, 0);
    }
    assert_int_equal(f.puts, 2);
    assert_int_equal(f.put_sizes[0], 1);
    assert_int_equal(f.put_sizes[1], 4);
    assert_int_equal(f.max_in_put, 1);
    hs_batcher_free(b);

    /* 2. a short window (50 ms): the uploads that come while the first put
     * is held go once it is over, beside it — two puts in flight */
    f.puts = 0;
    f.max_in_put = 0;
    b = hs_batcher_new(&f.base, &(hs_store_batching){.max_profiles = 64, .wait_ms = 50, .writers = 2});
    assert_non_null(b);
    pthread_mutex_lock(&f.mu);
    f.hold = 1;
    pthread_mutex_unlock(&f.mu);
    start_submit(&th[0], &s[0], b, &tmpl, "x0");
    pthread_mutex_lock(&f.mu);
    fake_wait_puts(&f, 1);
    pthread_mutex_unlock(&f.mu);
    start_submit(&th[1], &s[1], b, &tmpl, "x1");
    pthread_mutex_lock(&f.mu);
    fake_wait_puts(&f, 2); /* would wait forever with one writer */
    assert_int_equal(f.max_in_put, 2);
    f.hold = 0;
    pthread_cond_broadcast(&f.cv);
    pthread_mutex_unlock(&f.mu);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(s[i].rc, 0);
    }
    hs_batcher_free(b);

    /* 2b. min_parallel 2, a window far longer than the test: two uploads
     * that come while the first put is held go beside it at once */
    f.puts = 0;
    f.max_in_put = 0;
    b = hs_batcher_new(&f.base,
                       &(hs_store_batching){.max_profiles = 64, .wait_ms = 10000, .writers = 2, .min_parallel = 2});
    assert_non_null(b);
    pthread_mutex_lock(&f.mu);
    f.hold = 1;
    pthread_mutex_unlock(&f.mu);
    start_submit(&th[0], &s[0], b, &tmpl, "m0");
    pthread_mutex_lock(&f.mu);
    fake_wait_puts(&f, 1);
    pthread_mutex_unlock(&f.mu);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start_submit(&th[1], &s[1], b, &tmpl, "m1");
    start_submit(&th[2], &s[2], b, &tmpl, "m2");
    pthread_mutex_lock(&f.mu);
    fake_wait_puts(&f, 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* well before the 10 s window (it would go only then without min_parallel) */
    assert_true(t1.tv_sec - t0.tv_sec < 8);
    assert_int_equal(f.max_in_put, 2);
    assert_int_equal(f.put_sizes[1], 2);
    f.hold = 0;
    pthread_cond_broadcast(&f.cv);
    pthread_mutex_unlock(&f.mu);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(s[i].rc, 0);
    }
    hs_batcher_free(b);

    /* 3. linger: uploads that come one after the other, none announced,
     * within the window (2 s) are one put; without linger the first would
     * have gone alone */
    f.puts = 0;
    b = hs_batcher_new(&f.base,
                       &(hs_store_batching){.max_profiles = 64, .wait_ms = 2000, .writers = 1, .linger = 1});
    assert_non_null(b);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "y%d", i);
        start_submit(&th[i], &s[i], b, &tmpl, id);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(s[i].rc, 0);
    }
    assert_int_equal(f.puts, 1);
    assert_int_equal(f.put_sizes[0], 3);
    hs_batcher_free(b);

    /* 4. stopping while writers wait and one gathers: every queued upload
     * is stored, and free returns */
    f.puts = 0;
    b = hs_batcher_new(&f.base, &(hs_store_batching){.max_profiles = 64, .wait_ms = 10000, .writers = 3, .linger = 1});
    assert_non_null(b);
    start_submit(&th[0], &s[0], b, &tmpl, "z0");
    wait_queued(b, 1);
    hs_batcher_free(b);
    pthread_join(th[0], NULL);
    assert_int_equal(s[0].rc, 0);
    assert_int_equal(f.puts, 1);

    hs_stack_parts_free(parts);
    hs_profile_free(p);
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_entry_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_gzip_and_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_gzip_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_gzip_many_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_from_until_override, setup, teardown),
        cmocka_unit_test_setup_teardown(test_native_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_type_inference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_folded_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_pprof, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_nodejs_wall_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pyro_multipart_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_group_commit, setup, teardown),
        cmocka_unit_test(test_batcher_results),
        cmocka_unit_test(test_batcher_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
