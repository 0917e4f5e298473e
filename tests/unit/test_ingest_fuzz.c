/* test_ingest_fuzz.c — both ingest handlers on thousands of mutated
 * requests (deterministic seed): pprof bodies gzipped and plain, folded and
 * lines text, multipart forms, and mutated query strings (names, times,
 * rates, labels, unknown parameters), with tight limits so the bounds are
 * hit. Every call must return (no crash, no hang: the whole run is bounded
 * in time) with a status it also put in the response; afterwards the store
 * holds exactly the distinct ids that got a 200 — nothing from a rejected
 * request. */
#define _GNU_SOURCE /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "ingest_util.h"

#define ITERATIONS 20000
#define TIME_BUDGET_S 40.0 /* well under ctest's timeout, even under ASan */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static size_t rnd_below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

typedef struct {
    unsigned char *d;
    size_t len, cap;
} buf;

static void buf_set(buf *b, const void *d, size_t len)
{
    if (len + 256 > b->cap) {
        b->cap = len + 256;
        b->d = realloc(b->d, b->cap);
    }
    memcpy(b->d, d, len);
    b->len = len;
}

static const char *const tokens[] = {";", " ", "\n", "{", "}", "=", ",", "\r\n", "--XyZb0und", "\r\n\r\n",
                                     " 1", " 99999999999999999999", " -1", "0.5", "\x1f\x8b", "\0"};

/* Mutate b in place: a few random edits. */
static void mutate(buf *b)
{
    int edits = 1 + (int)rnd_below(4);
    for (int e = 0; e < edits; e++) {
        size_t pos = rnd_below(b->len + 1);
        switch (rnd_below(6)) {
        case 0: /* flip a bit */
            if (b->len)
                b->d[rnd_below(b->len)] ^= (unsigned char)(1u << rnd_below(8));
            break;
        case 1: /* random byte */
            if (b->len)
                b->d[rnd_below(b->len)] = (unsigned char)rnd();
            break;
        case 2: /* truncate */
            b->len = pos;
            break;
        case 3: { /* insert a token */
            const char *t = tokens[rnd_below(sizeof tokens / sizeof tokens[0])];
            size_t tl = strlen(t) ? strlen(t) : 1;
            if (b->len + tl <= b->cap) {
                memmove(b->d + pos + tl, b->d + pos, b->len - pos);
                memcpy(b->d + pos, t, tl);
                b->len += tl;
            }
            break;
        }
        case 4: /* delete a run */
            if (pos < b->len) {
                size_t n = 1 + rnd_below(16);
                if (n > b->len - pos)
                    n = b->len - pos;
                memmove(b->d + pos, b->d + pos + n, b->len - pos - n);
                b->len -= n;
            }
            break;
        default: /* duplicate a run */
            if (pos < b->len) {
                size_t n = 1 + rnd_below(32);
                if (n > b->len - pos)
                    n = b->len - pos;
                if (b->len + n <= b->cap) {
                    memmove(b->d + pos + n, b->d + pos, b->len - pos);
                    b->len += n;
                }
            }
            break;
        }
    }
}

static const char *const native_queries[] = {
    "service=fz",
    "service=fz&type=cpu&version=1&label=a=b",
    "service=fz&from=1700000000&until=1700000010",
    "service=fz&id=fixed-id-1",
    "service=fz&label=a=1&label=b=2&label=c=3&label=d=4&label=e=5&label=f=6&label=g=7&label=h=8&label=i=9",
    "service=fz&bogus=1",
};

static const char *const pyro_queries[] = {
    "name=fz.cpu{env=a,zone=b}&from=1700000000&until=1700000010&sampleRate=100",
    "name=fz.wall&format=folded&sampleRate=97",
    "name=fz.inuse_space{}&units=bytes",
    "name=fz&format=lines",
    "name=fz.cpu&format=pprof&spyName=gospy",
    "name=fz.alloc_objects{service_name=other}",
    "name=fz{a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9}",
};

/* Collect the ids of a 200 answer ("id":"X" or "ids":["X",...]) into the set. */
static void collect_ids(const char *body, char (*set)[33], size_t *n, size_t cap)
{
    const char *p = strstr(body, "\"id\":\"");
    const char *list = strstr(body, "\"ids\":[");
    const char *s = p ? p + 5 : list ? list + 7 : NULL;
    while (s && *s == '"') {
        const char *e = strchr(s + 1, '"');
        assert_non_null(e);
        size_t l = (size_t)(e - s - 1);
        assert_true(l > 0 && l <= 32);
        char id[33];
        memcpy(id, s + 1, l);
        id[l] = '\0';
        size_t i;
        for (i = 0; i < *n; i++)
            if (strcmp(set[i], id) == 0)
                break;
        if (i == *n) {
            assert_true(*n < cap);
            memcpy(set[(*n)++], id, l + 1);
        }
        s = e[1] == ',' ? e + 2 : NULL;
    }
}

static double elapsed(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_fuzz(void **state)
{
    (void)state;
    ingest_env *e = iu_env_new();
    assert_non_null(e);
    hs_batcher_free(e->b);
    e->b = hs_batcher_new(e->st, &(hs_store_batching){.max_profiles = 16, .writers = 1});
    e->lim.max_decompressed = (size_t)1 << 20;
    e->lim.max_samples = 400;
    e->lim.max_depth = 12;
    e->lim.max_labels = 8;
    e->lim.max_label_len = 32;

    /* seeds */
    iu_prof o = {.types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
                 .n_types = 2,
                 .time_nanos = 1700000000LL * 1000000000LL,
                 .duration_nanos = 10LL * 1000000000LL,
                 .n_samples = 30,
                 .with_labels = 1};
    size_t gl, pl, ml;
    void *gz = iu_pprof(&o, 1, &gl), *plain = iu_pprof(&o, 0, &pl);
    char *mp = iu_multipart(gz, gl, "{\"cpu\":{\"units\":\"samples\"}}", &ml);
    const char *folded = "main;work;leaf 3\nmain;other 2\nmain;work 7\n";
    const char *lines = "main;work;leaf\nmain;other\n";
    struct {
        const void *d;
        size_t len;
        int multipart;
    } seeds[] = {{gz, gl, 0}, {plain, pl, 0}, {mp, ml, 1}, {folded, strlen(folded), 0}, {lines, strlen(lines), 0}};

    size_t cap_ids = 2 * ITERATIONS + 16, n_ids = 0, ok = 0, rejected = 0;
    char(*ids)[33] = calloc(cap_ids, sizeof *ids);
    buf body = {0}, q = {0};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int i;
    for (i = 0; i < ITERATIONS && elapsed(&t0) < TIME_BUDGET_S; i++) {
        size_t s = rnd_below(sizeof seeds / sizeof seeds[0]);
        buf_set(&body, seeds[s].d, seeds[s].len);
        if (rnd_below(4) != 0) /* a quarter of the bodies are intact */
            mutate(&body);
        int pyro = rnd_below(2);
        const char *base = pyro ? pyro_queries[rnd_below(sizeof pyro_queries / sizeof pyro_queries[0])]
                                : native_queries[rnd_below(sizeof native_queries / sizeof native_queries[0])];
        buf_set(&q, base, strlen(base) + 1);
        if (rnd_below(3) == 0) { /* mutate the query too (keep it a C string) */
            q.len--;
            mutate(&q);
            for (size_t k = 0; k < q.len; k++)
                if (!q.d[k])
                    q.d[k] = '?';
            q.d[q.len] = '\0';
        }
        /* one in 8: unique ids, so repeats of an intact seed are stored again */
        char qs[4200];
        if (!pyro && rnd_below(8) == 0)
            snprintf(qs, sizeof qs, "%s&id=u%d", (char *)q.d, i);
        else
            snprintf(qs, sizeof qs, "%s", (char *)q.d);
        iu_req r;
        iu_req_init(&r, pyro ? "/ingest" : "/api/v1/ingest", qs, body.d, body.len);
        if (seeds[s].multipart || rnd_below(16) == 0)
            r.rq.content_type = "multipart/form-data; boundary=XyZb0und";
        if (rnd_below(16) == 0)
            r.rq.content_encoding = "gzip";
        char *out;
        int st = iu_call(e, pyro, &r, &out);
        if (st == -1)
            fail_msg("iteration %d: the handler's status and response differ", i);
        if (st == 200) {
            ok++;
            collect_ids(out, ids, &n_ids, cap_ids);
        } else {
            if (st < 400 || st > 499)
                fail_msg("iteration %d: status %d: %s", i, st, out);
            assert_non_null(strstr(out, "{\"error\":\""));
            const char *nl = strchr(out, '\n'); /* one line */
            assert_true(nl == NULL || nl[1] == '\0');
            rejected++;
        }
        free(out);
    }
    print_message("ingest fuzz: %d requests in %.1f s: %zu stored or duplicate (%zu distinct ids), %zu rejected\n",
                  i, elapsed(&t0), ok, n_ids, rejected);
    assert_true(i >= 2000); /* thousands, even on a slow machine */
    assert_true(ok > 50 && rejected > 1000); /* both paths were exercised */
    assert_int_equal(iu_stored(e), (int64_t)n_ids);
    free(ids);
    free(body.d);
    free(q.d);
    free(gz);
    free(plain);
    free(mp);
    iu_env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fuzz)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
