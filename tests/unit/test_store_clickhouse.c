/* test_store_clickhouse.c — what only the ClickHouse backend has to get
 * right, against a real server (tests/integration/store_clickhouse.sh
 * starts one and runs this with HS_CH_TEST_HOSTS=127.0.0.1:PORT[,...],
 * optionally HS_CH_TEST_CLUSTER=NAME, and HS_CH_TEST_STOP / _START, shell
 * commands that stop and restart the first server). Without
 * HS_CH_TEST_HOSTS every test is skipped (cmocka reports SKIPPED); the
 * backend-agnostic behaviour is tests/unit/test_store.c's.
 * HS_CH_TEST_PART=rollups runs only the merges' tests (rollup ... zero_stack
 * below), HS_CH_TEST_PART=basic only the others, unset every test: the
 * script runs the two parts as ctest tests of their own.
 *
 *   copies              a second complete copy of a profile (two serve
 *                       instances racing with one id) is invisible to
 *                       merges (filtered or not), series, profiles, stats;
 *   concurrent_same_id  8 threads putting one id at once: stored once;
 *   retention           whole days dropped as partitions (stacks only their
 *                       profiles used with them), the boundary day's older
 *                       profiles hidden at once;
 *   rollup              merges read whole hours from the rollup, the rest
 *                       from the samples, with the samples' own answer;
 *                       an inconsistent rollup is not read;
 *   rollup_complement   a range holding most of an hour at an end reads
 *                       it from the rollup minus the samples outside:
 *                       exact, without the stacks only those have;
 *   filtered            merges by versions, labels, both: the exact
 *                       answer, read from the version and label rollups and through
 *                       the series table, neither read when inconsistent;
 *   day_rollups         merges by labels and versions reading whole days
 *                       from the series and daily version rollups: the
 *                       exact answer, neither read when inconsistent;
 *   label_rollup_added  the label rollup created in a database without
 *                       it, and a profile stored without labelled samples
 *                       (by the previous hotspur): merges stay exact;
 *   zero_stack          a stack whose values are all 0 is in the answer
 *                       from the rollups too, after their parts merged;
 *   feed                the rollups filled rollup_delay after a put (the
 *                       merges exact meanwhile), at once by retention and
 *                       on close;
 *   feed_migration      an older hotspur's views (reading samples)
 *                       replaced on open, nothing counted twice;
 *   old_schema          a database of an older hotspur is refused at open;
 *   quoting             quotes, backslashes, control bytes in every string;
 *   big_put             one put of 300 profiles and 15000 new stacks (more
 *                       than one query may list): all stored, all found;
 *   unreachable         nothing listening: HS_STORE_UNAVAILABLE, at once;
 *   slow                a server that never answers: UNAVAILABLE after the
 *                       URL's timeout, with a message saying so;
 *   recovery            ClickHouse stopped and restarted under one open
 *                       store (and one opened while it was down): puts and
 *                       queries fail with UNAVAILABLE, then work again;
 *   bad_urls            URL errors are reported at open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/stack.h"
#include "store/store.h"

#define SEC 1000000000LL
#define DAY (86400 * SEC)

static const char *hosts(void) { return getenv("HS_CH_TEST_HOSTS"); }

#define NEED_SERVER()                                                                     \
    do {                                                                                  \
        if (!hosts() || !*hosts()) {                                                      \
            print_message("no HS_CH_TEST_HOSTS: run tests/integration/store_clickhouse.sh\n"); \
            skip();                                                                       \
        }                                                                                 \
    } while (0)

/* The store URL of database db on the test server(s), with the options
 * opts ("A=B&C=D"); rollup_delay=0 unless opts say otherwise (the rollups
 * filled within each put, so the tests see them at once; test_feed has
 * the delay). */
static void url_with(char *out, size_t len, const char *db, const char *opts)
{
    const char *cl = getenv("HS_CH_TEST_CLUSTER");
    snprintf(out, len, "clickhouse://%s/%s?%s%s%s%s", hosts(), db, cl && *cl ? "cluster=" : "", cl && *cl ? cl : "",
             cl && *cl ? "&" : "", strstr(opts, "rollup_delay=") ? "" : "rollup_delay=0&");
    size_t n = strlen(out);
    snprintf(out + n, len - n, "%s", opts);
}

/* (the label rollup holds the key zone; url_of: read whatever the number
 * of profiles per hour, label_rollup_min=0; url_default_of: its default) */
static void url_default_of(char *out, size_t len, const char *db) { url_with(out, len, db, "rollup_labels=zone"); }

static void url_of(char *out, size_t len, const char *db)
{
    url_with(out, len, db, "rollup_labels=zone&label_rollup_min=0");
}

static void drop_db(const char *db);

/* A store on database db, emptied first (a failed earlier run may have
 * left it behind). */
static hs_store *open_db(const char *db)
{
    drop_db(db);
    char url[512], err[512] = "";
    url_of(url, sizeof url, db);
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    return s;
}

/* ---- raw SQL ---- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    char **b = arg;
    size_t old = *b ? strlen(*b) : 0, len = size * n;
    char *nb = realloc(*b, old + len + 1);
    if (!nb)
        return 0;
    memcpy(nb + old, p, len);
    nb[old + len] = 0;
    *b = nb;
    return len;
}

static size_t n_hosts(void)
{
    size_t n = 1;
    for (const char *h = hosts(); *h; h++)
        n += *h == ',';
    return n;
}

/* Run sql on host i (0: the first); the answer (malloc'd, TSV) or a test
 * failure. Inserts into Distributed tables are synchronous. */
static char *sql_on(size_t i, const char *q)
{
    char url[256];
    const char *h = hosts();
    while (i-- && strchr(h, ','))
        h = strchr(h, ',') + 1;
    size_t n = strcspn(h, ",");
    snprintf(url, sizeof url, "http://%.*s/?insert_distributed_sync=1", (int)n, h);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char *body = NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, q);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK || status != 200)
        fail_msg("SQL %s: %s %s", q, curl_easy_strerror(cc), body ? body : "");
    if (!body)
        body = strdup("");
    return body;
}

static char *sql(const char *q) { return sql_on(0, q); }

static long long sql_int(const char *q)
{
    char *a = sql(q);
    long long v = strtoll(a, NULL, 10);
    free(a);
    return v;
}

/* The sum of an integer answer over every host. */
static long long sql_int_all(const char *q)
{
    long long v = 0;
    for (size_t i = 0; i < n_hosts(); i++) {
        char *a = sql_on(i, q);
        v += strtoll(a, NULL, 10);
        free(a);
    }
    return v;
}

/* ---- profiles ---- */

/* Three stacks: main;work;leaf, main;work, main;other. */
typedef struct {
    void *rec[3];
    size_t len[3];
    hs_store_stack st[3];
} stacks3;

static void make_stacks(stacks3 *s, const char *tag)
{
    char err[256];
    hs_stack_frame f[3] = {{.function = "leaf", .file = "a.c", .line = 3},
                           {.function = "work", .file = "a.c", .line = 7},
                           {.function = "main", .file = "a.c", .line = 9}};
    hs_stack_frame other[2] = {{.function = tag, .file = "b.c", .line = 1},
                               {.function = "main", .file = "a.c", .line = 9}};
    assert_int_equal(hs_stack_encode(f, 3, NULL, 0, &s->rec[0], &s->len[0], err, sizeof err), 0);
    assert_int_equal(hs_stack_encode(f + 1, 2, NULL, 0, &s->rec[1], &s->len[1], err, sizeof err), 0);
    assert_int_equal(hs_stack_encode(other, 2, NULL, 0, &s->rec[2], &s->len[2], err, sizeof err), 0);
    for (int i = 0; i < 3; i++)
        s->st[i] = (hs_store_stack){hs_stack_hash(s->rec[i], s->len[i]), s->rec[i], s->len[i]};
}

static void free_stacks(stacks3 *s)
{
    for (int i = 0; i < 3; i++)
        free(s->rec[i]);
}

typedef struct {
    hs_store_profile p;
    hs_store_sample samples[3];
    hs_store_label labels[2];
} test_profile;

/* A cpu profile of service svc: stack i has values (i+1, (i+1)*k); the
 * "other" stack only when with_other. */
static void make_profile(test_profile *t, const stacks3 *s, const char *id, const char *svc, int64_t start,
                         int64_t k, int with_other)
{
    memset(t, 0, sizeof *t);
    snprintf(t->p.id, sizeof t->p.id, "%s", id);
    t->p.service = svc;
    t->p.type = "cpu";
    t->p.version = "v1";
    t->labels[0] = (hs_store_label){"instance", "i-1"};
    t->labels[1] = (hs_store_label){"zone", "z1"};
    t->p.labels = t->labels;
    t->p.n_labels = 2;
    t->p.start_ns = start;
    t->p.duration_ns = 10 * SEC;
    t->p.types = (hs_store_types){2, {"samples", "cpu"}, {"count", "nanoseconds"}, 1, "cpu", "nanoseconds", 10000000};
    size_t n = with_other ? 3 : 2;
    for (size_t i = 0; i < n; i++) {
        t->samples[i] = (hs_store_sample){s->st[i].hash, {(int64_t)i + 1, ((int64_t)i + 1) * k}};
        t->p.totals[0] += (int64_t)i + 1;
        t->p.totals[1] += ((int64_t)i + 1) * k;
    }
    t->p.samples = t->samples;
    t->p.n_samples = n;
    t->p.stacks = s->st;
    t->p.n_stacks = n;
}

static int put1(hs_store *s, const hs_store_profile *p, size_t *dups, char *err, size_t errlen)
{
    const hs_store_profile *pp[1] = {p};
    return hs_store_put(s, pp, 1, dups, err, errlen);
}

static void expect_put(hs_store *s, const hs_store_profile *p, size_t want_dups)
{
    char err[512] = "";
    size_t d = 99;
    int rc = put1(s, p, &d, err, sizeof err);
    if (rc)
        fail_msg("put %s: %d %s", p->id, rc, err);
    assert_int_equal(d, want_dups);
}

static int64_t merged_value(const hs_store_merged *m, uint64_t stack, int v)
{
    for (size_t i = 0; i < m->n_rows; i++)
        if (m->rows[i].stack == stack)
            return m->rows[i].values[v];
    return -1;
}

static void drop_db(const char *db)
{
    char q[256];
    /* In a cluster the tables live on every shard: drop them on each. */
    snprintf(q, sizeof q, "DROP DATABASE IF EXISTS %s", db);
    for (size_t i = 0; i < n_hosts(); i++)
        free(sql_on(i, q));
}

/* ---- tests ---- */

/* *s closed and opened again on db (not emptied): a store that has
 * looked up a filter's series, or found days complete, trusts them while
 * samples holds the same rows in those days (ch_merge); rows a test
 * writes to the series tables alone are seen by a store opened since. */
static void reopen(hs_store **s, const char *db)
{
    char url[512], err[512] = "";
    hs_store_close(*s);
    url_of(url, sizeof url, db);
    *s = hs_store_open(url, err, sizeof err);
    if (!*s)
        fail_msg("open %s: %s", url, err);
}

/* A second store on database db (open_db first) that never reads the
 * rollups nor the series table (?rollup=0): every merge the exact way. */
static hs_store *open_exact(const char *db)
{
    char url[600], err[512] = "";
    url_of(url, sizeof url - 16, db);
    strcat(url, strchr(url, '?') ? "&rollup=0" : "?rollup=0");
    hs_store *raw = hs_store_open(url, err, sizeof err);
    if (!raw)
        fail_msg("open %s: %s", url, err);
    return raw;
}

static void test_copies(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_copies";
    hs_store *s = open_db(db);
    stacks3 st;
    make_stacks(&st, "other");
    test_profile a, b;
    int64_t t0 = 1700000000 * SEC;
    make_profile(&a, &st, "copied", "svc", t0, 10, 1);
    make_profile(&b, &st, "plain", "svc", t0 + 60 * SEC, 100, 0);
    expect_put(s, &a.p, 0);
    expect_put(s, &b.p, 0);
    /* A second complete copy of "copied" with another token and values
     * that would show if it were counted. */
    char q[2048];
    snprintf(q, sizeof q,
             "INSERT INTO %s.samples SELECT day, rowtype, kind, start_ns, ins + 7, stack, v0 * 1000, v1 * 1000, v2, "
             "v3, pid, id, service, type, version, label_keys, label_values, duration_ns, sample_types, "
             "sample_units, default_index, period_type, period_unit, period, sid FROM %s.samples WHERE ins GLOBAL IN "
             "(SELECT ins FROM %s.samples WHERE rowtype = 0 AND id = 'copied')",
             db, db, db);
    free(sql(q));
    snprintf(q, sizeof q, "SELECT count() FROM %s.samples WHERE rowtype = 0 AND id = 'copied'", db);
    assert_int_equal(sql_int(q), 2); /* the copy is really there */

    char err[512] = "";
    hs_store_query sel = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    /* Exactly one of the two copies: either the original's values or the
     * copy's, never their sum, with and without version and label
     * filters, over every profile and over whole hours (a rollup's range;
     * it summed both copies), as every way a merge selects rows excludes
     * copies. */
    hs_store_label zone = {"zone", "z1"};
    const char *v1[1] = {"v1"};
    for (int f = 0; f < 8; f++) {
        sel.labels = f & 1 ? &zone : NULL;
        sel.n_labels = f & 1 ? 1 : 0;
        sel.versions = f & 2 ? v1 : NULL;
        sel.n_versions = f & 2 ? 1 : 0;
        sel.from_ns = f & 4 ? t0 / (3600 * SEC) * 3600 * SEC : 0;
        sel.until_ns = f & 4 ? sel.from_ns + 2 * 3600 * SEC : 0;
        assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
        assert_int_equal(m.n_profiles, 2);
        int64_t leaf = merged_value(&m, st.st[0].hash, 1), other = merged_value(&m, st.st[2].hash, 1);
        assert_true(leaf == 10 + 100 || leaf == 10000 + 100);
        assert_true(other == 30 || other == 30000);
        assert_true(m.totals[1] == 60 + 300 || m.totals[1] == 60000 + 300);
        /* The totals and the rows come from the same copy. */
        assert_int_equal(m.totals[1] - 300 == 60, leaf == 110);
        hs_store_merged_free(&m);
    }
    sel = (hs_store_query){.service = "svc", .type = "cpu"};

    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(s, &sel, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].id, "copied");
    assert_string_equal(rows[1].id, "plain");
    hs_store_profile_rows_free(rows, n);

    hs_store_point *pts;
    sel.from_ns = t0;
    sel.until_ns = t0 + 3600 * SEC;
    assert_int_equal(hs_store_series(s, &sel, 3600 * SEC, &pts, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pts[0].n_profiles, 2);
    /* The totals of one copy (the smallest token's, as the merges choose:
     * the original's unless ins + 7 wrapped), found by the probe and the
     * losers as by the exact way (?rollup=0: a copy per id chosen by id),
     * with the points of the two profiles in buckets of their own too. */
    assert_true(pts[0].totals[1] == 60 + 300 || pts[0].totals[1] == 60000 + 300);
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
    assert_int_equal(pts[0].totals[1], m.totals[1]);
    hs_store_merged_free(&m);
    hs_store *raw = open_exact(db);
    for (int step = 0; step < 2; step++) {
        hs_store_point *ex;
        size_t nex;
        int64_t st_ns = step ? 30 * SEC : 3600 * SEC;
        if (step) {
            free(pts);
            assert_int_equal(hs_store_series(s, &sel, st_ns, &pts, &n, err, sizeof err), 0);
            assert_int_equal(n, 2);
            assert_true(pts[0].t_ns < pts[1].t_ns);
        }
        assert_int_equal(hs_store_series(raw, &sel, st_ns, &ex, &nex, err, sizeof err), 0);
        assert_int_equal(nex, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(pts[i].t_ns, ex[i].t_ns);
            assert_int_equal(pts[i].n_profiles, ex[i].n_profiles);
            for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
                assert_int_equal(pts[i].totals[v], ex[i].totals[v]);
        }
        free(ex);
    }
    hs_store_close(raw);
    free(pts);

    hs_store_stats stt;
    assert_int_equal(hs_store_stats_get(s, &stt, err, sizeof err), 0);
    assert_int_equal(stt.profiles, 2);
    assert_int_equal(stt.samples, 5); /* 3 + 2, the copy's not counted */
    assert_int_equal(stt.stacks, 3);
    assert_true(stt.bytes > 0);

    /* A retried put of either id is a duplicate. */
    expect_put(s, &a.p, 1);
    expect_put(s, &b.p, 1);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

typedef struct {
    hs_store *s;
    const hs_store_profile *p;
    pthread_barrier_t *go;
    int rc;
    size_t dups;
    char err[256];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = put1(r->s, r->p, &r->dups, r->err, sizeof r->err);
    return NULL;
}

static void test_concurrent_same_id(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_race";
    enum { N = 8 };
    hs_store *s = open_db(db);
    stacks3 st;
    make_stacks(&st, "other");
    test_profile a;
    make_profile(&a, &st, "raced", "svc", 1700000000 * SEC, 10, 1);
    pthread_barrier_t go;
    assert_int_equal(pthread_barrier_init(&go, NULL, N), 0);
    racer r[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        r[i] = (racer){.s = s, .p = &a.p, .go = &go};
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    size_t stored = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        if (r[i].rc)
            fail_msg("put: %s", r[i].err);
        stored += r[i].dups == 0;
    }
    pthread_barrier_destroy(&go);
    assert_true(stored >= 1);
    char q[256], err[512] = "";
    snprintf(q, sizeof q, "SELECT count() FROM %s.samples WHERE rowtype = 0 AND id = 'raced'", db);
    long long copies = sql_int(q); /* via the Distributed table in a cluster */
    print_message("concurrent puts of one id: %zu of %d reported stored, %lld copies in ClickHouse\n", stored, N,
                  copies);
    assert_int_equal(copies, (long long)stored);
    hs_store_query sel = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 1);
    assert_int_equal(m.totals[1], 60);
    assert_int_equal(merged_value(&m, st.st[0].hash, 1), 10);
    assert_int_equal(merged_value(&m, st.st[2].hash, 1), 30);
    hs_store_merged_free(&m);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

static long long parts_of_day(const char *db, const char *table, const char *yyyymmdd)
{
    char q[512];
    const char *cl = getenv("HS_CH_TEST_CLUSTER");
    snprintf(q, sizeof q,
             "SELECT count() FROM system.parts WHERE active AND database = '%s' AND table = '%s%s' AND "
             "partition_id = '%s'",
             db, table, cl && *cl ? "_local" : "", yyyymmdd);
    return sql_int_all(q);
}

static void test_retention(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_retain";
    hs_store *s = open_db(db);
    stacks3 st, st2;
    make_stacks(&st, "other");
    make_stacks(&st2, "only_early"); /* a stack only the early profile uses */
    /* Day 19675 is 2023-11-14. d1 noon; d2 03:00 and 12:00; d3 noon. */
    int64_t d1 = 19675 * DAY, d2 = d1 + DAY, d3 = d2 + DAY;
    test_profile p1, p2a, p2b, p3;
    make_profile(&p1, &st, "day1", "svc", d1 + 12 * 3600 * SEC, 1, 1);
    make_profile(&p2a, &st2, "day2-early", "svc", d2 + 3 * 3600 * SEC, 10, 1);
    make_profile(&p2b, &st, "day2-late", "svc", d2 + 12 * 3600 * SEC, 100, 0);
    make_profile(&p3, &st, "day3", "svc", d3 + 12 * 3600 * SEC, 1000, 1);
    const hs_store_profile *all[4] = {&p1.p, &p2a.p, &p2b.p, &p3.p};
    char err[512] = "";
    size_t d;
    assert_int_equal(hs_store_put(s, all, 4, &d, err, sizeof err), 0);
    assert_true(parts_of_day(db, "samples", "20231114") > 0);
    assert_true(parts_of_day(db, "rollup", "20231114") > 0);
    assert_true(parts_of_day(db, "rollup_label", "20231114") > 0);
    hs_store_stats before;
    assert_int_equal(hs_store_stats_get(s, &before, err, sizeof err), 0);
    assert_int_equal(before.profiles, 4);
    assert_int_equal(before.stacks, 4); /* 3 shared + only_early's "other" */
    /* A second instance on the database merges before the retention (it
     * keeps the watermark its merge saw) and after it: it sees the new
     * watermark at once. */
    char url[512];
    url_of(url, sizeof url, db);
    hs_store *other = hs_store_open(url, err, sizeof err);
    if (!other)
        fail_msg("open %s: %s", url, err);
    hs_store_query sel = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(other, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 4);
    hs_store_merged_free(&m);

    if (hs_store_retain(s, d2 + 6 * 3600 * SEC, err, sizeof err))
        fail_msg("retain: %s", err);
    /* Day 1 is gone as partitions, day 2 lost its early profile. */
    assert_int_equal(parts_of_day(db, "samples", "20231114"), 0);
    assert_int_equal(parts_of_day(db, "stacks", "20231114"), 0);
    assert_int_equal(parts_of_day(db, "rollup", "20231114"), 0);
    assert_int_equal(parts_of_day(db, "rollup_label", "20231114"), 0);
    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(s, &sel, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].id, "day2-late");
    assert_string_equal(rows[1].id, "day3");
    hs_store_profile_rows_free(rows, n);
    hs_store_stats after;
    assert_int_equal(hs_store_stats_get(s, &after, err, sizeof err), 0);
    assert_int_equal(after.profiles, 2);
    assert_int_equal(after.samples, 2 + 3);
    assert_true(after.bytes < before.bytes);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(hs_store_merge(k ? other : s, &sel, &m, err, sizeof err), 0);
        assert_int_equal(m.n_profiles, 2);
        assert_int_equal(m.totals[1], 100 * 3 + 1000 * 6);
        assert_int_equal(merged_value(&m, st2.st[2].hash, 1), -1);
        hs_store_merged_free(&m);
    }
    char **v;
    assert_int_equal(hs_store_label_values(s, &sel, "instance", &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    hs_store_strings_free(v, n);
    /* A later retention drops day 2 with the stack only its early profile
     * used; a retention older than the last one changes nothing. */
    assert_int_equal(hs_store_retain(s, d3, err, sizeof err), 0);
    assert_int_equal(hs_store_retain(s, d1, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(hs_store_merge(k ? other : s, &sel, &m, err, sizeof err), 0);
        assert_int_equal(m.n_profiles, 1);
        assert_int_equal(m.totals[1], 1000 * 6);
        hs_store_merged_free(&m);
    }
    hs_store_close(other);
    assert_int_equal(hs_store_stats_get(s, &after, err, sizeof err), 0);
    assert_int_equal(after.profiles, 1);
    assert_int_equal(after.stacks, 3);
    assert_int_equal(parts_of_day(db, "samples", "20231115"), 0);
    assert_int_equal(parts_of_day(db, "stacks", "20231115"), 0);
    assert_int_equal(hs_store_profiles(s, &sel, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].id, "day3");
    hs_store_profile_rows_free(rows, n);
    hs_store_close(s);
    free_stacks(&st);
    free_stacks(&st2);
    drop_db(db);
}

static int row_cmp(const void *a, const void *b)
{
    const hs_store_row *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The merge of q by store a and by store b are the same; returns a's. */
static void same_merge(hs_store *a, hs_store *b, const hs_store_query *q, hs_store_merged *ma)
{
    char err[512] = "";
    hs_store_merged mb;
    if (hs_store_merge(a, q, ma, err, sizeof err) || hs_store_merge(b, q, &mb, err, sizeof err))
        fail_msg("merge: %s", err);
    assert_int_equal(ma->n_profiles, mb.n_profiles);
    for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
        assert_int_equal(ma->totals[v], mb.totals[v]);
    assert_int_equal(ma->min_start_ns, mb.min_start_ns);
    assert_int_equal(ma->max_end_ns, mb.max_end_ns);
    assert_int_equal(ma->n_rows, mb.n_rows);
    if (ma->n_rows) { /* (rows may be NULL when there are none) */
        qsort(ma->rows, ma->n_rows, sizeof *ma->rows, row_cmp);
        qsort(mb.rows, mb.n_rows, sizeof *mb.rows, row_cmp);
    }
    for (size_t i = 0; i < ma->n_rows; i++) {
        assert_true(ma->rows[i].stack == mb.rows[i].stack);
        for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
            assert_int_equal(ma->rows[i].values[v], mb.rows[i].values[v]);
    }
    hs_store_merged_free(&mb);
}

/* Retention compacts finished days: after profiles of a past day put one
 * at a time (a part each in every table), a retention with nothing to
 * drop leaves that day one part per host in each table merges read whole
 * (the rollups, series, profiles, stacks); merges answer as the exact
 * way's before and after. (ClickHouse skips a partition a background
 * merge is merging at that moment: the next retention takes it, so the
 * test asks a few times.) */
static void test_compaction(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_compact";
    hs_store *s = open_db(db), *raw = open_exact(db);
    stacks3 st;
    make_stacks(&st, "other");
    int64_t d1 = 19675 * DAY; /* 2023-11-14 */
    static const char *const instances[3] = {"i-1", "i-2", "i-3"};
    for (int i = 0; i < 6; i++) {
        test_profile p;
        char id[32];
        snprintf(id, sizeof id, "past-%d", i);
        make_profile(&p, &st, id, "svc", d1 + (12 * 60 + i) * 60 * SEC, i + 1, i % 2);
        p.p.version = i % 2 ? "v2" : "v1";
        p.labels[0].value = instances[i % 3];
        expect_put(s, &p.p, 0);
    }
    hs_store_query all = {.service = "svc", .type = "cpu"};
    const char *v2[1] = {"v2"};
    hs_store_query ver = {.service = "svc", .type = "cpu", .versions = v2, .n_versions = 1};
    hs_store_label inst = {"instance", "i-2"};
    hs_store_query one = {.service = "svc", .type = "cpu", .labels = &inst, .n_labels = 1};
    const hs_store_query *qs[3] = {&all, &ver, &one};
    hs_store_merged m;
    for (int k = 0; k < 3; k++) {
        same_merge(s, raw, qs[k], &m);
        hs_store_merged_free(&m);
    }
    static const char *const tables[] = {"stacks", "rollup", "rollup_version", "rollup_label", "series",
                                         "rollup_series", "profiles", "rollup_version_day"};
    char err[512] = "";
    int tries = 0, left;
    do {
        if (tries)
            usleep(200000);
        if (hs_store_retain(s, 0, err, sizeof err))
            fail_msg("retain: %s", err);
        left = 0;
        for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
            left += parts_of_day(db, tables[t], "20231114") > (long long)n_hosts();
    } while (left && ++tries < 20);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        long long n = parts_of_day(db, tables[t], "20231114");
        if (n < 1 || n > (long long)n_hosts())
            fail_msg("%s holds %lld parts of 2023-11-14 after %d retentions", tables[t], n, tries + 1);
    }
    assert_true(parts_of_day(db, "samples", "20231114") >= 1);
    for (int k = 0; k < 3; k++) {
        same_merge(s, raw, qs[k], &m);
        assert_int_equal(m.n_profiles, k == 0 ? 6 : k == 1 ? 3 : 2);
        hs_store_merged_free(&m);
    }
    hs_store_stats after;
    assert_int_equal(hs_store_stats_get(s, &after, err, sizeof err), 0);
    assert_int_equal(after.profiles, 6);
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* The row (424242: 5, 7; one sample row, as the rollup counts every
 * stack it holds) that only a rollup has shows: read merges read
 * it from there (the exact way does not have it), not_read's (a range
 * that holds its hour in part) answer as the exact way's. */
static void rollup_row_shows(hs_store *s, hs_store *raw, const hs_store_query *read, const hs_store_query *not_read)
{
    char err[512] = "";
    hs_store_merged m;
    assert_int_equal(hs_store_merge(s, read, &m, err, sizeof err), 0);
    assert_int_equal(merged_value(&m, 424242, 1), 7);
    hs_store_merged_free(&m);
    assert_int_equal(hs_store_merge(raw, read, &m, err, sizeof err), 0);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    hs_store_merged_free(&m);
    same_merge(s, raw, not_read, &m);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    hs_store_merged_free(&m);
}

/* A row only the rollup of db has (stack 424242: 5, 7) in the hour that
 * starts at bucket. */
static void add_rollup_row(const char *db, int64_t bucket)
{
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[1024];
    snprintf(q, sizeof q,
             "INSERT INTO %s.rollup%s SELECT day, kind, bucket, 1, 424242, 1, 5, 7, 0, 0 FROM %s.rollup "
             "WHERE rowtype = 0 AND bucket = %" PRId64 " LIMIT 1",
             db, L, db, bucket);
    free(sql(q));
}

/* The rollup: a merge whose range holds whole hours reads them from it
 * and the partial hours at its ends from the samples, with the same answer
 * as the samples alone (a second store on the same database with
 * ?rollup=0, which never reads it) for ranges cut anywhere. A row only the
 * rollup has shows where it is read; a rollup that misses a profile of its
 * hours (here: counts one too many) is not used at all. */
static void test_rollup(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_rollup";
    const int64_t H = 3600 * SEC;
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 12 };
    test_profile p[N];
    int64_t h0 = 19675 * DAY + 22 * H; /* 22:00, so the hours span two days */
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + i * 25 * 60 * SEC, i + 1, i % 2);
        ps[i] = &p[i].p;
    }
    size_t d;
    assert_int_equal(hs_store_put(s, ps, N / 2, &d, err, sizeof err), 0);
    assert_int_equal(hs_store_put(s, ps + N / 2, N / 2, &d, err, sizeof err), 0);
    /* (ends in the first or second half of an hour: roll_complements in clickhouse_merge.c) */
    static const int64_t mins[][2] = {{0, 0},   {0, 300},  {10, 245}, {-60, 120}, {60, 0},  {61, 0},
                                      {60, 180}, {0, 59},  {25, 290}, {40, 170},  {10, 290}, {50, 0}};
    hs_store_merged m;
    for (size_t k = 0; k < sizeof mins / sizeof *mins; k++) {
        hs_store_query q = {.service = "svc", .type = "cpu"};
        if (mins[k][0] || mins[k][1]) {
            q.from_ns = h0 + mins[k][0] * 60 * SEC;
            q.until_ns = mins[k][1] ? h0 + mins[k][1] * 60 * SEC : 0;
        }
        same_merge(s, raw, &q, &m);
        assert_true(m.n_profiles > 0);
        hs_store_merged_free(&m);
    }
    /* A row only the rollup has, in the hour [h0 + 1 h, h0 + 2 h). */
    add_rollup_row(db, h0 + H);
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[1024];
    hs_store_query all = {.service = "svc", .type = "cpu"}, hours = all, cut = all, label = all;
    hours.from_ns = h0;
    hours.until_ns = h0 + 5 * H;
    cut.from_ns = h0 + H + 40 * 60 * SEC; /* that hour in part, its larger part outside */
    hs_store_label zone = {"zone", "z1"};
    label.labels = &zone;
    label.n_labels = 1;
    const hs_store_query *read[] = {&all, &hours}, *not_read[] = {&cut, &label};
    for (int i = 0; i < 2; i++)
        rollup_row_shows(s, raw, read[i], not_read[i]);
    /* The rollup now counts a profile the samples do not have: not used. */
    snprintf(q, sizeof q,
             "INSERT INTO %s.rollup%s SELECT day, kind, bucket, 0, 0, 1, 0, 0, 0, 0 FROM %s.rollup "
             "WHERE rowtype = 0 AND bucket = %" PRId64 " LIMIT 1",
             db, L, db, h0 + 2 * H);
    free(sql(q));
    same_merge(s, raw, &all, &m);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    assert_int_equal(m.n_profiles, N);
    hs_store_merged_free(&m);
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* Profile rows the rollup counts in db (on every host). */
static long long rolled(const char *db)
{
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[256];
    snprintf(q, sizeof q, "SELECT sum(profiles) FROM %s.rollup%s WHERE rowtype = 0", db, L);
    return sql_int_all(q);
}

/* N profiles r<at>.. of one day's hours 22:00 on, each hour two. */
static void put_hours(hs_store *s, const stacks3 *st, test_profile *p, int at, int n)
{
    const int64_t h0 = 19675 * DAY + 22 * 3600 * SEC;
    const hs_store_profile *ps[16];
    char err[512] = "";
    size_t d;
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", at + i);
        make_profile(&p[i], st, id, "svc", h0 + (at + i) * 30 * 60 * SEC, at + i + 1, i % 2);
        ps[i] = &p[i].p;
    }
    if (hs_store_put(s, ps, (size_t)n, &d, err, sizeof err))
        fail_msg("put: %s", err);
}

/* The rollups' feed with its delay (rollup_delay=3600: only a flush hands
 * rows over here): after a put the rollup holds none of its profiles and
 * merges give the exact answer from the samples; retention hands the feed
 * over, and merges then read the rollup (a row only it has shows); close
 * hands over what later puts left there. */
static void test_feed(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_feed";
    drop_db(db);
    char url[512], err[512] = "";
    url_with(url, sizeof url, db, "rollup_labels=zone&label_rollup_min=0&rollup_delay=3600");
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    strcat(url, "&rollup=0"); /* (the exact way, with the same feed) */
    hs_store *raw = hs_store_open(url, err, sizeof err);
    if (!raw)
        fail_msg("open %s: %s", url, err);
    stacks3 st;
    make_stacks(&st, "other");
    test_profile p[8];
    put_hours(s, &st, p, 0, 8);
    assert_int_equal(rolled(db), 0);
    hs_store_query all = {.service = "svc", .type = "cpu"}, cut = all, zone = all;
    hs_store_label z1 = {"zone", "z1"};
    zone.labels = &z1;
    zone.n_labels = 1;
    cut.from_ns = 19675 * DAY + 23 * 3600 * SEC + 40 * 60 * SEC; /* (that hour in part: its samples) */
    hs_store_merged m;
    const hs_store_query *qs[] = {&all, &cut, &zone};
    for (int i = 0; i < 3; i++) {
        same_merge(s, raw, qs[i], &m);
        assert_int_equal(m.n_profiles, i == 1 ? 4 : 8);
        hs_store_merged_free(&m);
    }
    assert_int_equal(hs_store_retain(s, 0, err, sizeof err), 0);
    assert_int_equal(rolled(db), 8);
    add_rollup_row(db, 19675 * DAY + 23 * 3600 * SEC);
    rollup_row_shows(s, raw, &all, &cut);
    put_hours(s, &st, p, 8, 4);
    assert_int_equal(rolled(db), 8);
    hs_store_close(s);
    assert_int_equal(rolled(db), 12);
    hs_store_close(raw);
    free_stacks(&st);
    drop_db(db);
}

/* A database whose rollups' views read samples (an older hotspur's): on
 * open they are replaced by views of the feed, the profiles stored before
 * stay counted once, and merges read the rollups again. */
static void test_feed_migration(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_feed_old";
    hs_store *s = open_db(db);
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    static const char *const views[] = {"rollup_mv", "rollup_version_mv", "rollup_label_mv", "rollup_series_mv",
                                        "rollup_version_day_mv"};
    char q[1024];
    for (size_t h = 0; h < n_hosts(); h++) {
        for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
            snprintf(q, sizeof q,
                     "SELECT replaceAll(create_table_query, 'samples_feed', 'samples') FROM system.tables WHERE "
                     "database = '%s' AND name = '%s%s' FORMAT TSVRaw",
                     db, views[v], L);
            char *old = sql_on(h, q);
            snprintf(q, sizeof q, "DROP TABLE %s.%s%s", db, views[v], L);
            free(sql_on(h, q));
            free(sql_on(h, old));
            free(old);
        }
        static const char *const feed[] = {"samples_feed_mv", "samples_feed_buf", "samples_feed"};
        for (size_t f = 0; f < 3; f++) {
            snprintf(q, sizeof q, "DROP TABLE %s.%s%s", db, feed[f], L);
            free(sql_on(h, q));
        }
    }
    /* (a store open since: its schema is the one it made) */
    stacks3 st;
    make_stacks(&st, "other");
    test_profile p[8];
    put_hours(s, &st, p, 0, 4);
    assert_int_equal(rolled(db), 4); /* (the old views, within the INSERT) */
    reopen(&s, db);
    hs_store *raw = open_exact(db);
    snprintf(q, sizeof q,
             "SELECT countIf(position(create_table_query, 'samples_feed') > 0) FROM system.tables WHERE "
             "database = '%s' AND name LIKE '%%_mv%s'",
             db, L);
    assert_int_equal(sql_int_all(q), (long long)(6 * n_hosts())); /* (the rollups' and the feed's own) */
    put_hours(s, &st, p + 4, 4, 4);
    assert_int_equal(rolled(db), 8);
    hs_store_query all = {.service = "svc", .type = "cpu"}, cut = all;
    cut.from_ns = 19675 * DAY + 23 * 3600 * SEC + 40 * 60 * SEC; /* (that hour in part: its samples) */
    hs_store_merged m;
    same_merge(s, raw, &all, &m);
    assert_int_equal(m.n_profiles, 8);
    hs_store_merged_free(&m);
    add_rollup_row(db, 19675 * DAY + 23 * 3600 * SEC);
    rollup_row_shows(s, raw, &all, &cut);
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* A range that holds the larger part of an hour at either end reads that
 * whole hour from the rollup minus the samples of its part outside: the
 * exact answer, without the stacks that only the outside part has (here
 * the third stack, in profiles just before the range's start and just
 * after its end), unfiltered (the rollup) and by version (the version
 * rollup); and the rollup is really read there (a row only it has, in
 * each of those hours, shows; a range holding less than half of the hour
 * reads its samples). */
static void test_rollup_complement(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_complement";
    const int64_t H = 3600 * SEC, M = 60 * SEC;
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 5 };
    test_profile p[N];
    int64_t h0 = 19675 * DAY + 10 * H;
    /* (minutes from h0; with the third stack or not) */
    static const int at[N][2] = {{5, 1}, {30, 0}, {70, 0}, {140, 0}, {175, 1}};
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "c%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + at[i][0] * M, i + 1, at[i][1]);
        ps[i] = &p[i].p;
    }
    size_t d;
    assert_int_equal(hs_store_put(s, ps, N, &d, err, sizeof err), 0);
    const char *v1[1] = {"v1"};
    hs_store_query q = {.service = "svc", .type = "cpu", .from_ns = h0 + 10 * M, .until_ns = h0 + 2 * H + 50 * M};
    hs_store_query qs[2] = {q, q};
    qs[1].versions = v1;
    qs[1].n_versions = 1;
    hs_store_merged m;
    for (int k = 0; k < 2; k++) {
        same_merge(s, raw, &qs[k], &m);
        assert_int_equal(m.n_profiles, 3);
        assert_int_equal(merged_value(&m, st.st[0].hash, 1), 2 + 3 + 4);
        assert_int_equal(merged_value(&m, st.st[2].hash, 1), -1);
        assert_int_equal(m.n_rows, 2);
        hs_store_merged_free(&m);
    }
    /* Rows only the rollups have, in the first and the last hour. */
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char sq[1024];
    for (int h = 0; h < 3; h += 2) {
        snprintf(sq, sizeof sq,
                 "INSERT INTO %s.rollup%s SELECT day, kind, bucket, 1, 424242, 1, 5, 7, 0, 0 FROM %s.rollup "
                 "WHERE rowtype = 0 AND bucket = %" PRId64 " LIMIT 1",
                 db, L, db, h0 + h * H);
        free(sql(sq));
        snprintf(sq, sizeof sq,
                 "INSERT INTO %s.rollup_version%s SELECT day, kind, bucket, 1, version, 424242, 1, 5, 7, 0, 0 "
                 "FROM %s.rollup_version WHERE rowtype = 0 AND bucket = %" PRId64 " LIMIT 1",
                 db, L, db, h0 + h * H);
        free(sql(sq));
    }
    for (int k = 0; k < 2; k++) {
        hs_store_query head = qs[k], tail = qs[k], neither = qs[k];
        head.until_ns = h0 + 2 * H + 10 * M; /* the head's hour only */
        tail.from_ns = h0 + 40 * M;          /* the tail's hour only */
        neither.from_ns = h0 + 40 * M;
        neither.until_ns = h0 + 2 * H + 10 * M;
        assert_int_equal(hs_store_merge(s, &qs[k], &m, err, sizeof err), 0);
        assert_int_equal(merged_value(&m, 424242, 1), 14);
        hs_store_merged_free(&m);
        rollup_row_shows(s, raw, &head, &neither);
        rollup_row_shows(s, raw, &tail, &neither);
    }
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* A row of rowtype (stack, profiles, v0..v3: rest) that only db's label
 * rollup has, for zone=z1 in the hour that starts at bucket. */
static void add_label_row(const char *db, const char *key, const char *value, int rowtype, const char *rest,
                          int64_t bucket)
{
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[1024];
    snprintf(q, sizeof q,
             "INSERT INTO %s.rollup_label%s SELECT day, kind, bucket, %d, label_key, label_value, %s FROM "
             "%s.rollup_label WHERE rowtype = 0 AND label_key = '%s' AND label_value = '%s' AND bucket = "
             "%" PRId64 " LIMIT 1",
             db, L, rowtype, rest, db, key, value, bucket);
    free(sql(q));
}

/* Filtered merges: by versions, labels, both, over ranges cut anywhere,
 * give the answer of the exact way (?rollup=0: profile rows chosen by id,
 * no rollup, no series table) and the sums the test computes. A version
 * filter reads its whole hours from the version rollup (a row only it has
 * shows), a one-label filter from the label rollup (likewise), a filter
 * of two labels the series table (a series row that also maps
 * another series' id to the filter's labels shows, in the rows and in
 * the totals, which the profiles table answers; when that table holds a
 * row too many the totals come from the samples' profile rows, by their
 * labels); a series table that misses or adds profile rows of
 * the days is not used at all. */
static void test_filtered(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_filtered";
    const int64_t H = 3600 * SEC;
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 24 };
    static const char *const inst[3] = {"i-1", "i-2", "i-3"}, *const zone[2] = {"z1", "z2"};
    static const char *const ver[2] = {"v1", "v2"};
    test_profile p[N];
    int64_t h0 = 19675 * DAY + 22 * H; /* 22:00: the hours span two days */
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "f%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + i * 20 * 60 * SEC, i + 1, i % 2);
        p[i].p.version = ver[(i / 3) % 2];
        p[i].labels[0].value = inst[i % 3];
        p[i].labels[1].value = zone[(i / 2) % 2];
        ps[i] = &p[i].p;
    }
    size_t d;
    for (int k = 0; k < 3; k++)
        assert_int_equal(hs_store_put(s, ps + k * (N / 3), N / 3, &d, err, sizeof err), 0);
    hs_store_label l_inst = {"instance", "i-2"}, l_zone = {"zone", "z1"}, l_none = {"instance", "i-9"};
    hs_store_label both[2] = {{"instance", "i-1"}, {"zone", "z2"}};
    const char *v1[1] = {"v1"}, *v12[2] = {"v1", "v2"}, *vx[1] = {"nope"};
    struct {
        const char *const *versions;
        size_t n_versions;
        const hs_store_label *labels;
        size_t n_labels;
    } filters[] = {{v1, 1, NULL, 0},    {v12, 2, NULL, 0},   {vx, 1, NULL, 0},     {NULL, 0, &l_inst, 1},
                   {NULL, 0, &l_zone, 1}, {NULL, 0, both, 2}, {NULL, 0, &l_none, 1}, {v1, 1, &l_zone, 1},
                   {v12, 2, &l_inst, 1}};
    /* (ends in the first or second half of an hour: roll_complements in clickhouse_merge.c) */
    static const int64_t mins[][2] = {{0, 0},   {0, 300},  {10, 245}, {-60, 120}, {60, 0},  {61, 0},
                                      {60, 180}, {0, 59},  {25, 290}, {40, 170},  {10, 290}, {50, 0}};
    hs_store_merged m;
    for (size_t f = 0; f < sizeof filters / sizeof *filters; f++) {
        for (size_t k = 0; k < sizeof mins / sizeof *mins; k++) {
            hs_store_query q = {.service = "svc", .type = "cpu", .versions = filters[f].versions,
                                .n_versions = filters[f].n_versions, .labels = filters[f].labels,
                                .n_labels = filters[f].n_labels};
            if (mins[k][0] || mins[k][1]) {
                q.from_ns = h0 + mins[k][0] * 60 * SEC;
                q.until_ns = mins[k][1] ? h0 + mins[k][1] * 60 * SEC : 0;
            }
            /* What it selects, worked out here. */
            int64_t want_n = 0, want_leaf = 0;
            for (int i = 0; i < N; i++) {
                int ok = p[i].p.start_ns >= q.from_ns && (!q.until_ns || p[i].p.start_ns < q.until_ns);
                if (q.n_versions) {
                    int any = 0;
                    for (size_t v = 0; v < q.n_versions; v++)
                        any |= strcmp(q.versions[v], p[i].p.version) == 0;
                    ok &= any;
                }
                for (size_t l = 0; l < q.n_labels; l++) {
                    int any = 0;
                    for (size_t j = 0; j < p[i].p.n_labels; j++)
                        any |= strcmp(p[i].labels[j].key, q.labels[l].key) == 0 &&
                               strcmp(p[i].labels[j].value, q.labels[l].value) == 0;
                    ok &= any;
                }
                want_n += ok;
                want_leaf += ok ? i + 1 : 0;
            }
            same_merge(s, raw, &q, &m);
            assert_int_equal(m.n_profiles, want_n);
            assert_int_equal(merged_value(&m, st.st[0].hash, 1), want_n ? want_leaf : -1);
            hs_store_merged_free(&m);
        }
    }
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[1024];
    /* A row only the version rollup has, for v1 in [h0 + 2 h, h0 + 3 h). */
    snprintf(q, sizeof q,
             "INSERT INTO %s.rollup_version%s SELECT day, kind, bucket, 1, version, 424242, 1, 5, 7, 0, 0 FROM "
             "%s.rollup_version WHERE rowtype = 0 AND version = 'v1' AND bucket = %" PRId64 " LIMIT 1",
             db, L, db, h0 + 2 * H);
    free(sql(q));
    hs_store_query vq = {.service = "svc", .type = "cpu", .versions = v1, .n_versions = 1}, vcut = vq, vlab = vq;
    vq.from_ns = h0;
    vq.until_ns = h0 + 5 * H;
    vcut.from_ns = h0 + 2 * H + 40 * 60 * SEC; /* that hour in part, its larger part outside */
    vlab.labels = &l_zone;
    vlab.n_labels = 1;
    rollup_row_shows(s, raw, &vq, &vcut);
    same_merge(s, raw, &vlab, &m);
    hs_store_merged_free(&m);
    /* The same for one label and the label rollup: a row only it has,
     * for zone=z1 in [h0 + 2 h, h0 + 3 h), read with whole hours only;
     * then a label rollup counting a profile too many is not read. */
    add_label_row(db, "zone", "z1", 1, "424242, 1, 5, 7, 0, 0", h0 + 2 * H);
    hs_store_query zq = {.service = "svc", .type = "cpu", .labels = &l_zone, .n_labels = 1}, zcut = zq, zall = zq;
    zq.from_ns = h0;
    zq.until_ns = h0 + 5 * H;
    zcut.from_ns = h0 + 2 * H + 40 * 60 * SEC;
    rollup_row_shows(s, raw, &zq, &zcut);
    rollup_row_shows(s, raw, &zall, &zcut);
    /* By default the label rollup is read only for 16 profiles an hour
     * (here 1.5): the row does not show. */
    char url[512];
    url_default_of(url, sizeof url, db);
    hs_store *dflt = hs_store_open(url, err, sizeof err);
    if (!dflt)
        fail_msg("open %s: %s", url, err);
    same_merge(dflt, raw, &zq, &m);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    hs_store_merged_free(&m);
    hs_store_close(dflt);
    /* With label_rollup_min=1 (z1: 12 profiles in the 8 hours from the
     * first to the last, the range open at both ends) it is read. */
    size_t ul = strlen(url);
    snprintf(url + ul, sizeof url - ul, "%slabel_rollup_min=1", strchr(url, '?') ? "&" : "?");
    dflt = hs_store_open(url, err, sizeof err);
    if (!dflt)
        fail_msg("open %s: %s", url, err);
    rollup_row_shows(dflt, raw, &zall, &zcut);
    hs_store_close(dflt);
    add_label_row(db, "zone", "z1", 0, "0, 1, 0, 0, 0, 0", h0 + 3 * H);
    same_merge(s, raw, &zq, &m);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    assert_true(m.n_profiles > 0);
    hs_store_merged_free(&m);

    /* On every shard: i-2's series rows once more, under the labels
     * instance=i-1, zone=z1 and counting no profile (as if two series
     * ids collided), on a day of their own (no merge folds them into the
     * real rows). */
    /* (two labels: the series table resolves them, no rollup has both) */
    static const hs_store_label i1z1[2] = {{"instance", "i-1"}, {"zone", "z1"}};
    hs_store_query lq = {.service = "svc", .type = "cpu", .labels = i1z1, .n_labels = 2};
    hs_store_merged mr;
    assert_int_equal(hs_store_merge(raw, &lq, &mr, err, sizeof err), 0);
    snprintf(q, sizeof q,
             "INSERT INTO %s.series%s SELECT toDate('2023-11-09'), kind, sid, version, label_keys, ['i-1', 'z1'], 0 FROM "
             "%s.series%s WHERE has(label_values, 'i-2')",
             db, L, db, L);
    for (size_t h = 0; h < n_hosts(); h++)
        free(sql_on(h, q));
    reopen(&s, db);
    /* The totals (from the profiles table) and the rows (from the series
     * rollup and samples): i-2's too, both selected by series id. */
    assert_int_equal(hs_store_merge(s, &lq, &m, err, sizeof err), 0);
    assert_true(m.n_profiles > mr.n_profiles);
    assert_true(merged_value(&m, st.st[0].hash, 1) > merged_value(&mr, st.st[0].hash, 1));
    hs_store_merged_free(&m);
    /* A profiles table that holds a profile row too many is not read:
     * the totals from the profile rows of samples, by their own labels
     * (the exact ones), the rows still by series id. */
    snprintf(q, sizeof q,
             "INSERT INTO %s.profiles%s SELECT day, kind, sid, start_ns, duration_ns, pid, ins, v0, v1, v2, v3 "
             "FROM %s.profiles%s LIMIT 1",
             db, L, db, L);
    free(sql(q));
    reopen(&s, db);
    assert_int_equal(hs_store_merge(s, &lq, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, mr.n_profiles);
    assert_int_equal(m.totals[1], mr.totals[1]);
    assert_true(merged_value(&m, st.st[0].hash, 1) > merged_value(&mr, st.st[0].hash, 1));
    hs_store_merged_free(&m);
    hs_store_merged_free(&mr);
    /* A series table whose count of the days' profile rows is off by one
     * is not read: the exact answer again. */
    snprintf(q, sizeof q,
             "INSERT INTO %s.series%s SELECT day, kind, sid, version, label_keys, label_values, 1 FROM %s.series "
             "WHERE has(label_values, 'i-3') LIMIT 1",
             db, L, db);
    free(sql(q));
    reopen(&s, db);
    same_merge(s, raw, &lq, &m);
    hs_store_merged_free(&m);
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* A row (424242: 5, 7) that only db's TABLE (rollup_series or
 * rollup_version_day) has, of rowtype row (rest: stack, profiles,
 * v0..v3) on the day that starts at bucket, copied from a profile-count
 * row of that day meeting cond, on the first host (from its own rows: a
 * series lives on the shards of its profiles). */
static void add_day_row(const char *db, const char *table, const char *key, int row, const char *rest, int64_t bucket,
                        const char *cond)
{
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char q[1024];
    snprintf(q, sizeof q,
             "INSERT INTO %s.%s%s SELECT day, kind, bucket, %d, %s, %s FROM %s.%s%s WHERE rowtype = 0 AND bucket = "
             "%" PRId64 " AND %s LIMIT 1",
             db, table, L, row, key, rest, db, table, L, bucket, cond);
    free(sql(q));
}

/* Merges that read whole DAYS: of labels the label rollup does not hold
 * (instance; two labels; a label and a version) from the series rollup,
 * of versions from the daily version rollup (and the other whole hours
 * from the hourly one), the rest from the samples (or a day from the
 * rollup minus the samples outside the range when that part is the
 * smaller): the exact way's answer for ranges cut at days, hours and
 * minutes; a row only the daily rollup has shows where it is read; a
 * daily rollup that counts a profile too many is not read (the version
 * merge then reads its hours from the hourly rollup, the series merge the
 * samples). */
static void test_day_rollups(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_days";
    const int64_t H = 3600 * SEC, M = 60 * SEC;
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 45 };
    static const char *const inst[3] = {"i-1", "i-2", "i-3"}, *const ver[2] = {"v1", "v2"};
    test_profile p[N];
    const int64_t d1 = 19676 * DAY; /* the one whole day; profiles from 20:00 the day before to 09:20 after */
    int64_t t0 = d1 - 4 * H;
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "d%d", i);
        make_profile(&p[i], &st, id, "svc", t0 + i * 50 * M, i + 1, i % 2);
        p[i].p.version = ver[(i / 2) % 2];
        p[i].labels[0].value = inst[i % 3];
        ps[i] = &p[i].p;
    }
    size_t d;
    for (int k = 0; k < 3; k++)
        assert_int_equal(hs_store_put(s, ps + k * (N / 3), N / 3, &d, err, sizeof err), 0);
    hs_store_label l_inst = {"instance", "i-2"}, two[2] = {{"instance", "i-1"}, {"zone", "z1"}};
    const char *v1[1] = {"v1"};
    struct {
        const char *const *versions;
        size_t n_versions;
        const hs_store_label *labels;
        size_t n_labels;
    } filters[] = {{NULL, 0, &l_inst, 1}, {NULL, 0, two, 2}, {v1, 1, &l_inst, 1}, {v1, 1, NULL, 0}};
    /* (from, until: 0 for none) */
    const int64_t ranges[][2] = {{0, 0},
                                 {d1, d1 + DAY},
                                 {d1 - 3 * H - 10 * M, 0},
                                 {d1 + 10 * M, 0},          /* the day minus its first 10 minutes */
                                 {d1 - 2 * H, d1 + DAY + 5 * H + 25 * M},
                                 {d1 - 30 * M, d1 + DAY + 10 * M},
                                 {d1 + 3 * H, d1 + 20 * H}, /* no whole day */
                                 {0, d1 + DAY + 50 * M}};
    hs_store_merged m;
    for (size_t f = 0; f < sizeof filters / sizeof *filters; f++)
        for (size_t k = 0; k < sizeof ranges / sizeof *ranges; k++) {
            hs_store_query q = {.service = "svc", .type = "cpu", .versions = filters[f].versions,
                                .n_versions = filters[f].n_versions, .labels = filters[f].labels,
                                .n_labels = filters[f].n_labels, .from_ns = ranges[k][0], .until_ns = ranges[k][1]};
            same_merge(s, raw, &q, &m);
            assert_true(m.n_profiles > 0);
            hs_store_merged_free(&m);
        }
    /* Rows only the daily rollups have, on the whole day. */
    char i2[256];
    snprintf(i2, sizeof i2, "sid IN (SELECT sid FROM %s.series WHERE has(label_values, 'i-2'))", db);
    add_day_row(db, "rollup_series", "sid", 1, "424242, 1, 5, 7, 0, 0", d1, i2);
    add_day_row(db, "rollup_version_day", "version", 1, "424242, 1, 5, 7, 0, 0", d1, "version = 'v1'");
    hs_store_query iq = {.service = "svc", .type = "cpu", .labels = &l_inst, .n_labels = 1}, icut = iq;
    icut.from_ns = d1 + 13 * H; /* the day in part, its larger part outside */
    rollup_row_shows(s, raw, &iq, &icut);
    hs_store_query vq = {.service = "svc", .type = "cpu", .versions = v1, .n_versions = 1}, vdays = vq, vcut = vq;
    vdays.from_ns = d1 - 2 * H;
    vdays.until_ns = d1 + DAY + 2 * H;
    vcut.from_ns = d1 + 1 * H; /* whole hours only, from the hourly rollup */
    rollup_row_shows(s, raw, &vq, &vcut);
    rollup_row_shows(s, raw, &vdays, &vcut);
    /* Daily rollups counting a profile too many: not read (by a store
     * opened since: one that found the day's series tables complete
     * trusts them until samples gets rows in the day, which is how the
     * views get theirs; rows written to them alone, as here, it does not
     * see: test_trusted_days). */
    add_day_row(db, "rollup_series", "sid", 0, "0, 1, 0, 0, 0, 0", d1, i2);
    add_day_row(db, "rollup_version_day", "version", 0, "0, 1, 0, 0, 0, 0", d1, "version = 'v1'");
    reopen(&s, db);
    const hs_store_query *again[] = {&iq, &vq, &vdays};
    for (int i = 0; i < 3; i++) {
        same_merge(s, raw, again[i], &m);
        assert_int_equal(merged_value(&m, 424242, 1), -1);
        assert_true(m.n_profiles > 0);
        hs_store_merged_free(&m);
    }
    hs_store_close(s);
    /* A database of the previous hotspur (which had none of the three
     * tables): opened, it gets them empty; its merges stay exact, and so
     * after more puts. */
    static const char *const added[] = {"profiles_mv", "profiles", "rollup_series_mv", "rollup_series",
                                        "rollup_version_day_mv", "rollup_version_day"};
    const char *cl = getenv("HS_CH_TEST_CLUSTER");
    char q[256];
    for (size_t h = 0; h < n_hosts(); h++)
        for (size_t i = 0; i < sizeof added / sizeof *added; i++) {
            snprintf(q, sizeof q, "DROP TABLE IF EXISTS %s.%s", db, added[i]);
            free(sql_on(h, q));
            if (cl && *cl) {
                snprintf(q, sizeof q, "DROP TABLE IF EXISTS %s.%s_local", db, added[i]);
                free(sql_on(h, q));
            }
        }
    char url[512];
    url_of(url, sizeof url, db);
    s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    for (int round = 0; round < 2; round++) {
        for (size_t f = 0; f < sizeof filters / sizeof *filters; f++)
            for (size_t k = 0; k < 4; k++) { /* (open, one day, from before it, from inside it) */
                hs_store_query fq = {.service = "svc", .type = "cpu", .versions = filters[f].versions,
                                     .n_versions = filters[f].n_versions, .labels = filters[f].labels,
                                     .n_labels = filters[f].n_labels, .from_ns = ranges[k][0],
                                     .until_ns = ranges[k][1] && round ? ranges[k][1] + DAY : ranges[k][1]};
                same_merge(s, raw, &fq, &m);
                hs_store_merged_free(&m);
            }
        if (round == 0) {
            /* (a day later: days of their own in the new tables) */
            for (int i = 0; i < N; i++) {
                snprintf(p[i].p.id, sizeof p[i].p.id, "e%d", i);
                p[i].p.start_ns += DAY;
            }
            assert_int_equal(hs_store_put(s, ps, N, &d, err, sizeof err), 0);
        }
    }
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* The days a store found complete (days_trusted): its merges of a series
 * then read no count, and ask the series ids once (the next merge of the
 * same filter reuses them while samples holds the same rows in those
 * days). Answers equal the exact way's on the first and the later
 * merges, at day, hour and minute cuts; after puts whose rows reached
 * samples but not the series rollup nor the profiles table (their views
 * dropped: as a view insert that failed), the store counts again, finds
 * them short and answers the exact way, and so does a store opened
 * since; the views back (reopened), new days are complete again while
 * the short day stays read the exact way. In a cluster (no system.parts
 * of the other shard) every merge counts: the same answers. */
static void test_trusted_days(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_trust";
    const int64_t H = 3600 * SEC, M = 60 * SEC;
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 30 };
    static const char *const inst[3] = {"i-1", "i-2", "i-3"};
    test_profile p[N];
    const int64_t d1 = 19700 * DAY, t0 = d1 - 3 * H;
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%d", i);
        make_profile(&p[i], &st, id, "svc", t0 + i * 70 * M, i + 1, i % 2);
        p[i].p.version = i % 4 ? "v1" : "v2";
        p[i].labels[0].value = inst[i % 3];
        ps[i] = &p[i].p;
    }
    size_t d;
    assert_int_equal(hs_store_put(s, ps, N, &d, err, sizeof err), 0);
    hs_store_label l_inst = {"instance", "i-2"};
    const char *v1[1] = {"v1"};
    const int64_t ranges[][2] = {{0, 0}, {d1, d1 + DAY}, {d1 + 10 * M, 0}, {d1 - 2 * H - 5 * M, d1 + DAY + 3 * H + 20 * M}};
    hs_store_merged m;
    for (int pass = 0; pass < 5; pass++) {
        if (pass == 2) {
            /* (puts that reach samples only, and the series table: the
             * two views dropped, as if their inserts had failed) */
            static const char *const views[2] = {"rollup_series_mv", "profiles_mv"};
            const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
            char q[256];
            for (size_t h = 0; h < n_hosts(); h++)
                for (int v = 0; v < 2; v++) {
                    snprintf(q, sizeof q, "DROP TABLE IF EXISTS %s.%s%s", db, views[v], L);
                    free(sql_on(h, q));
                }
            for (int i = 0; i < N; i++) {
                snprintf(p[i].p.id, sizeof p[i].p.id, "u%d", i);
                p[i].p.start_ns += 5 * M;
            }
            assert_int_equal(hs_store_put(s, ps, N, &d, err, sizeof err), 0);
        }
        if (pass == 3)
            reopen(&s, db); /* (it counts too; its open puts the views back) */
        if (pass == 4) {
            /* (profiles two days later: their days complete) */
            for (int i = 0; i < N; i++) {
                snprintf(p[i].p.id, sizeof p[i].p.id, "w%d", i);
                p[i].p.start_ns += 2 * DAY;
            }
            assert_int_equal(hs_store_put(s, ps, N, &d, err, sizeof err), 0);
        }
        for (int f = 0; f < 3; f++)
            for (size_t k = 0; k < sizeof ranges / sizeof *ranges; k++)
                for (int twice = 0; twice < 2; twice++) {
                    hs_store_query q = {.service = "svc", .type = "cpu", .from_ns = ranges[k][0],
                                        .until_ns = ranges[k][1]};
                    if (f != 1) {
                        q.labels = &l_inst;
                        q.n_labels = 1;
                    }
                    if (f != 0) {
                        q.versions = v1;
                        q.n_versions = 1;
                    }
                    if (pass == 4 && q.until_ns)
                        q.until_ns += 2 * DAY;
                    same_merge(s, raw, &q, &m);
                    assert_true(m.n_profiles > 0);
                    hs_store_merged_free(&m);
                }
    }
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* A stack whose values are all 0 is in a merge's answer (the samples'
 * GROUP BY has it) from the rollups too, once ClickHouse has merged their
 * parts (a SummingMergeTree drops rows whose sums are all 0: the rollups'
 * rows also count their sample rows). */
static void test_zero_stack(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_zero";
    const int64_t H = 3600 * SEC;
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    hs_store *s = open_db(db), *raw = open_exact(db);
    char err[512] = "", q[256];
    stacks3 st;
    make_stacks(&st, "zero");
    enum { N = 6 };
    test_profile p[N];
    const hs_store_profile *ps[N];
    int64_t h0 = 19675 * DAY + 10 * H;
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "z%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + i * 20 * 60 * SEC, i + 1, 1);
        p[i].samples[2].values[0] = p[i].samples[2].values[1] = 0;
        p[i].p.totals[0] -= 3;
        p[i].p.totals[1] -= 3 * (i + 1);
        ps[i] = &p[i].p;
    }
    size_t d;
    for (int k = 0; k < 2; k++) /* (two parts to merge) */
        assert_int_equal(hs_store_put(s, ps + k * N / 2, N / 2, &d, err, sizeof err), 0);
    static const char *const rollups[3] = {"rollup", "rollup_version", "rollup_label"};
    for (size_t h = 0; h < n_hosts(); h++)
        for (int t = 0; t < 3; t++) {
            snprintf(q, sizeof q, "OPTIMIZE TABLE %s.%s%s FINAL", db, rollups[t], L);
            free(sql_on(h, q));
        }
    const char *v1[1] = {"v1"};
    hs_store_label z1 = {"zone", "z1"};
    hs_store_query all = {.service = "svc", .type = "cpu"}, ver = all, lab = all;
    ver.versions = v1;
    ver.n_versions = 1;
    lab.labels = &z1;
    lab.n_labels = 1;
    const hs_store_query *qs[3] = {&all, &ver, &lab};
    hs_store_merged m;
    for (int i = 0; i < 3; i++) {
        same_merge(s, raw, qs[i], &m);
        assert_int_equal(m.n_profiles, N);
        assert_int_equal(m.n_rows, 3);
        assert_int_equal(merged_value(&m, st.st[2].hash, 1), 0);
        hs_store_merged_free(&m);
    }
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* The label rollup added to a database that lacks it (one the previous
 * hotspur created): created on open, and merges of one label stay exact
 * although the rows stored before have none of it (they read the
 * samples). Then a profile as the previous hotspur stores it (a rolling
 * upgrade: labels on its profile row only) into hours the label rollup
 * holds: not counted there, so those merges read the samples too. */
static void test_label_rollup_added(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_label_added";
    const int64_t H = 3600 * SEC;
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    char err[512] = "", q[2048];
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 12 };
    test_profile p[N];
    int64_t h0 = 19675 * DAY + 10 * H;
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "a%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + i * 20 * 60 * SEC, i + 1, i % 2);
        p[i].labels[1].value = i % 3 ? "z1" : "z2";
        ps[i] = &p[i].p;
    }
    hs_store *s = open_db(db);
    size_t d;
    /* The first half stored before the label rollup exists. */
    for (size_t h = 0; h < n_hosts(); h++) {
        snprintf(q, sizeof q, "DROP TABLE %s.rollup_label_mv%s", db, L);
        free(sql_on(h, q));
        snprintf(q, sizeof q, "DROP TABLE %s.rollup_label%s", db, L);
        free(sql_on(h, q));
        if (*L) {
            snprintf(q, sizeof q, "DROP TABLE %s.rollup_label", db);
            free(sql_on(h, q));
        }
    }
    assert_int_equal(hs_store_put(s, ps, N / 2, &d, err, sizeof err), 0);
    hs_store_close(s);
    char url[512];
    url_of(url, sizeof url, db);
    s = hs_store_open(url, err, sizeof err); /* (not open_db: it starts afresh) */
    if (!s)
        fail_msg("open %s: %s", url, err);
    hs_store *raw = open_exact(db);
    snprintf(q, sizeof q, "SELECT count() FROM system.tables WHERE database = '%s' AND name LIKE 'rollup_label%%'", db);
    assert_int_equal(sql_int_all(q), (long long)n_hosts() * (*L ? 3 : 2));
    assert_int_equal(hs_store_put(s, ps + N / 2, N - N / 2, &d, err, sizeof err), 0);
    hs_store_label z1 = {"zone", "z1"};
    hs_store_query all = {.service = "svc", .type = "cpu", .labels = &z1, .n_labels = 1}, late = all, early = all;
    late.from_ns = h0 + 2 * H; /* only hours stored with the label rollup */
    early.until_ns = h0 + 2 * H;
    const hs_store_query *qs[3] = {&all, &late, &early};
    int64_t n_before[3];
    hs_store_merged m;
    for (int i = 0; i < 3; i++) {
        same_merge(s, raw, qs[i], &m);
        assert_true(m.n_profiles > 0);
        n_before[i] = m.n_profiles;
        hs_store_merged_free(&m);
    }
    /* A copy of a7 (zone z1, in the hour [h0 + 2 h, h0 + 3 h)) as the
     * previous hotspur writes it: another id, no labels on its sample
     * rows, 0 in its profile row's stack. */
    snprintf(q, sizeof q,
             "INSERT INTO %s.samples%s SELECT day, rowtype, kind, start_ns, ins + 1, if(rowtype = 0, 0, stack), v0, "
             "v1, v2, v3, pid + 1, if(rowtype = 0, 'a7-old', id), service, type, version, if(rowtype = 0, "
             "label_keys, emptyArrayString()), if(rowtype = 0, label_values, emptyArrayString()), duration_ns, "
             "sample_types, sample_units, default_index, period_type, period_unit, period, sid FROM %s.samples "
             "WHERE start_ns = %" PRId64,
             db, L, db, p[7].p.start_ns);
    free(sql(q));
    for (int i = 0; i < 2; i++) {
        same_merge(s, raw, qs[i], &m);
        assert_int_equal(m.n_profiles, n_before[i] + 1);
        hs_store_merged_free(&m);
    }
    hs_store_close(raw);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

/* The rows of db's label rollup with key key (NULL: any) on all hosts;
 * label_views: how many hosts have its view. */
static long long label_rows(const char *db, const char *key)
{
    char q[512];
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    snprintf(q, sizeof q, "SELECT count() FROM %s.rollup_label%s%s%s%s", db, L, key ? " WHERE label_key = '" : "",
             key ? key : "", key ? "'" : "");
    return sql_int_all(q);
}

static long long label_views(const char *db)
{
    char q[512];
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    snprintf(q, sizeof q, "SELECT count() FROM system.tables WHERE database = '%s' AND name = 'rollup_label_mv%s'", db,
             L);
    return sql_int_all(q);
}

static hs_store *open_opts(const char *db, const char *opts)
{
    char url[512], err[512] = "";
    url_with(url, sizeof url, db, opts);
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    return s;
}

/* The label rollup holds only the keys of rollup_labels, and a changed
 * list never gives a wrong answer. With none (the default) it has no view
 * and no rows. Then zone is listed (a key added later): only zone rows,
 * for the hours stored since; a zone merge reads them there (a row only
 * the rollup has shows) and falls back to the samples for a range with
 * hours stored before (their count of profiles is 0). An instance merge
 * (not listed) never reads the rollup, even where it has instance rows
 * (stored under zone,instance); one of zone,instance (a key removed
 * later: hours stored under zone only follow) reads them for the hours
 * of that list only, the samples for a range past them. Every merge
 * answers as the exact way. */
static void test_label_rollup_keys(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_label_keys";
    const int64_t H = 3600 * SEC;
    drop_db(db);
    char err[512] = "";
    stacks3 st;
    make_stacks(&st, "other");
    enum { N = 16 }; /* 4 stored per list, an hour apart: hours 0-3, 4-7, 8-11, 12-15 */
    test_profile p[N];
    int64_t h0 = 19675 * DAY + 2 * H;
    const hs_store_profile *ps[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "k%d", i);
        make_profile(&p[i], &st, id, "svc", h0 + i * H + 60 * SEC, i + 1, i % 2);
        p[i].labels[0].value = i % 2 ? "i-1" : "i-2";
        ps[i] = &p[i].p;
    }
    size_t d;
    hs_store *none = open_opts(db, "label_rollup_min=0"), *raw = open_opts(db, "rollup=0");
    hs_store_query any = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(raw, &any, &m, err, sizeof err), 0); /* (its schema, with no key) */
    assert_int_equal(m.n_profiles, 0);
    hs_store_merged_free(&m);
    assert_int_equal(hs_store_put(none, ps, 4, &d, err, sizeof err), 0);
    assert_int_equal(label_views(db), 0);
    assert_int_equal(label_rows(db, NULL), 0);
    hs_store *zone = open_opts(db, "rollup_labels=zone&label_rollup_min=0");
    assert_int_equal(hs_store_put(zone, ps + 4, 4, &d, err, sizeof err), 0);
    assert_int_equal(label_views(db), (long long)n_hosts());
    assert_true(label_rows(db, "zone") > 0);
    assert_int_equal(label_rows(db, NULL), label_rows(db, "zone"));
    hs_store *zi = open_opts(db, "rollup_labels=zone,instance&label_rollup_min=0");
    assert_int_equal(hs_store_put(zi, ps + 8, 4, &d, err, sizeof err), 0);
    assert_true(label_rows(db, "instance") > 0);
    /* The same list in another order: the view stays (its definition's
     * time, in seconds, unchanged a second later). */
    char vq[512];
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    snprintf(vq, sizeof vq,
             "SELECT sum(toUInt32(metadata_modification_time)) FROM system.tables WHERE database = '%s' AND "
             "name = 'rollup_label_mv%s'",
             db, L);
    long long t0 = sql_int_all(vq);
    struct timespec sec = {1, 100000000};
    nanosleep(&sec, NULL);
    hs_store *iz = open_opts(db, "rollup_labels=instance,zone");
    assert_int_equal(hs_store_merge(iz, &any, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 12);
    hs_store_merged_free(&m);
    hs_store_close(iz);
    assert_int_equal(sql_int_all(vq), t0);
    hs_store *zone2 = open_opts(db, "label_rollup_min=0&rollup_labels=zone"); /* (back to zone only) */
    long long inst = label_rows(db, "instance");
    assert_int_equal(hs_store_put(zone2, ps + 12, 4, &d, err, sizeof err), 0);
    assert_int_equal(label_rows(db, "instance"), inst);
    assert_int_equal(label_views(db), (long long)n_hosts());

    hs_store_label z1 = {"zone", "z1"}, i1 = {"instance", "i-1"};
    hs_store_query zq = {.service = "svc", .type = "cpu", .labels = &z1, .n_labels = 1};
    hs_store_query iq = {.service = "svc", .type = "cpu", .labels = &i1, .n_labels = 1};
    /* Rows only the rollup has: zone z1 in hour 5, instance i-1 in hour 9. */
    add_label_row(db, "zone", "z1", 1, "424242, 1, 5, 7, 0, 0", h0 + 5 * H);
    add_label_row(db, "instance", "i-1", 1, "424242, 1, 5, 7, 0, 0", h0 + 9 * H);
    hs_store_query late = zq, cut = zq, early = zq, all = zq;
    late.from_ns = h0 + 4 * H; /* hours stored with zone listed */
    cut.from_ns = h0 + 5 * H + 40 * 60 * SEC; /* hour 5 in part, the larger part outside */
    early.from_ns = h0 + 2 * H; /* hours 2-3: stored with no key */
    early.until_ns = h0 + 6 * H;
    rollup_row_shows(zone, raw, &late, &cut);
    const hs_store_query *exact[2] = {&early, &all};
    for (int i = 0; i < 2; i++) {
        same_merge(zone, raw, exact[i], &m);
        assert_true(m.n_profiles > 0);
        assert_int_equal(merged_value(&m, 424242, 1), -1);
        hs_store_merged_free(&m);
    }
    /* instance: never from the rollup where it is not listed */
    hs_store_query i89 = iq, i8f = iq, icut = iq;
    i89.from_ns = h0 + 8 * H;
    i89.until_ns = h0 + 12 * H; /* hours stored under zone,instance */
    i8f.from_ns = h0 + 8 * H;   /* and those stored under zone after */
    icut.from_ns = h0 + 9 * H + 40 * 60 * SEC;
    icut.until_ns = h0 + 12 * H;
    hs_store *const unlisted[2] = {zone, zone2};
    for (int i = 0; i < 2; i++) {
        same_merge(unlisted[i], raw, &i89, &m);
        assert_int_equal(m.n_profiles, 2);
        assert_int_equal(merged_value(&m, 424242, 1), -1);
        hs_store_merged_free(&m);
    }
    rollup_row_shows(zi, raw, &i89, &icut);
    same_merge(zi, raw, &i8f, &m);
    assert_int_equal(m.n_profiles, 4);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    hs_store_merged_free(&m);
    /* Opened again with no key: the view goes, the rows stay. */
    hs_store_close(none);
    none = open_opts(db, "rollup_labels=");
    assert_int_equal(hs_store_put(none, ps, 1, &d, err, sizeof err), 0); /* (a duplicate: creates the schema) */
    assert_int_equal(d, 1);
    assert_int_equal(label_views(db), 0);
    same_merge(none, raw, &late, &m);
    assert_int_equal(merged_value(&m, 424242, 1), -1);
    hs_store_merged_free(&m);
    hs_store *const all_stores[5] = {none, raw, zone, zi, zone2};
    for (int i = 0; i < 5; i++)
        hs_store_close(all_stores[i]);
    free_stacks(&st);
    drop_db(db);
}

/* A database an older hotspur created (samples without the series id):
 * refused at open with a message saying so, not answered wrongly. */
static void test_old_schema(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_old";
    const char *cl = getenv("HS_CH_TEST_CLUSTER"), *L = cl && *cl ? "_local" : "";
    drop_db(db);
    char q[512];
    for (size_t h = 0; h < n_hosts(); h++) {
        snprintf(q, sizeof q, "CREATE DATABASE %s", db);
        free(sql_on(h, q));
        snprintf(q, sizeof q,
                 "CREATE TABLE %s.samples%s (day Date, rowtype UInt8, kind UInt64, start_ns Int64) ENGINE = "
                 "MergeTree() PARTITION BY day ORDER BY (rowtype, kind, start_ns)",
                 db, L);
        free(sql_on(h, q));
    }
    char url[512], err[512] = "";
    url_of(url, sizeof url, db);
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (s)
        fail_msg("%s opened a database of an older schema", url);
    print_message("old schema: %s\n", err);
    assert_non_null(strstr(err, "older hotspur"));
    drop_db(db);
}

static void test_quoting(void **state)
{
    (void)state;
    NEED_SERVER();
    const char *db = "hs_ch_quoting";
    hs_store *s = open_db(db);
    stacks3 st;
    make_stacks(&st, "other");
    static const char svc[] = "it's a \\ back'slash\n\t\x01 ünï";
    test_profile a;
    make_profile(&a, &st, "q-1", svc, 1700000000 * SEC, 10, 1);
    a.labels[1] = (hs_store_label){"zo'ne\\", "v'\\\x7f"};
    a.p.version = "1.0'--";
    expect_put(s, &a.p, 0);
    char err[512] = "", **v;
    size_t n;
    assert_int_equal(hs_store_services(s, NULL, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0], svc);
    hs_store_strings_free(v, n);
    hs_store_query sel = {.service = svc, .type = "cpu"};
    assert_int_equal(hs_store_label_values(s, &sel, "zo'ne\\", &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0], "v'\\\x7f");
    hs_store_strings_free(v, n);
    const char *ver = "1.0'--";
    sel.versions = &ver;
    sel.n_versions = 1;
    sel.labels = &a.labels[1];
    sel.n_labels = 1;
    hs_store_merged m;
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 1);
    hs_store_merged_free(&m);
    hs_store_close(s);
    free_stacks(&st);
    drop_db(db);
}

static void count_stack(void *arg, uint64_t hash, const void *data, size_t len)
{
    (void)hash;
    (void)data;
    assert_true(len > 0);
    (*(size_t *)arg)++;
}

static void test_big_put(void **state)
{
    (void)state;
    NEED_SERVER();
    enum { P = 300, S = 50 }; /* 15000 hashes: past one query's 256 KiB */
    const char *db = "hs_ch_big";
    hs_store *s = open_db(db);
    static void *rec[P * S];
    static size_t len[P * S];
    static hs_store_stack st[P * S];
    static hs_store_sample sm[P * S];
    static hs_store_profile prof[P];
    static const hs_store_profile *pp[P];
    static uint64_t hashes[P * S];
    char err[512] = "", fn[32];
    for (int i = 0; i < P; i++) {
        for (int j = 0; j < S; j++) {
            int k = i * S + j;
            snprintf(fn, sizeof fn, "f_%d_%d", i, j);
            hs_stack_frame f[2] = {{.function = fn, .file = "big.c", .line = j}, {.function = "main", .file = "big.c"}};
            assert_int_equal(hs_stack_encode(f, 2, NULL, 0, &rec[k], &len[k], err, sizeof err), 0);
            st[k] = (hs_store_stack){hs_stack_hash(rec[k], len[k]), rec[k], len[k]};
            sm[k] = (hs_store_sample){st[k].hash, {1, 10}};
            hashes[k] = st[k].hash;
        }
        hs_store_profile *p = &prof[i];
        memset(p, 0, sizeof *p);
        snprintf(p->id, sizeof p->id, "big-%d", i);
        p->service = "big";
        p->type = "cpu";
        p->version = "";
        p->start_ns = 1700000000 * SEC + i * SEC;
        p->duration_ns = SEC;
        p->types = (hs_store_types){2, {"samples", "cpu"}, {"count", "nanoseconds"}, 1, "cpu", "nanoseconds", 10};
        p->totals[0] = S;
        p->totals[1] = 10 * S;
        p->samples = &sm[i * S];
        p->n_samples = S;
        p->stacks = &st[i * S];
        p->n_stacks = S;
        pp[i] = p;
    }
    size_t d = 99;
    if (hs_store_put(s, pp, P, &d, err, sizeof err))
        fail_msg("put: %s", err);
    assert_int_equal(d, 0);
    assert_int_equal(hs_store_put(s, pp, P, &d, err, sizeof err), 0);
    assert_int_equal(d, P);
    hs_store_query sel = {.service = "big", .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, P);
    assert_int_equal(m.n_rows, P * S);
    assert_int_equal(m.totals[1], 10 * P * S);
    hs_store_merged_free(&m);
    size_t found = 0;
    assert_int_equal(hs_store_get_stacks(s, hashes, P * S, count_stack, &found, err, sizeof err), 0);
    assert_int_equal(found, P * S);
    for (int k = 0; k < P * S; k++)
        free(rec[k]);
    hs_store_close(s);
    drop_db(db);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A loopback port nothing listens on (bound, then closed). */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void expect_unavailable(hs_store *s, const char *want_in_msg, double max_s)
{
    stacks3 st;
    make_stacks(&st, "other");
    test_profile a;
    make_profile(&a, &st, "down-1", "svc", 1700000000 * SEC, 10, 1);
    char err[512] = "";
    size_t d;
    double t0 = now_s();
    assert_int_equal(put1(s, &a.p, &d, err, sizeof err), HS_STORE_UNAVAILABLE);
    double took = now_s() - t0;
    print_message("put while unavailable: %.2f s: %s\n", took, err);
    assert_non_null(strstr(err, want_in_msg));
    assert_true(took < max_s);
    hs_store_query sel = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    err[0] = 0;
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), HS_STORE_UNAVAILABLE);
    assert_true(err[0] != 0);
    char **v;
    size_t n;
    assert_int_equal(hs_store_services(s, NULL, &v, &n, err, sizeof err), HS_STORE_UNAVAILABLE);
    free_stacks(&st);
}

static void test_unreachable(void **state)
{
    (void)state;
    char url[128], err[512] = "";
    snprintf(url, sizeof url, "clickhouse://127.0.0.1:%d/hs_down?connect_timeout=1", dead_port());
    /* Open succeeds: the schema is created once ClickHouse is there. */
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    expect_unavailable(s, "unavailable", 1.0);
    hs_store_close(s);
}

static void test_slow(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    /* Nothing accepts: connections complete in the backlog, no answer. */
    char url[128], err[512] = "";
    snprintf(url, sizeof url, "clickhouse://127.0.0.1:%d/hs_slow?timeout=0.5", ntohs(a.sin_port));
    double t0 = now_s();
    hs_store *s = hs_store_open(url, err, sizeof err);
    if (!s)
        fail_msg("open %s: %s", url, err);
    assert_true(now_s() - t0 < 2.0);
    expect_unavailable(s, "imeout", 2.0);
    hs_store_close(s);
    close(fd);
}

static void run_cmd(const char *env)
{
    const char *cmd = getenv(env);
    assert_non_null(cmd);
    if (system(cmd) != 0)
        fail_msg("%s (%s) failed", env, cmd);
}

static void test_recovery(void **state)
{
    (void)state;
    NEED_SERVER();
    if (!getenv("HS_CH_TEST_STOP") || !getenv("HS_CH_TEST_START")) {
        print_message("no HS_CH_TEST_STOP/START commands\n");
        skip();
    }
    hs_store *s = open_db("hs_ch_recovery");
    drop_db("hs_ch_late");
    stacks3 st;
    make_stacks(&st, "other");
    test_profile a, b;
    make_profile(&a, &st, "before", "svc", 1700000000 * SEC, 10, 1);
    make_profile(&b, &st, "after", "svc", 1700000060 * SEC, 100, 1);
    expect_put(s, &a.p, 0);
    run_cmd("HS_CH_TEST_STOP");
    expect_unavailable(s, "unavailable", 5.0);
    char url[512], err[512] = "";
    url_of(url, sizeof url, "hs_ch_late"); /* opened while ClickHouse is down */
    hs_store *late = hs_store_open(url, err, sizeof err);
    if (!late)
        fail_msg("open %s while ClickHouse is down: %s", url, err);
    run_cmd("HS_CH_TEST_START");
    /* The same handles, no reopen. */
    expect_put(s, &b.p, 0);
    expect_put(s, &a.p, 1);
    hs_store_query sel = {.service = "svc", .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(s, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 2);
    assert_int_equal(m.totals[1], 60 + 600);
    hs_store_merged_free(&m);
    expect_put(late, &a.p, 0);
    assert_int_equal(hs_store_merge(late, &sel, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 1);
    hs_store_merged_free(&m);
    hs_store_close(late);
    hs_store_close(s);
    free_stacks(&st);
    drop_db("hs_ch_recovery");
    drop_db("hs_ch_late");
}

static void test_bad_urls(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "clickhouse://127.0.0.1:8123",              /* no database */
        "clickhouse://127.0.0.1:8123/",             /* empty database */
        "clickhouse://127.0.0.1:8123/a-b",          /* not an identifier */
        "clickhouse://127.0.0.1:99999/db",          /* bad port */
        "clickhouse://127.0.0.1:8123/db?nope=1",    /* unknown option */
        "clickhouse://127.0.0.1:8123/db?timeout=x", /* bad timeout */
        "clickhouse://a:1,b:2/db",                  /* shards without a cluster */
        "clickhouse://a:1/db?cluster=x;y",          /* bad cluster name */
        "clickhouse://a:1/db?label_rollup_min=-1",  /* not a count */
        "clickhouse://a:1/db?label_rollup_min=",    /* empty */
        "clickhouse://a:1/db?rollup_labels=zone,,x", /* an empty key */
        "clickhouse://a:1/db?rollup_labels=a'b",    /* not a key */
        "clickhouse://a:1/db?rollup_labels=z,a,z",  /* twice */
        "clickhouse://a:1/db?rollup_delay=-1",      /* not seconds */
        "clickhouse://a:1/db?rollup_delay=3601",    /* over an hour */
        "clickhouse://a:1/db?rollup_labels=zone,",  /* an empty key at the end */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        hs_store *s = hs_store_open(bad[i], err, sizeof err);
        if (s)
            fail_msg("%s opened", bad[i]);
        assert_true(err[0] != 0);
    }
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest basic[] = {
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_slow),
        cmocka_unit_test(test_copies),
        cmocka_unit_test(test_concurrent_same_id),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_old_schema),
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_big_put),
        cmocka_unit_test(test_recovery),
    };
    const struct CMUnitTest rollups[] = {
        cmocka_unit_test(test_rollup),
        cmocka_unit_test(test_rollup_complement),
        cmocka_unit_test(test_filtered),
        cmocka_unit_test(test_day_rollups),
        cmocka_unit_test(test_trusted_days),
        cmocka_unit_test(test_label_rollup_added),
        cmocka_unit_test(test_label_rollup_keys),
        cmocka_unit_test(test_zero_stack),
        cmocka_unit_test(test_feed),
        cmocka_unit_test(test_feed_migration),
    };
    const char *part = getenv("HS_CH_TEST_PART");
    int rc = 0;
    if (!part || strcmp(part, "rollups"))
        rc |= cmocka_run_group_tests(basic, NULL, NULL);
    if (!part || strcmp(part, "basic"))
        rc |= cmocka_run_group_tests(rollups, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
