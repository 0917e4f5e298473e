/* test_hashmap.c — the shared hash map container (profile/hashmap.h):
 * put/get/overwrite, growth from a zeroed map, keys that all collide in
 * their home slot, deletion by backward shift checked against a reference
 * array over many random operations, the multimap (add/next) and iteration
 * over every entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/hashmap.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_put_get_overwrite(void **state)
{
    (void)state;
    hs_hmap m = {0}; /* a zeroed map is empty and usable */
    uint64_t v = 7;
    assert_false(hs_hmap_get(&m, 1, &v));
    assert_false(hs_hmap_del(&m, 1));
    assert_int_equal(v, 7);
    assert_int_equal(hs_hmap_put(&m, 0, 100), 0); /* key 0 is an ordinary key */
    assert_int_equal(hs_hmap_put(&m, UINT64_MAX, 200), 0);
    assert_int_equal(hs_hmap_put(&m, 0, 101), 0);
    assert_int_equal(m.n, 2);
    assert_true(hs_hmap_get(&m, 0, &v));
    assert_int_equal(v, 101);
    assert_true(hs_hmap_get(&m, UINT64_MAX, &v));
    assert_int_equal(v, 200);
    bool inserted = true;
    uint64_t *slot = hs_hmap_slot(&m, 0, &inserted);
    assert_non_null(slot);
    assert_false(inserted);
    assert_int_equal(*slot, 101);
    slot = hs_hmap_slot(&m, 5, &inserted);
    assert_true(inserted);
    assert_int_equal(*slot, 0);
    *slot = 55;
    assert_true(hs_hmap_get(&m, 5, &v));
    assert_int_equal(v, 55);
    hs_hmap_clear(&m);
    assert_int_equal(m.n, 0);
    assert_false(hs_hmap_get(&m, 0, &v));
    hs_hmap_free(&m);
    assert_null(m.e);
    assert_int_equal(m.cap, 0);
}

/* Many keys: every one found after the table doubled many times; the load
 * stays at or under one half. */
static void test_growth_many_keys(void **state)
{
    (void)state;
    enum { N = 200000 };
    hs_hmap m;
    assert_int_equal(hs_hmap_init(&m, 0), 0);
    size_t cap0 = m.cap;
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(hs_hmap_put(&m, i * 0x10001, i), 0);
    assert_int_equal(m.n, N);
    assert_true(m.cap > cap0);
    assert_true(m.n * 2 <= m.cap);
    for (uint64_t i = 0; i < N; i++) {
        uint64_t v;
        assert_true(hs_hmap_get(&m, i * 0x10001, &v));
        assert_int_equal(v, i);
    }
    uint64_t v;
    assert_false(hs_hmap_get(&m, 3, &v)); /* not a multiple of 0x10001 */
    /* reserve up front: no growth afterwards */
    hs_hmap r;
    assert_int_equal(hs_hmap_init(&r, 1000), 0);
    size_t cap = r.cap;
    for (uint64_t i = 0; i < 1000; i++)
        assert_int_equal(hs_hmap_put(&r, i, i), 0);
    assert_int_equal(r.cap, cap);
    hs_hmap_free(&r);
    hs_hmap_free(&m);
}

/* Keys whose mixed hashes all land in one home slot: one long cluster. */
static void test_collisions(void **state)
{
    (void)state;
    hs_hmap m;
    assert_int_equal(hs_hmap_init(&m, 2048), 0);
    size_t mask = m.cap - 1, home = (size_t)hs_hmap_mix(1) & mask;
    uint64_t keys[300];
    size_t nk = 0;
    for (uint64_t k = 1; nk < 300; k++)
        if (((size_t)hs_hmap_mix(k) & mask) == home)
            keys[nk++] = k;
    assert_int_equal(m.cap, mask + 1); /* no growth happened while searching */
    for (size_t i = 0; i < nk; i++)
        assert_int_equal(hs_hmap_put(&m, keys[i], i), 0);
    assert_int_equal(m.cap, mask + 1);
    for (size_t i = 0; i < nk; i++) {
        uint64_t v;
        assert_true(hs_hmap_get(&m, keys[i], &v));
        assert_int_equal(v, i);
    }
    /* delete every other one from the middle of the cluster */
    for (size_t i = 0; i < nk; i += 2)
        assert_true(hs_hmap_del(&m, keys[i]));
    for (size_t i = 0; i < nk; i++) {
        uint64_t v;
        assert_int_equal(hs_hmap_get(&m, keys[i], &v), i % 2 == 1);
        if (i % 2)
            assert_int_equal(v, i);
    }
    assert_int_equal(m.n, nk / 2);
    hs_hmap_free(&m);
}

/* Random puts and deletions over a small key space, checked after every
 * step against a plain array; the table wraps around its end often. */
static void test_delete_against_reference(void **state)
{
    (void)state;
    enum { KEYS = 512, STEPS = 100000 };
    static uint64_t ref[KEYS];
    static bool present[KEYS];
    memset(present, 0, sizeof present);
    hs_hmap m = {0};
    size_t n = 0;
    for (int step = 0; step < STEPS; step++) {
        uint64_t k = rng() % KEYS;
        if (rng() % 3 == 0) {
            assert_int_equal(hs_hmap_del(&m, k), present[k]);
            if (present[k])
                n--;
            present[k] = false;
        } else {
            uint64_t v = rng();
            assert_int_equal(hs_hmap_put(&m, k, v), 0);
            if (!present[k])
                n++;
            present[k] = true;
            ref[k] = v;
        }
        assert_int_equal(m.n, n);
        if (step % 997 == 0 || step == STEPS - 1)
            for (uint64_t j = 0; j < KEYS; j++) {
                uint64_t v;
                assert_int_equal(hs_hmap_get(&m, j, &v), present[j]);
                if (present[j])
                    assert_int_equal(v, ref[j]);
            }
    }
    /* iteration visits each present key exactly once */
    size_t seen = 0;
    uint64_t key, val;
    for (size_t it = HS_HMAP_START; hs_hmap_each(&m, &it, &key, &val);) {
        assert_true(key < KEYS && present[key]);
        assert_int_equal(val, ref[key]);
        seen++;
    }
    assert_int_equal(seen, n);
    for (uint64_t j = 0; j < KEYS; j++)
        if (present[j])
            assert_true(hs_hmap_del(&m, j));
    assert_int_equal(m.n, 0);
    hs_hmap_free(&m);
}

/* Multimap: several values under one key come back in insertion order,
 * also after the table grew; deleting takes one at a time. */
static void test_multimap(void **state)
{
    (void)state;
    hs_hmap m;
    assert_int_equal(hs_hmap_init(&m, 4), 0);
    for (uint64_t i = 0; i < 10; i++)
        assert_int_equal(hs_hmap_add(&m, 42, i), 0);
    for (uint64_t i = 0; i < 5000; i++) /* other keys: growth */
        assert_int_equal(hs_hmap_add(&m, 1000 + i, i), 0);
    uint64_t v, want = 0;
    for (size_t it = HS_HMAP_START; hs_hmap_next(&m, 42, &it, &v);)
        assert_int_equal(v, want++);
    assert_int_equal(want, 10);
    size_t it = HS_HMAP_START;
    assert_false(hs_hmap_next(&m, 43, &it, &v));
    assert_true(hs_hmap_get(&m, 42, &v));
    assert_int_equal(v, 0);
    assert_true(hs_hmap_del(&m, 42));
    size_t left = 0;
    for (it = HS_HMAP_START; hs_hmap_next(&m, 42, &it, &v);)
        left++;
    assert_int_equal(left, 9);
    assert_int_equal(m.n, 5009);
    hs_hmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_overwrite),
        cmocka_unit_test(test_growth_many_keys),
        cmocka_unit_test(test_collisions),
        cmocka_unit_test(test_delete_against_reference),
        cmocka_unit_test(test_multimap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
