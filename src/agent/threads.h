/* threads.h — the agent's registry of the program's threads, one record per
 * thread, shared by the CPU sampler, the wall-clock sampler and the leak
 * scan (sampler.c, wall.c, heap.c through sampler.h): its tid, stack bounds,
 * labels and name, and each sampler's per-thread state. Slots are handed out
 * once, then reused from threads that ended; lookups are lock-free. */
#ifndef HS_AGENT_THREADS_H
#define HS_AGENT_THREADS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "agent/stacktab.h"

#define HS_MAX_THREADS 32768
#define HS_STOP_REGS 32
enum { HS_SLOT_FREE, HS_SLOT_LIVE, HS_SLOT_DEAD, HS_SLOT_CLAIMED }; /* hs_thread_slot.used */

typedef struct hs_thread_slot {
    /* the thread */
    _Atomic int used; /* HS_SLOT_* */
    int32_t tid;
    int alive;
    uintptr_t stack_lo, stack_hi; /* 0 when unknown */
    _Atomic uint32_t labels;      /* the thread's label set, for wall samples */
    char name[16];                /* kept when it ends, until the slot is reused */
    /* the CPU sampler: a timer on its CPU clock */
    int has_timer;
    int timer_sig; /* the signal its timer sends */
    timer_t timer;
    /* wall samples of a running thread: a one-shot timer on its CPU clock */
    _Atomic int wall_state; /* sampler.c's WALL_* */
    timer_t wall_timer;
    int wall_sig;
    _Atomic int64_t wall_pending; /* wall ns asked for, not yet recorded */
    _Atomic int64_t wall_since;   /* CLOCK_MONOTONIC up to which its wall time is credited */
    _Atomic(hs_stack_entry *) wall_last; /* its last wall sample */
    /* stopped for the leak scan: what its handler saved */
    _Atomic int stop; /* sampler.c's STOP_* */
    uintptr_t stop_sp;
    int stop_nregs;
    uint64_t stop_regs[HS_STOP_REGS];
} hs_thread_slot;

/* The registry (mmap'd; NULL before hs_threads_init). */
extern hs_thread_slot *hs_threads;
/* Map the registry if it is not yet. 0, or -1. */
int hs_threads_init(void);
/* How many slots were handed out (the slots to look at). */
int hs_threads_count(void);
/* A slot for tid, HS_SLOT_LIVE and reset: a new one while there are, then
 * one of a thread that ended (its name is forgotten); NULL if none. */
hs_thread_slot *hs_threads_new_slot(int32_t tid);
/* The slot of tid (live or ended), NULL if none. */
hs_thread_slot *hs_threads_find(int32_t tid);
/* In a fork child: forget every thread (the child has one). */
void hs_threads_forget_all(void);

typedef struct {
    int32_t tid;
    int32_t slot; /* registry slot (for hs_sampler_wall_request) */
    uint32_t labels;
    uintptr_t stack_lo, stack_hi; /* 0 when unknown */
} hs_thread_info;

/* The live registered threads, at most max; returns how many. */
int hs_threads_list(hs_thread_info *out, int max);
/* The calling thread's label set changed (wall samples taken from outside
 * the thread read it from the registry). */
void hs_threads_set_labels(uint32_t labels);
/* The name a thread had (registry, or /proc for live threads); "" if unknown.
 * Writes at most 16 bytes including NUL. */
void hs_threads_name(int32_t tid, char name[16]);
/* A timer on clock clk that sends thread tid signal sig with value magic
 * (how the handler knows its own timers): 0, or -1 with errno. */
int hs_threads_timer_create(int32_t tid, clockid_t clk, int sig, void *magic, timer_t *out);

#endif
