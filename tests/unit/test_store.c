/* test_store.c — the backend-agnostic store suite: every backend must pass
 * it. It opens getenv("HS_STORE_TEST_URL") when set (e.g. a ClickHouse
 * URL), else a fresh temporary sqlite directory per test, and uses only
 * store.h and stack.h, never a backend's internals. Each test works in a
 * service of its own (unique per run), so a shared database is fine.
 *
 * Profiles come from bench/store_gen.h (realistic CPU profiles: deep
 * stacks, inline chains, stripped-library frames, tid/thread_name labels).
 * Expected results are computed here, independently of the store: sums of
 * the decomposed samples by stack hash, and for the round trip a separate
 * expansion of the original pprof samples into frames. */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../bench/store_gen.h"
#include "profile/profile.h"
#include "server/query_cache.h"
#include "store/stack.h"
#include "store/store.h"

#define SEC 1000000000LL
#define DAY (86400 * SEC)

typedef struct {
    hs_store *s;
    char dir[256]; /* the temporary sqlite dir, "" with HS_STORE_TEST_URL */
    char url[300];
    char svc[64];
    int64_t now;   /* the wall clock, ns; profiles are placed around it */
    gen_model *m;
} fx;

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    static int counter;
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256] = "";
    const char *url = getenv("HS_STORE_TEST_URL");
    if (url && *url) {
        snprintf(f->url, sizeof f->url, "%s", url);
    } else {
        snprintf(f->dir, sizeof f->dir, "/tmp/hs-store-test-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->url, sizeof f->url, "sqlite:%s", f->dir);
    }
    f->s = hs_store_open(f->url, err, sizeof err);
    if (!f->s)
        fail_msg("open: %s", err);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->now = (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
    snprintf(f->svc, sizeof f->svc, "test-%d-%d-%" PRId64, (int)getpid(), counter++, (int64_t)ts.tv_nsec);
    f->m = gen_model_new(42, 400);
    assert_non_null(f->m);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    hs_store_close(f->s);
    if (f->dir[0])
        nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    gen_model_free(f->m);
    free(f);
    return 0;
}

/* ---- decomposed profiles ---- */

typedef struct {
    hs_store_profile sp;
    hs_stack_parts *parts;
    hs_store_label labels[4];
    hs_profile *src;
} dp;

/* A decomposed generated profile; labels are "k=v" strings, sorted by key. */
static void mk(dp *d, fx *f, const char *svc, uint64_t seed, const char *version, int64_t start, int n_labels, ...)
{
    memset(d, 0, sizeof *d);
    d->src = gen_profile(f->m, seed, (int)(seed % 7), 60, 3);
    assert_non_null(d->src);
    char err[256] = "";
    if (hs_stack_decompose(d->src, NULL, &d->sp, &d->parts, err, sizeof err) < 0)
        fail_msg("decompose: %s", err);
    va_list ap;
    va_start(ap, n_labels);
    for (int i = 0; i < n_labels; i++) {
        d->labels[i].key = va_arg(ap, const char *);
        d->labels[i].value = va_arg(ap, const char *);
    }
    va_end(ap);
    d->sp.service = svc;
    d->sp.type = "cpu";
    d->sp.version = version;
    d->sp.labels = d->labels;
    d->sp.n_labels = (size_t)n_labels;
    d->sp.start_ns = start;
    d->sp.duration_ns = 10 * SEC;
    hs_stack_profile_id(&seed, sizeof seed, &d->sp, d->sp.id);
}

static void unmk(dp *d)
{
    hs_stack_parts_free(d->parts);
    hs_profile_free(d->src);
}

static void put(fx *f, dp *ds, size_t n, size_t want_dups)
{
    const hs_store_profile *ps[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++)
        ps[i] = &ds[i].sp;
    char err[256] = "";
    size_t dups = 999;
    if (hs_store_put(f->s, ps, n, &dups, err, sizeof err) != 0)
        fail_msg("put: %s", err);
    assert_int_equal(dups, want_dups);
}

/* ---- expected merges, computed here ---- */

typedef struct {
    uint64_t stack;
    int64_t v[HS_STORE_MAX_VALUES];
} xrow;

static int xrow_cmp(const void *a, const void *b)
{
    const xrow *x = a, *y = b;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The rows of the profiles selected by sel[i] != 0, summed by stack. */
static xrow *expect(dp *ds, size_t n, const int *sel, size_t *n_out, int64_t *n_prof, int64_t totals[])
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ds[i].sp.n_samples;
    xrow *all = calloc(total + 1, sizeof *all);
    assert_non_null(all);
    size_t k = 0;
    *n_prof = 0;
    memset(totals, 0, HS_STORE_MAX_VALUES * sizeof *totals);
    for (size_t i = 0; i < n; i++) {
        if (sel && !sel[i])
            continue;
        (*n_prof)++;
        for (size_t j = 0; j < ds[i].sp.n_samples; j++) {
            all[k].stack = ds[i].sp.samples[j].stack;
            for (int v = 0; v < HS_STORE_MAX_VALUES; v++) {
                all[k].v[v] = ds[i].sp.samples[j].values[v];
                totals[v] += all[k].v[v];
            }
            k++;
        }
    }
    qsort(all, k, sizeof *all, xrow_cmp);
    size_t o = 0;
    for (size_t i = 0; i < k; i++) {
        if (o && all[o - 1].stack == all[i].stack) {
            for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
                all[o - 1].v[v] += all[i].v[v];
        } else {
            all[o++] = all[i];
        }
    }
    *n_out = o;
    return all;
}

static void check_merge(fx *f, const hs_store_query *q, dp *ds, size_t n, const int *sel)
{
    size_t nx;
    int64_t np, totals[HS_STORE_MAX_VALUES];
    xrow *x = expect(ds, n, sel, &nx, &np, totals);
    hs_store_merged m;
    char err[256] = "";
    if (hs_store_merge(f->s, q, &m, err, sizeof err) != 0)
        fail_msg("merge: %s", err);
    assert_int_equal(m.n_profiles, np);
    assert_int_equal(m.n_rows, nx);
    for (int v = 0; v < 2; v++)
        assert_int_equal(m.totals[v], totals[v]);
    xrow *got = calloc(m.n_rows + 1, sizeof *got);
    assert_non_null(got);
    for (size_t i = 0; i < m.n_rows; i++) {
        got[i].stack = m.rows[i].stack;
        for (int v = 0; v < 2; v++)
            got[i].v[v] = m.rows[i].values[v];
    }
    qsort(got, m.n_rows, sizeof *got, xrow_cmp);
    for (size_t i = 0; i < nx; i++) {
        assert_true(got[i].stack == x[i].stack);
        assert_int_equal(got[i].v[0], x[i].v[0]);
        assert_int_equal(got[i].v[1], x[i].v[1]);
    }
    if (np) {
        assert_int_equal(m.types.n, 2);
        assert_string_equal(m.types.type[1], "cpu");
        assert_string_equal(m.types.unit[1], "nanoseconds");
        assert_string_equal(m.types.period_type, "cpu");
        assert_int_equal(m.types.period, GEN_PERIOD);
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (size_t i = 0; i < n; i++)
            if (!sel || sel[i]) {
                lo = ds[i].sp.start_ns < lo ? ds[i].sp.start_ns : lo;
                hi = ds[i].sp.start_ns + ds[i].sp.duration_ns > hi ? ds[i].sp.start_ns + ds[i].sp.duration_ns : hi;
            }
        assert_int_equal(m.min_start_ns, lo);
        assert_int_equal(m.max_end_ns, hi);
    }
    free(got);
    free(x);
    hs_store_merged_free(&m);
}

/* ---- tests ---- */

static void test_put_merge_sum(void **state)
{
    fx *f = *state;
    dp ds[20];
    for (size_t i = 0; i < 20; i++)
        mk(&ds[i], f, f->svc, 100 + i, "1.0", f->now - 600 * SEC + (int64_t)i * SEC, 1, "instance", "a");
    for (size_t i = 0; i < 20; i += 5)
        put(f, ds + i, 5, 0);
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    size_t nx;
    int64_t np, tot[HS_STORE_MAX_VALUES];
    free(expect(ds, 20, NULL, &nx, &np, tot));
    assert_true(nx > 100 && np == 20 && tot[0] > 0); /* a merge worth checking */
    check_merge(f, &q, ds, 20, NULL);
    /* a time range covering everything gives the same */
    q.from_ns = f->now - DAY;
    q.until_ns = f->now + DAY;
    check_merge(f, &q, ds, 20, NULL);
    for (size_t i = 0; i < 20; i++)
        unmk(&ds[i]);
}

static void test_duplicates(void **state)
{
    fx *f = *state;
    dp ds[3];
    for (size_t i = 0; i < 3; i++)
        mk(&ds[i], f, f->svc, 200 + i, "", f->now - 60 * SEC + (int64_t)i * SEC, 0);
    put(f, ds, 2, 0);
    dp again[3] = {ds[0], ds[2], ds[2]}; /* stored, new, new again in the same batch */
    put(f, again, 3, 2);
    put(f, ds, 3, 3);
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    check_merge(f, &q, ds, 3, NULL);
    for (size_t i = 0; i < 3; i++)
        unmk(&ds[i]);
}

static void test_selection(void **state)
{
    fx *f = *state;
    enum { N = 12 };
    dp ds[N];
    static const char *const vers[] = {"v1", "v2", "v3"};
    int64_t base = f->now - 3600 * SEC;
    for (int i = 0; i < N; i++)
        mk(&ds[i], f, f->svc, 300 + (uint64_t)i, vers[i % 3], base + i * 60 * SEC, 2, "instance", i % 2 ? "a" : "b",
           "zone", i < 6 ? "z1" : "z2");
    put(f, ds, N, 0);
    int sel[N];
    hs_store_query q = {.service = f->svc, .type = "cpu"};

    const char *v1[] = {"v1"};
    q.versions = v1;
    q.n_versions = 1;
    for (int i = 0; i < N; i++)
        sel[i] = i % 3 == 0;
    check_merge(f, &q, ds, N, sel);

    const char *v13[] = {"v1", "v3"};
    q.versions = v13;
    q.n_versions = 2;
    for (int i = 0; i < N; i++)
        sel[i] = i % 3 != 1;
    check_merge(f, &q, ds, N, sel);
    q.n_versions = 0;

    hs_store_label la[] = {{"instance", "a"}, {"zone", "z2"}};
    q.labels = la;
    q.n_labels = 1;
    for (int i = 0; i < N; i++)
        sel[i] = i % 2 == 1;
    check_merge(f, &q, ds, N, sel);
    q.n_labels = 2; /* both must match */
    for (int i = 0; i < N; i++)
        sel[i] = i % 2 == 1 && i >= 6;
    check_merge(f, &q, ds, N, sel);
    hs_store_label none[] = {{"zone", "nowhere"}};
    q.labels = none;
    q.n_labels = 1;
    for (int i = 0; i < N; i++)
        sel[i] = 0;
    check_merge(f, &q, ds, N, sel);
    q.n_labels = 0;

    /* [base + 2 min, base + 5 min): profiles 2, 3, 4 */
    q.from_ns = base + 120 * SEC;
    q.until_ns = base + 300 * SEC;
    for (int i = 0; i < N; i++)
        sel[i] = i >= 2 && i < 5;
    check_merge(f, &q, ds, N, sel);
    /* with a version too: profile 3 only */
    q.versions = v1;
    q.n_versions = 1;
    for (int i = 0; i < N; i++)
        sel[i] = i == 3;
    check_merge(f, &q, ds, N, sel);
    q = (hs_store_query){.service = f->svc, .type = "cpu"};

    const char *ids[] = {ds[7].sp.id, ds[9].sp.id};
    q.ids = ids;
    q.n_ids = 2;
    for (int i = 0; i < N; i++)
        sel[i] = i == 7 || i == 9;
    check_merge(f, &q, ds, N, sel);

    /* another type of the same service is not mixed in */
    q = (hs_store_query){.service = f->svc, .type = "wall"};
    for (int i = 0; i < N; i++)
        sel[i] = 0;
    check_merge(f, &q, ds, N, sel);
    for (int i = 0; i < N; i++)
        unmk(&ds[i]);
}

/* Time ranges that cut hours (a backend may pre-aggregate by hour: the
 * ClickHouse store's rollup answers the whole hours, its samples the
 * rest) select exactly the profiles that start inside them. */
static void test_hour_ranges(void **state)
{
    fx *f = *state;
    enum { N = 16 };
    const int64_t H = 3600 * SEC;
    int64_t h0 = (f->now / H - 6) * H; /* six hours ago, on the hour */
    /* Offsets in minutes from h0: on hour boundaries, just after and
     * before them, inside hours; over five hours. */
    static const int mins[N] = {0, 1, 30, 59, 60, 61, 90, 119, 120, 150, 179, 180, 200, 240, 270, 299};
    dp ds[N];
    for (int i = 0; i < N; i++)
        mk(&ds[i], f, f->svc, 900 + (uint64_t)i, i % 2 ? "v1" : "v2", h0 + mins[i] * 60 * SEC, 1, "instance",
           i % 3 ? "a" : "b");
    ds[3].sp.start_ns += 59 * SEC; /* 59:59 */
    put(f, ds, N / 2, 0);
    put(f, ds + N / 2, N / 2, 0);
    static const struct {
        int from, until; /* minutes from h0; until -1: no bound */
    } r[] = {{0, 300}, {0, 180}, {60, 180}, {1, 180}, {30, 179}, {61, 119}, {59, 61},
             {0, 1}, {-600, -1}, {90, -1}, {120, -1}, {150, 151}, {-60, 121}};
    for (size_t k = 0; k < sizeof r / sizeof *r; k++) {
        int sel[N];
        hs_store_query q = {.service = f->svc, .type = "cpu"};
        q.from_ns = h0 + (int64_t)r[k].from * 60 * SEC;
        q.until_ns = r[k].until < 0 ? 0 : h0 + (int64_t)r[k].until * 60 * SEC;
        for (int i = 0; i < N; i++)
            sel[i] = ds[i].sp.start_ns >= q.from_ns && (!q.until_ns || ds[i].sp.start_ns < q.until_ns);
        check_merge(f, &q, ds, N, sel);
        /* and with a version (a filter a rollup does not key) */
        const char *v1[] = {"v1"};
        q.versions = v1;
        q.n_versions = 1;
        for (int i = 0; i < N; i++)
            sel[i] = sel[i] && i % 2;
        check_merge(f, &q, ds, N, sel);
    }
    for (int i = 0; i < N; i++)
        unmk(&ds[i]);
}

static void expect_strings(char **v, size_t n, const char *const *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i], want[i]);
    hs_store_strings_free(v, n);
}

static void test_listings(void **state)
{
    fx *f = *state;
    dp ds[4];
    char svc2[80];
    snprintf(svc2, sizeof svc2, "%s-b", f->svc);
    mk(&ds[0], f, f->svc, 400, "2.0", f->now - 100 * SEC, 2, "instance", "i1", "zone", "eu");
    mk(&ds[1], f, f->svc, 401, "1.0", f->now - 90 * SEC, 1, "instance", "i2");
    mk(&ds[2], f, svc2, 402, "3.0", f->now - 80 * SEC, 1, "pod", "p1");
    mk(&ds[3], f, f->svc, 403, "1.0", f->now - 70 * SEC, 0);
    ds[3].sp.type = "wall"; /* same sample types, another profile type */
    put(f, ds, 4, 0);
    char err[256] = "";
    char **v;
    size_t n;
    hs_store_query q = {0};
    assert_int_equal(hs_store_services(f->s, &q, &v, &n, err, sizeof err), 0);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        found += strcmp(v[i], f->svc) == 0 || strcmp(v[i], svc2) == 0;
        if (i)
            assert_true(strcmp(v[i - 1], v[i]) < 0);
    }
    assert_int_equal(found, 2);
    hs_store_strings_free(v, n);

    q.service = f->svc;
    assert_int_equal(hs_store_types_of(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"cpu", "wall"}, 2);
    q.type = "cpu";
    assert_int_equal(hs_store_versions(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"1.0", "2.0"}, 2);
    assert_int_equal(hs_store_label_names(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"instance", "zone"}, 2);
    assert_int_equal(hs_store_label_values(f->s, &q, "instance", &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"i1", "i2"}, 2);
    /* narrowed by version and by time */
    const char *v1[] = {"1.0"};
    q.versions = v1;
    q.n_versions = 1;
    assert_int_equal(hs_store_label_values(f->s, &q, "instance", &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"i2"}, 1);
    q.n_versions = 0;
    q.from_ns = f->now - 95 * SEC;
    assert_int_equal(hs_store_versions(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"1.0"}, 1);
    q.from_ns = 0;
    q.service = svc2;
    assert_int_equal(hs_store_label_names(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"pod"}, 1);

    hs_store_types t;
    q.service = f->svc;
    assert_int_equal(hs_store_type_info(f->s, &q, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.type[0], "samples");
    assert_string_equal(t.unit[0], "count");
    assert_string_equal(t.type[1], "cpu");
    assert_string_equal(t.unit[1], "nanoseconds");
    assert_int_equal(t.default_index, 1);
    assert_int_equal(t.period, GEN_PERIOD);
    q.type = "heap";
    assert_int_equal(hs_store_type_info(f->s, &q, &t, err, sizeof err), -1);
    for (int i = 0; i < 4; i++)
        unmk(&ds[i]);
}

static void test_series_and_profiles(void **state)
{
    fx *f = *state;
    enum { N = 10 };
    dp ds[N];
    int64_t base = f->now - 7200 * SEC;
    for (int i = 0; i < N; i++)
        mk(&ds[i], f, f->svc, 500 + (uint64_t)i, i < 5 ? "a" : "b", base + i * 60 * SEC, 0);
    /* put out of order */
    put(f, ds + 5, 5, 0);
    put(f, ds, 5, 0);
    char err[256] = "";
    hs_store_query q = {.service = f->svc, .type = "cpu", .from_ns = base, .until_ns = base + 3600 * SEC};
    hs_store_point *pts;
    size_t n;
    assert_int_equal(hs_store_series(f->s, &q, 180 * SEC, &pts, &n, err, sizeof err), 0);
    assert_int_equal(n, 4); /* [0,3) [3,6) [6,9) [9] */
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(pts[k].t_ns, base + (int64_t)k * 180 * SEC);
        int64_t np = 0, t1 = 0;
        for (int i = (int)k * 3; i < N && i < (int)k * 3 + 3; i++) {
            np++;
            t1 += ds[i].sp.totals[1];
        }
        assert_int_equal(pts[k].n_profiles, np);
        assert_int_equal(pts[k].totals[1], t1);
    }
    free(pts);
    /* an empty range: no points */
    q.from_ns = base - 7200 * SEC;
    q.until_ns = base;
    assert_int_equal(hs_store_series(f->s, &q, 60 * SEC, &pts, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    free(pts);

    q.from_ns = base;
    q.until_ns = 0;
    hs_store_profile_row *rows;
    assert_int_equal(hs_store_profiles(f->s, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, N);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(rows[i].id, ds[i].sp.id);
        assert_string_equal(rows[i].version, ds[i].sp.version);
        assert_int_equal(rows[i].start_ns, ds[i].sp.start_ns);
        assert_int_equal(rows[i].duration_ns, ds[i].sp.duration_ns);
        assert_int_equal(rows[i].totals[0], ds[i].sp.totals[0]);
        assert_int_equal(rows[i].totals[1], ds[i].sp.totals[1]);
    }
    hs_store_profile_rows_free(rows, n);
    const char *vb[] = {"b"};
    q.versions = vb;
    q.n_versions = 1;
    assert_int_equal(hs_store_profiles(f->s, &q, 3, &rows, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(rows[i].id, ds[5 + i].sp.id);
    hs_store_profile_rows_free(rows, n);
    for (int i = 0; i < N; i++)
        unmk(&ds[i]);
}

typedef struct {
    uint64_t *h;
    size_t n;
    size_t found;
    int bytes_ok;
    const dp *src;
    size_t n_src;
} found_set;

static void count_found(void *arg, uint64_t hash, const void *data, size_t len)
{
    found_set *fs = arg;
    fs->found++;
    for (size_t i = 0; i < fs->n_src; i++)
        for (size_t j = 0; j < fs->src[i].sp.n_stacks; j++)
            if (fs->src[i].sp.stacks[j].hash == hash) {
                fs->bytes_ok &= fs->src[i].sp.stacks[j].len == len &&
                                memcmp(fs->src[i].sp.stacks[j].data, data, len) == 0;
                return;
            }
    fs->bytes_ok = 0;
}

static bool has_stack(const dp *ds, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < ds[i].sp.n_stacks; j++)
            if (ds[i].sp.stacks[j].hash == h)
                return true;
    return false;
}

static void test_retention(void **state)
{
    fx *f = *state;
    enum { N = 5 };
    dp old[N], young[N];
    gen_model *other = gen_model_new(4242, 300); /* old profiles' own stacks */
    assert_non_null(other);
    gen_model *keep = f->m;
    for (int i = 0; i < N; i++) {
        f->m = other;
        mk(&old[i], f, f->svc, 600 + (uint64_t)i, "old", f->now - 10 * DAY + i * SEC, 0);
        f->m = keep;
        mk(&young[i], f, f->svc, 700 + (uint64_t)i, "new", f->now - DAY + i * SEC, 0);
    }
    put(f, old, N, 0);
    put(f, young, N, 0);
    char err[256] = "";
    hs_store_stats st0, st1;
    assert_int_equal(hs_store_stats_get(f->s, &st0, err, sizeof err), 0);
    assert_true(st0.profiles >= 2 * N);

    /* the stacks only old profiles use */
    uint64_t *only_old = calloc(4096, sizeof *only_old);
    size_t n_only = 0;
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < old[i].sp.n_stacks; j++) {
            uint64_t h = old[i].sp.stacks[j].hash;
            bool dup = false;
            for (size_t k = 0; k < n_only; k++)
                dup |= only_old[k] == h;
            if (!dup && !has_stack(young, N, h) && n_only < 4096)
                only_old[n_only++] = h;
        }
    assert_true(n_only > 10);
    found_set fs = {.found = 0, .bytes_ok = 1, .src = old, .n_src = N};
    assert_int_equal(hs_store_get_stacks(f->s, only_old, n_only, count_found, &fs, err, sizeof err), 0);
    assert_int_equal(fs.found, n_only);
    assert_true(fs.bytes_ok);

    assert_int_equal(hs_store_retain(f->s, f->now - 5 * DAY, err, sizeof err), 0);

    hs_store_query q = {.service = f->svc, .type = "cpu"};
    check_merge(f, &q, young, N, NULL);
    fs.found = 0;
    assert_int_equal(hs_store_get_stacks(f->s, only_old, n_only, count_found, &fs, err, sizeof err), 0);
    assert_int_equal(fs.found, 0);
    assert_int_equal(hs_store_stats_get(f->s, &st1, err, sizeof err), 0);
    assert_true(st1.stacks <= st0.stacks - (int64_t)n_only);
    assert_true(st1.profiles <= st0.profiles - N);
    /* the young profiles' stacks are all there, byte for byte */
    uint64_t hs[4096];
    size_t nh = 0;
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < young[i].sp.n_stacks && nh < 4096; j++) {
            bool dup = false;
            for (size_t k = 0; k < nh; k++)
                dup |= hs[k] == young[i].sp.stacks[j].hash;
            if (!dup)
                hs[nh++] = young[i].sp.stacks[j].hash;
        }
    found_set fy = {.found = 0, .bytes_ok = 1, .src = young, .n_src = N};
    assert_int_equal(hs_store_get_stacks(f->s, hs, nh, count_found, &fy, err, sizeof err), 0);
    assert_int_equal(fy.found, nh);
    assert_true(fy.bytes_ok);
    /* old ones are gone from the listings too */
    char **v;
    size_t n;
    assert_int_equal(hs_store_versions(f->s, &q, &v, &n, err, sizeof err), 0);
    expect_strings(v, n, (const char *[]){"new"}, 1);
    /* and storing after a retention works (stacks dropped are re-stored) */
    dp again;
    f->m = other;
    mk(&again, f, f->svc, 800, "old2", f->now - 2 * SEC, 0);
    f->m = keep;
    put(f, &again, 1, 0);
    q.versions = (const char *[]){"old2"};
    q.n_versions = 1;
    check_merge(f, &q, &again, 1, NULL);
    unmk(&again);
    free(only_old);
    for (int i = 0; i < N; i++) {
        unmk(&old[i]);
        unmk(&young[i]);
    }
    gen_model_free(other);
}

static void test_unknown_stacks_and_empty(void **state)
{
    fx *f = *state;
    dp d;
    mk(&d, f, f->svc, 900, "", f->now - 5 * SEC, 0);
    put(f, &d, 1, 0);
    char err[256] = "";
    uint64_t hs[3] = {0x1234567890abcdefULL, d.sp.stacks[0].hash, 42};
    found_set fs = {.found = 0, .bytes_ok = 1, .src = &d, .n_src = 1};
    assert_int_equal(hs_store_get_stacks(f->s, hs, 3, count_found, &fs, err, sizeof err), 0);
    assert_int_equal(fs.found, 1);
    assert_true(fs.bytes_ok);
    /* a service without profiles: an empty merge, no error */
    char none[80];
    snprintf(none, sizeof none, "%s-none", f->svc);
    hs_store_query q = {.service = none, .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(f->s, &q, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 0);
    assert_int_equal(m.n_rows, 0);
    hs_store_merged_free(&m);
    /* profiles whose sample types differ from the stored ones are refused,
     * and the store goes on */
    dp bad;
    mk(&bad, f, f->svc, 901, "", f->now - 4 * SEC, 0);
    bad.sp.types.type[1] = "wall";
    const hs_store_profile *pb = &bad.sp;
    size_t dups;
    assert_int_not_equal(hs_store_put(f->s, &pb, 1, &dups, err, sizeof err), 0);
    assert_true(strlen(err) > 0);
    q.service = f->svc;
    check_merge(f, &q, &d, 1, NULL);
    unmk(&bad);
    unmk(&d);
}

/* A window with no samples (a program that got no CPU in it, as on a
 * loaded machine) is stored, listed and merges to nothing; first in a put,
 * it once made the sqlite store sort a NULL array (UBSan stopped the
 * server: continuous_e2e under ASan at load 15). */
static void test_empty_profile(void **state)
{
    fx *f = *state;
    dp d;
    mk(&d, f, f->svc, 902, "", f->now - 3 * SEC, 0);
    d.sp.n_samples = 0;
    d.sp.n_stacks = 0;
    put(f, &d, 1, 0);
    char err[256] = "";
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(f->s, &q, &m, err, sizeof err), 0);
    assert_int_equal(m.n_profiles, 1);
    assert_int_equal(m.n_rows, 0);
    hs_store_merged_free(&m);
    unmk(&d);
}

/* ---- round trip: stored + merged + rebuilt == the originals merged ---- */

typedef struct {
    char *key;
    int64_t v[2];
} xstack;

static int xstack_cmp(const void *a, const void *b)
{
    return strcmp(((const xstack *)a)->key, ((const xstack *)b)->key);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each sample as one string of expanded frames (the same rules as stack.h,
 * written again here) plus its labels but tid; appended to *out. */
static void expand(const hs_profile *p, xstack **out, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        char key[16384];
        size_t k = 0;
        for (size_t j = 0; j < s->n_locations; j++) {
            const hs_location *l = hs_profile_location(p, s->location_ids[j]);
            assert_non_null(l);
            const hs_mapping *m = hs_profile_mapping(p, l->mapping_id);
            const char *mf = m ? hs_profile_string(p, m->filename) : "";
            if (l->n_lines == 0) {
                const char *b = strrchr(mf, '/');
                k += (size_t)snprintf(key + k, sizeof key - k, "%s+0x%" PRIx64 "||0|0|%s|0;", b ? b + 1 : mf,
                                      l->address - m->memory_start + m->file_offset, mf);
                continue;
            }
            for (size_t li = 0; li < l->n_lines; li++) {
                const hs_function *fn = hs_profile_function(p, l->lines[li].function_id);
                k += (size_t)snprintf(key + k, sizeof key - k, "%s|%s|%" PRId64 "|%" PRId64 "|%s|%d;",
                                      hs_profile_string(p, fn->name), hs_profile_string(p, fn->filename),
                                      l->lines[li].line, fn->start_line, mf, li + 1 < l->n_lines);
            }
            assert_true(k < sizeof key - 512);
        }
        char *labels[16];
        size_t nl = 0;
        for (size_t j = 0; j < s->n_labels && nl < 16; j++) {
            const char *key_s = hs_profile_string(p, s->labels[j].key);
            if (strcmp(key_s, "tid") == 0)
                continue;
            char lb[256];
            snprintf(lb, sizeof lb, "%s=%s/%" PRId64 "/%s", key_s, hs_profile_string(p, s->labels[j].str),
                     s->labels[j].num, hs_profile_string(p, s->labels[j].num_unit));
            labels[nl++] = strdup(lb);
        }
        qsort(labels, nl, sizeof *labels, str_cmp);
        for (size_t j = 0; j < nl; j++) {
            k += (size_t)snprintf(key + k, sizeof key - k, "{%s}", labels[j]);
            free(labels[j]);
        }
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            *out = realloc(*out, *cap * sizeof **out);
            assert_non_null(*out);
        }
        (*out)[*n].key = strdup(key);
        (*out)[*n].v[0] = s->values[0];
        (*out)[*n].v[1] = s->values[1];
        (*n)++;
    }
}

static size_t fold(xstack *x, size_t n)
{
    qsort(x, n, sizeof *x, xstack_cmp);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o && strcmp(x[o - 1].key, x[i].key) == 0) {
            x[o - 1].v[0] += x[i].v[0];
            x[o - 1].v[1] += x[i].v[1];
            free(x[i].key);
        } else {
            x[o++] = x[i];
        }
    }
    return o;
}

static void test_roundtrip(void **state)
{
    fx *f = *state;
    enum { N = 8 };
    dp ds[N];
    xstack *want = NULL, *got = NULL;
    size_t nw = 0, cw = 0, ng = 0, cg = 0;
    for (int i = 0; i < N; i++) {
        mk(&ds[i], f, f->svc, 1000 + (uint64_t)i, "rt", f->now - 300 * SEC + i * SEC, 0);
        expand(ds[i].src, &want, &nw, &cw);
    }
    nw = fold(want, nw);
    size_t stripped = 0;
    for (size_t i = 0; i < nw; i++)
        stripped += strstr(want[i].key, "libz.so.1.2.13+0x") != NULL;
    assert_true(stripped > 0 && nw > 100); /* the generator makes both kinds */
    put(f, ds, N, 0);
    char err[256] = "";
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    hs_store_merged m;
    assert_int_equal(hs_store_merge(f->s, &q, &m, err, sizeof err), 0);
    size_t missing = 99;
    int src = 0;
    hs_profile *p = hs_stack_cache_build(NULL, f->s, &m, &missing, &src, err, sizeof err);
    if (!p)
        fail_msg("build: %s", err);
    assert_int_equal(missing, 0);
    assert_int_equal(p->n_sample_types, 2);
    assert_string_equal(hs_profile_string(p, p->sample_types[1].type), "cpu");
    assert_int_equal(p->period, GEN_PERIOD);
    /* inline chains came back as multi-line locations */
    size_t multi = 0;
    for (size_t i = 0; i < p->n_locations; i++)
        multi += p->locations[i].n_lines > 1;
    assert_true(multi > 0);
    /* and the rebuilt profile survives the pprof codec */
    void *enc;
    size_t enclen;
    assert_int_equal(hs_profile_encode(p, &enc, &enclen, err, sizeof err), 0);
    hs_profile *p2 = hs_profile_decode(enc, enclen, err, sizeof err);
    free(enc);
    if (!p2)
        fail_msg("decode: %s", err);
    expand(p2, &got, &ng, &cg);
    ng = fold(got, ng);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_string_equal(got[i].key, want[i].key);
        assert_int_equal(got[i].v[0], want[i].v[0]);
        assert_int_equal(got[i].v[1], want[i].v[1]);
    }
    for (size_t i = 0; i < nw; i++)
        free(want[i].key);
    for (size_t i = 0; i < ng; i++)
        free(got[i].key);
    free(want);
    free(got);
    hs_profile_free(p);
    hs_profile_free(p2);
    hs_store_merged_free(&m);
    for (int i = 0; i < N; i++)
        unmk(&ds[i]);
}

/* ---- concurrent puts ---- */

typedef struct {
    fx *f;
    dp *ds;
    size_t n;
    int rc;
    char err[256];
} worker;

static void *put_worker(void *arg)
{
    worker *w = arg;
    for (size_t i = 0; i < w->n && w->rc == 0; i += 2) {
        const hs_store_profile *ps[2] = {&w->ds[i].sp, &w->ds[i + 1].sp};
        size_t dups;
        w->rc = hs_store_put(w->f->s, ps, 2, &dups, w->err, sizeof w->err);
        if (w->rc == 0 && dups != 0)
            w->rc = 100;
        /* readers run beside the writers */
        hs_store_query q = {.service = w->f->svc, .type = "cpu"};
        hs_store_merged m;
        if (w->rc == 0)
            w->rc = hs_store_merge(w->f->s, &q, &m, w->err, sizeof w->err);
        if (w->rc == 0)
            hs_store_merged_free(&m);
    }
    return NULL;
}

static void test_concurrent_puts(void **state)
{
    fx *f = *state;
    enum { T = 4, PER = 10 };
    dp *ds = calloc(T * PER, sizeof *ds);
    assert_non_null(ds);
    for (int i = 0; i < T * PER; i++)
        mk(&ds[i], f, f->svc, 2000 + (uint64_t)i, "c", f->now - 900 * SEC + i * SEC, 0);
    pthread_t th[T];
    worker w[T];
    for (int t = 0; t < T; t++) {
        w[t] = (worker){f, ds + t * PER, PER, 0, ""};
        assert_int_equal(pthread_create(&th[t], NULL, put_worker, &w[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        if (w[t].rc != 0)
            fail_msg("thread %d: %d %s", t, w[t].rc, w[t].err);
    }
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    check_merge(f, &q, ds, T * PER, NULL);
    for (int i = 0; i < T * PER; i++)
        unmk(&ds[i]);
    free(ds);
}

/* ---- a put that returned 0 survives kill -9 ---- */

static void test_kill9_durability(void **state)
{
    fx *f = *state;
    enum { N = 300 };
    dp *ds = calloc(N, sizeof *ds);
    assert_non_null(ds);
    for (int i = 0; i < N; i++)
        mk(&ds[i], f, f->svc, 3000 + (uint64_t)i, "k", f->now - 1800 * SEC + i * SEC, 0);
    hs_store_close(f->s); /* the child opens the store itself */
    f->s = NULL;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        char err[256];
        hs_store *s = hs_store_open(f->url, err, sizeof err);
        if (!s)
            _exit(3);
        for (int i = 0; i < N; i++) {
            const hs_store_profile *p = &ds[i].sp;
            size_t dups;
            if (hs_store_put(s, &p, 1, &dups, err, sizeof err) != 0)
                _exit(4);
            if (write(pfd[1], &i, sizeof i) != sizeof i) /* acknowledged */
                _exit(5);
        }
        _exit(0); /* not reached in time, normally */
    }
    close(pfd[1]);
    int acked = -1, i, got = 0;
    while (read(pfd[0], &i, sizeof i) == sizeof i) {
        acked = i;
        if (++got == 25)
            kill(pid, SIGKILL); /* in the middle of a put, most likely */
    }
    close(pfd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status))
        fail_msg("the child exited with %d before it was killed", WEXITSTATUS(status));
    assert_true(acked >= 24);
    char err[256] = "";
    f->s = hs_store_open(f->url, err, sizeof err);
    if (!f->s)
        fail_msg("reopen: %s", err);
    /* every acknowledged profile is there; at most the one being put beyond */
    hs_store_query q = {.service = f->svc, .type = "cpu"};
    hs_store_profile_row *rows;
    size_t n;
    assert_int_equal(hs_store_profiles(f->s, &q, 0, &rows, &n, err, sizeof err), 0);
    assert_true(n >= (size_t)acked + 1 && n <= (size_t)acked + 2);
    for (int k = 0; k <= acked; k++)
        assert_string_equal(rows[k].id, ds[k].sp.id);
    hs_store_profile_rows_free(rows, n);
    check_merge(f, &q, ds, n, NULL);
    for (int k = 0; k < N; k++)
        unmk(&ds[k]);
    free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_merge_sum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hour_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_series_and_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_stacks_and_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_puts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_durability, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
