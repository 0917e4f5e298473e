/* stacktab.h — a fixed-size, lock-free table of distinct stacks with
 * per-stack counters, written from signal handlers and allocation hooks.
 *
 * Memory comes from mmap at init and never grows: when the table or its
 * frame pool is full, new stacks are counted as dropped. Lookups and inserts
 * are async-signal-safe (atomics only). Two entries may hold the same stack if
 * two threads insert it at once; readers merge them.
 *
 * Layout: a hash index of 4-byte slots (entry number + 1) placed by hash,
 * and the entries themselves dense, in the order they were added. Only the
 * index is scattered, so a process with a few hundred stacks touches the
 * index (4 bytes a slot) and a few pages of entries, not one 4 KiB page of
 * 64-byte entries per stack (which had every table pre-faulted: 4 MiB).
 */
#ifndef HS_AGENT_STACKTAB_H
#define HS_AGENT_STACKTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HS_STACKTAB_VALUES 4
#define HS_STACKTAB_BUSY UINT32_MAX /* an index slot whose entry is being written */

typedef struct {
    _Atomic uint32_t state; /* 0 empty or being written, 2 ready */
    uint32_t depth;
    uint64_t hash;
    uint32_t frames; /* offset into the frame pool */
    int32_t tid;
    uint32_t labels; /* label set id (labels.h), 0 = none */
    _Atomic int64_t values[HS_STACKTAB_VALUES];
} hs_stack_entry;

typedef struct {
    _Atomic uint32_t *index;  /* cap slots: 0 empty, HS_STACKTAB_BUSY, or entry + 1 */
    hs_stack_entry *entries;  /* dense: entry i is the i-th stack added */
    uint32_t cap; /* power of two */
    uint64_t *pool;
    uint32_t pool_cap;
    _Atomic uint64_t pool_used; /* 64-bit: failed reservations never wrap it */
    _Atomic uint64_t dropped; /* stacks that found no room */
    int64_t *base;            /* per entry: the values at the last dump (4 each) */
    _Atomic uint32_t n_used;  /* claimed entries (some may still be in writing) */
} hs_stacktab;

/* Map room for cap stacks (rounded up to a power of two) and pool_frames
 * frames; `populate` pre-faults the entries now (see hs_stacktab_populate).
 * 0 on success, -1 if mmap fails. */
int hs_stacktab_init(hs_stacktab *t, uint32_t cap, uint32_t pool_frames, int populate);
/* Pre-fault the hash index while writers may run (MADV_POPULATE_WRITE, which
 * leaves contents alone): slots are placed by hash, so new stacks in a
 * signal handler would otherwise fault in index pages one by one (4 bytes a
 * slot: 256 KiB at 65 536 stacks). Entries fill pages in order and fault
 * once per 64 stacks. Not done at start: it costs time at every process
 * start, and short processes never need it. */
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

/* The i-th claimed entry if it is ready (i < n_used), else NULL (being
 * written right now, or its frames found no room). */
static inline hs_stack_entry *hs_stacktab_nth(const hs_stacktab *t, uint32_t i)
{
    hs_stack_entry *e = &t->entries[i];
    return atomic_load_explicit(&e->state, memory_order_acquire) == 2 ? e : NULL;
}

/* Frames of a ready entry. */
static inline const uint64_t *hs_stacktab_frames(const hs_stacktab *t, const hs_stack_entry *e)
{
    return t->pool + e->frames;
}

#endif
