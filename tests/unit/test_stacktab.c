/* test_stacktab.c — the agent's lock-free stack table (agent/stacktab.h):
 * find-or-insert, entries listed densely in the order they came, full
 * tables and full frame pools counted as dropped, concurrent writers, clear
 * and mark; and its memory: a table sized for 65 536 stacks holding a few
 * hundred touches a few pages of entries, not one page per stack. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/stacktab.h"

/* A distinct stack per k: depth 1 + k % 7, frames derived from k. */
static uint32_t make_stack(uint32_t k, uint64_t *pcs)
{
    uint32_t depth = 1 + k % 7;
    for (uint32_t d = 0; d < depth; d++)
        pcs[d] = 0x400000u + (uint64_t)k * 64 + d;
    return depth;
}

/* Pages of [p, p + bytes) resident now. */
static size_t resident_pages(const void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page, r = 0;
    unsigned char *vec = malloc(n);
    assert_non_null(vec);
    assert_int_equal(mincore((void *)p, bytes, vec), 0);
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    free(vec);
    return r;
}

static void test_find_or_insert_in_order(void **state)
{
    (void)state;
    hs_stacktab t;
    assert_int_equal(hs_stacktab_init(&t, 4096, 4096 * 32, 0), 0);
    uint64_t pcs[8];
    hs_stack_entry *first[500];
    for (uint32_t k = 0; k < 500; k++) {
        uint32_t depth = make_stack(k, pcs);
        first[k] = hs_stacktab_intern(&t, 7, 0, pcs, depth);
        assert_non_null(first[k]);
        atomic_fetch_add(&first[k]->values[0], 1);
    }
    assert_int_equal(atomic_load(&t.n_used), 500);
    for (uint32_t k = 0; k < 500; k++) {
        uint32_t depth = make_stack(k, pcs);
        assert_ptr_equal(hs_stacktab_intern(&t, 7, 0, pcs, depth), first[k]);
        /* listed in the order added, with its frames */
        hs_stack_entry *e = hs_stacktab_nth(&t, k);
        assert_ptr_equal(e, first[k]);
        assert_int_equal(e->depth, depth);
        assert_memory_equal(hs_stacktab_frames(&t, e), pcs, depth * sizeof *pcs);
        assert_int_equal(atomic_load(&e->values[0]), 1);
    }
    assert_int_equal(atomic_load(&t.n_used), 500);
    /* the same frames on another thread or with other labels are other stacks */
    uint32_t depth = make_stack(3, pcs);
    hs_stack_entry *other_tid = hs_stacktab_intern(&t, 8, 0, pcs, depth);
    hs_stack_entry *other_labels = hs_stacktab_intern(&t, 7, 2, pcs, depth);
    assert_non_null(other_tid);
    assert_non_null(other_labels);
    assert_ptr_not_equal(other_tid, first[3]);
    assert_ptr_not_equal(other_labels, first[3]);
    assert_ptr_not_equal(other_tid, other_labels);
    assert_int_equal(atomic_load(&t.n_used), 502);
    assert_int_equal(atomic_load(&t.dropped), 0);
    hs_stacktab_destroy(&t);
}

/* The default size (65 536 stacks) with 500 in it: the entries are dense,
 * so they fill 8 pages; placed by hash, they touched ~500 (and the table
 * was pre-faulted whole, 4 MiB, to keep those faults out of signal
 * handlers). Pre-faulting now maps the index only (4 bytes a slot). */
static void test_memory_follows_the_stacks(void **state)
{
    (void)state;
    hs_stacktab t;
    assert_int_equal(hs_stacktab_init(&t, 65536, 65536 * 32, 0), 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t entries_bytes = (size_t)t.cap * sizeof(hs_stack_entry);
    size_t index_bytes = (size_t)t.cap * sizeof(uint32_t);
    hs_stacktab_populate(&t);
    uint64_t pcs[8];
    for (uint32_t k = 0; k < 500; k++) {
        uint32_t depth = make_stack(k, pcs);
        assert_non_null(hs_stacktab_intern(&t, 1, 0, pcs, depth));
    }
    size_t want = (500 * sizeof(hs_stack_entry) + page - 1) / page;
    assert_true(resident_pages(t.entries, entries_bytes) <= want);
    assert_true(resident_pages((const void *)t.index, index_bytes) <= index_bytes / page);
    /* all that is resident, index included: well under 1 MiB */
    size_t total = resident_pages(t.entries, entries_bytes) + resident_pages((const void *)t.index, index_bytes) +
                   resident_pages(t.pool, (size_t)t.pool_cap * sizeof(uint64_t)) +
                   resident_pages(t.base, (size_t)t.cap * HS_STACKTAB_VALUES * sizeof(int64_t));
    assert_true(total * page < 1024 * 1024);
    hs_stacktab_destroy(&t);
}

static void test_full_table_drops(void **state)
{
    (void)state;
    hs_stacktab t;
    assert_int_equal(hs_stacktab_init(&t, 1024, 1024 * 32, 0), 0);
    assert_int_equal(t.cap, 1024);
    uint64_t pcs[8];
    uint32_t got = 0;
    for (uint32_t k = 0; k < 3000; k++) {
        uint32_t depth = make_stack(k, pcs);
        got += hs_stacktab_intern(&t, 1, 0, pcs, depth) != NULL;
    }
    uint32_t n = atomic_load(&t.n_used);
    assert_true(n <= t.cap);
    assert_int_equal(n, got);
    assert_true(got >= 900); /* linear probing finds room until nearly full */
    assert_int_equal(atomic_load(&t.dropped), 3000 - got);
    for (uint32_t i = 0; i < n; i++)
        assert_non_null(hs_stacktab_nth(&t, i));
    hs_stacktab_destroy(&t);
}

static void test_full_pool_drops_and_keeps_the_rest(void **state)
{
    (void)state;
    hs_stacktab t;
    assert_int_equal(hs_stacktab_init(&t, 1024, 20, 0), 0);
    uint64_t pcs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    hs_stack_entry *a = hs_stacktab_intern(&t, 1, 0, pcs, 8);
    hs_stack_entry *b = hs_stacktab_intern(&t, 2, 0, pcs, 8);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(hs_stacktab_intern(&t, 3, 0, pcs, 8)); /* 24 frames > 20 */
    assert_int_equal(atomic_load(&t.dropped), 1);
    assert_int_equal(atomic_load(&t.n_used), 2);
    /* the slot it tried was given back: lookups still find what is there */
    assert_ptr_equal(hs_stacktab_intern(&t, 1, 0, pcs, 8), a);
    assert_ptr_equal(hs_stacktab_intern(&t, 2, 0, pcs, 8), b);
    hs_stacktab_destroy(&t);
}

static void test_clear_and_mark(void **state)
{
    (void)state;
    hs_stacktab t;
    assert_int_equal(hs_stacktab_init(&t, 1024, 1024 * 32, 0), 0);
    uint64_t pcs[8];
    for (uint32_t k = 0; k < 100; k++) {
        uint32_t depth = make_stack(k, pcs);
        atomic_fetch_add(&hs_stacktab_intern(&t, 1, 0, pcs, depth)->values[1], k);
    }
    hs_stacktab_mark(&t);
    for (uint32_t i = 0; i < 100; i++)
        assert_int_equal(t.base[(size_t)i * HS_STACKTAB_VALUES + 1], i);
    hs_stacktab_clear(&t);
    assert_int_equal(atomic_load(&t.n_used), 0);
    assert_int_equal(atomic_load(&t.pool_used), 0);
    assert_int_equal(t.base[HS_STACKTAB_VALUES + 1], 0);
    uint32_t depth = make_stack(50, pcs);
    hs_stack_entry *e = hs_stacktab_intern(&t, 1, 0, pcs, depth);
    assert_ptr_equal(e, &t.entries[0]); /* numbering starts again */
    assert_int_equal(atomic_load(&e->values[1]), 0);
    assert_int_equal(atomic_load(&t.n_used), 1);
    hs_stacktab_destroy(&t);
}

/* Four threads add the same 2 000 stacks at once, each counting 1 per
 * stack: every count lands in some entry of its stack (duplicates allowed),
 * and every listed entry is whole. */
#define WRITERS 4
#define SHARED 2000
static hs_stacktab g_tab;

static void *writer(void *arg)
{
    (void)arg;
    uint64_t pcs[8];
    for (uint32_t k = 0; k < SHARED; k++) {
        uint32_t depth = make_stack(k, pcs);
        hs_stack_entry *e = hs_stacktab_intern(&g_tab, 1, 0, pcs, depth);
        if (!e)
            return (void *)1;
        atomic_fetch_add(&e->values[0], 1);
    }
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    assert_int_equal(hs_stacktab_init(&g_tab, 65536, 65536 * 32, 0), 0);
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, writer, NULL), 0);
    for (int i = 0; i < WRITERS; i++) {
        void *r = (void *)1;
        assert_int_equal(pthread_join(th[i], &r), 0);
        assert_null(r);
    }
    uint32_t n = atomic_load(&g_tab.n_used);
    assert_true(n >= SHARED && n <= SHARED * WRITERS);
    int64_t per_stack[SHARED] = {0};
    for (uint32_t i = 0; i < n; i++) {
        hs_stack_entry *e = hs_stacktab_nth(&g_tab, i);
        assert_non_null(e);
        const uint64_t *f = hs_stacktab_frames(&g_tab, e);
        uint32_t k = (uint32_t)((f[0] - 0x400000u) / 64);
        assert_true(k < SHARED);
        uint64_t pcs[8];
        assert_int_equal(e->depth, make_stack(k, pcs));
        assert_memory_equal(f, pcs, e->depth * sizeof *pcs);
        per_stack[k] += atomic_load(&e->values[0]);
    }
    for (uint32_t k = 0; k < SHARED; k++)
        assert_int_equal(per_stack[k], WRITERS);
    hs_stacktab_destroy(&g_tab);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_or_insert_in_order),
        cmocka_unit_test(test_memory_follows_the_stacks),
        cmocka_unit_test(test_full_table_drops),
        cmocka_unit_test(test_full_pool_drops_and_keeps_the_rest),
        cmocka_unit_test(test_clear_and_mark),
        cmocka_unit_test(test_concurrent_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
