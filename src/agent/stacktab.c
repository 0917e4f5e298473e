/* stacktab.c — the lock-free stack table (see stacktab.h). Open addressing
 * with linear probing over an index of 4-byte slots; a slot is claimed with
 * a CAS (0 -> BUSY), the next dense entry is taken, filled and marked ready
 * (state 2, release), then the slot is published (entry + 1, release), so a
 * reader that reaches an entry by the index or by its number sees the whole
 * stack. */
#define _GNU_SOURCE
#include "agent/stacktab.h"

#include "agent/hotpath.h"

#include <string.h>
#include <sys/mman.h>

static void *map_zeroed(size_t bytes, int populate)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE), -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hs_stacktab_init(hs_stacktab *t, uint32_t cap, uint32_t pool_frames, int populate)
{
    uint32_t c = 1024;
    while (c < cap && c < (1u << 30))
        c <<= 1;
    memset(t, 0, sizeof *t);
    /* Index slots are placed by hash (see hs_stacktab_populate); the
     * entries, the pool and the bases fill in order. */
    t->index = map_zeroed((size_t)c * sizeof(uint32_t), populate);
    t->entries = map_zeroed((size_t)c * sizeof(hs_stack_entry), 0);
    t->pool = map_zeroed((size_t)pool_frames * sizeof(uint64_t), 0);
    t->base = map_zeroed((size_t)c * HS_STACKTAB_VALUES * sizeof(int64_t), 0);
    if (!t->index || !t->entries || !t->pool || !t->base) {
        hs_stacktab_destroy(t);
        return -1;
    }
    t->cap = c;
    t->pool_cap = pool_frames;
    return 0;
}

void hs_stacktab_populate(hs_stacktab *t)
{
#ifdef MADV_POPULATE_WRITE
    if (t->index)
        (void)madvise((void *)t->index, (size_t)t->cap * sizeof(uint32_t), MADV_POPULATE_WRITE);
#else
    (void)t; /* older headers: the handler takes the page faults */
#endif
}

void hs_stacktab_destroy(hs_stacktab *t)
{
    if (t->index)
        munmap((void *)t->index, (size_t)t->cap * sizeof(uint32_t));
    if (t->entries)
        munmap(t->entries, (size_t)t->cap * sizeof(hs_stack_entry));
    if (t->pool)
        munmap(t->pool, (size_t)t->pool_cap * sizeof(uint64_t));
    if (t->base)
        munmap(t->base, (size_t)t->cap * HS_STACKTAB_VALUES * sizeof(int64_t));
    memset(t, 0, sizeof *t);
}

/* Zero a private anonymous mapping by dropping its pages: the next touch
 * maps a zero page. Far cheaper than memset in a fork child, where every
 * page written would first be copied from the parent. */
static void drop_pages(void *p, size_t bytes)
{
    if (madvise(p, bytes, MADV_DONTNEED) != 0)
        memset(p, 0, bytes);
}

void hs_stacktab_clear(hs_stacktab *t)
{
    drop_pages((void *)t->index, (size_t)t->cap * sizeof(uint32_t));
    drop_pages(t->entries, (size_t)t->cap * sizeof(hs_stack_entry));
    drop_pages(t->base, (size_t)t->cap * HS_STACKTAB_VALUES * sizeof(int64_t));
    atomic_store(&t->pool_used, 0);
    atomic_store(&t->dropped, 0);
    atomic_store(&t->n_used, 0);
}

void hs_stacktab_mark(hs_stacktab *t)
{
    uint32_t n = atomic_load(&t->n_used);
    for (uint32_t i = 0; i < n; i++) {
        hs_stack_entry *e = hs_stacktab_nth(t, i);
        if (!e)
            continue;
        int64_t *base = t->base + (size_t)i * HS_STACKTAB_VALUES;
        for (int v = 0; v < HS_STACKTAB_VALUES; v++)
            base[v] = atomic_load_explicit(&e->values[v], memory_order_relaxed);
    }
}

static HS_SAMPLE_PATH uint64_t hash_stack(int32_t tid, uint32_t labels, const uint64_t *pcs, uint32_t depth)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)tid ^ ((uint64_t)depth << 32) ^
                 ((uint64_t)labels * 0xc2b2ae3d27d4eb4full);
    for (uint32_t i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | 1;
}

/* Whether the frames are the same: a loop of its own rather than memcmp,
 * whose PLT entry and code in libc would be lines more for a heap sample
 * to bring back (agent/hotpath.h); stacks are a few dozen words. */
static inline HS_SAMPLE_PATH bool same_frames(const uint64_t *a, const uint64_t *b, uint32_t depth)
{
    for (uint32_t i = 0; i < depth; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Take the next dense entry number, or UINT32_MAX when all cap are taken
 * (n_used never passes cap, so readers can trust it). */
static HS_SAMPLE_PATH uint32_t next_entry(hs_stacktab *t)
{
    uint32_t n = atomic_load_explicit(&t->n_used, memory_order_relaxed);
    do {
        if (n >= t->cap)
            return UINT32_MAX;
    } while (!atomic_compare_exchange_weak(&t->n_used, &n, n + 1));
    return n;
}

HS_SAMPLE_PATH hs_stack_entry *hs_stacktab_intern(hs_stacktab *t, int32_t tid, uint32_t labels,
                                                  const uint64_t *pcs, uint32_t depth)
{
    if (!t->entries)
        return NULL;
    uint64_t h = hash_stack(tid, labels, pcs, depth);
    uint32_t mask = t->cap - 1;
    for (uint32_t probe = 0; probe < 64; probe++) {
        _Atomic uint32_t *slot = &t->index[(h + probe) & mask];
        uint32_t v = atomic_load_explicit(slot, memory_order_acquire);
        if (v == HS_STACKTAB_BUSY)
            continue; /* someone is writing it; a duplicate is harmless */
        if (v) {
            hs_stack_entry *e = &t->entries[v - 1];
            if (e->hash == h && e->tid == tid && e->labels == labels && e->depth == depth &&
                same_frames(t->pool + e->frames, pcs, depth))
                return e;
            continue;
        }
        uint32_t expect = 0;
        if (!atomic_compare_exchange_strong(slot, &expect, HS_STACKTAB_BUSY))
            continue;
        uint64_t off = atomic_fetch_add(&t->pool_used, depth);
        uint32_t n = (uint64_t)off + depth > t->pool_cap ? UINT32_MAX : next_entry(t);
        if (n == UINT32_MAX) {
            /* No room for frames or entries: give the slot back and drop. */
            atomic_store_explicit(slot, 0, memory_order_release);
            break;
        }
        hs_stack_entry *e = &t->entries[n];
        memcpy(t->pool + off, pcs, depth * sizeof *pcs);
        e->frames = (uint32_t)off;
        e->depth = depth;
        e->tid = tid;
        e->labels = labels;
        e->hash = h;
        memset((void *)e->values, 0, sizeof e->values);
        atomic_store_explicit(&e->state, 2, memory_order_release);
        atomic_store_explicit(slot, n + 1, memory_order_release);
        return e;
    }
    atomic_fetch_add(&t->dropped, 1);
    return NULL;
}
