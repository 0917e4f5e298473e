/* stacktab.h — a fixed-size, lock-free table of distinct stacks with
 * per-stack counters, written from signal handlers and allocation hooks.
 *
 * Memory comes from mmap at init and never grows: when the table or its
 * frame pool is full, new stacks are counted as dropped. Lookups and inserts
 * are async-signal-safe (atomics only). Two entries may hold the same stack if
 * two threads insert it at once; readers merge them.
 */
#ifndef HS_AGENT_STACKTAB_H
#define HS_AGENT_STACKTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HS_STACKTAB_VALUES 4

typedef struct {
    _Atomic uint32_t state; /* 0 empty, 1 being written, 2 ready */
    uint32_t depth;
    uint64_t hash;
    uint32_t frames; /* offset into the frame pool */
    int32_t tid;
    uint32_t labels; /* label set id (labels.h), 0 = none */
    _Atomic int64_t values[HS_STACKTAB_VALUES];
} hs_stack_entry;

typedef struct {
    hs_stack_entry *entries;
    uint32_t cap; /* power of two */
    uint64_t *pool;
    uint32_t pool_cap;
    _Atomic uint64_t pool_used; /* 64-bit: failed reservations never wrap it */
    _Atomic uint64_t dropped; /* stacks that found no room */
    _Atomic uint32_t *used;   /* 1 + index of each published entry, in order */
    int64_t *base;            /* per entry: the values at the last dump (4 each) */
    _Atomic uint32_t n_used;  /* claimed entries (some may still be in writing) */
} hs_stacktab;

/* Map room for cap stacks (rounded up to a power of two) and pool_frames
 * frames; `populate` pre-faults the entries now (see hs_stacktab_populate).
 * 0 on success, -1 if mmap fails. */
int hs_stacktab_init(hs_stacktab *t, uint32_t cap, uint32_t pool_frames, int populate);
/* Pre-fault the entries while writers may run (MADV_POPULATE_WRITE, which
 * leaves contents alone): entries are placed by hash, so each new stack in
 * a signal handler would otherwise fault in a page of its own. Not done at
 * start: 4 MiB per table cost 1.5-6 ms per process start. */
void hs_stacktab_populate(hs_stacktab *t);
void hs_stacktab_destroy(hs_stacktab *t);
/* Make every entry's current values its dump base (nothing to report). */
void hs_stacktab_mark(hs_stacktab *t);
/* Forget every stack (not concurrently with writers). */
void hs_stacktab_clear(hs_stacktab *t);

/* Find or insert (tid, labels, pcs[0..depth)); returns the entry, or NULL
 * when the table is full (counted in dropped). Async-signal-safe. */
hs_stack_entry *hs_stacktab_intern(hs_stacktab *t, int32_t tid, uint32_t labels, const uint64_t *pcs,
                                   uint32_t depth);

/* The i-th claimed entry if it is ready (i < n_used), else NULL. */
static inline hs_stack_entry *hs_stacktab_nth(const hs_stacktab *t, uint32_t i)
{
    uint32_t v = atomic_load_explicit(&t->used[i], memory_order_acquire);
    return v ? &t->entries[v - 1] : NULL; /* 0: being listed right now */
}

/* Frames of a ready entry. */
static inline const uint64_t *hs_stacktab_frames(const hs_stacktab *t, const hs_stack_entry *e)
{
    return t->pool + e->frames;
}

#endif
