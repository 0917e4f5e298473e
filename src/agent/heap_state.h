/* heap_state.h — the heap profiler's state, private to agent/heap.c (the
 * hooks, sampling and figures) and agent/heap_leaks.c (the leak scan at
 * exit): the live table of tracked blocks and the per-stack counters. */
#ifndef HS_AGENT_HEAP_STATE_H
#define HS_AGENT_HEAP_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "agent/stacktab.h"

typedef struct {
    _Atomic uint64_t key; /* block address; 0 empty, 1 deleted */
    uint64_t data;        /* stack entry index (24 bits) << 40 | size (40 bits) */
} live_slot;

#define KEY_EMPTY 0
#define KEY_DELETED 1
#define SIZE_BITS 40
#define SIZE_MASK ((1ull << SIZE_BITS) - 1)

typedef struct {
    _Atomic int on;
    int64_t rate;
    int exact; /* rate 1: every allocation */
    hs_stacktab tab;
    live_slot *live;   /* non-NULL once started: frees look for sampled blocks */
    uint64_t live_cap; /* power of two */
    _Atomic uint64_t untracked;
    /* peak */
    _Atomic int64_t inuse_est, next_snapshot;
    int64_t peak_est;
    int64_t *peak; /* 2 per entry: raw objects, raw bytes at the peak */
    pthread_mutex_t peak_lock;
    /* leaks (heap_leaks.c) */
    int64_t *leak; /* 2 per entry */
} hs_heap_state;

extern hs_heap_state hs_heap; /* defined in heap.c */

/* Zeroed memory from mmap, not malloc (the scan may not take malloc's
 * lock); NULL if it cannot be mapped. */
static inline void *hs_heap_map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

#endif
