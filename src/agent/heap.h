/* heap.h — heap profiling: the malloc family interposed, Poisson sampling by
 * bytes (or every allocation when the rate is 1), sampled live allocations
 * tracked by address so frees update in-use figures, the in-use profile at
 * the estimated peak, and a leak scan at exit in exact mode. */
#ifndef HS_AGENT_HEAP_H
#define HS_AGENT_HEAP_H

#include <stdint.h>

#include "agent/stacktab.h"

/* Start recording with hs_g.cfg's rate; 0, or -1 if memory can't be mapped. */
int hs_heap_start(void);
/* Stop recording (allocations still reach the real allocator), resume. */
void hs_heap_stop(void);
void hs_heap_resume(void);
/* In a fork child: keep the inherited state (the child's heap holds the
 * parent's live blocks) and record on only if `on`. */
void hs_heap_after_fork(int on);

typedef enum {
    HS_HEAP_ALL,  /* alloc_objects, alloc_space, inuse_objects, inuse_space */
    HS_HEAP_PEAK, /* inuse_objects, inuse_space at the estimated peak */
    HS_HEAP_LEAKS /* inuse_objects, inuse_space of unreachable blocks (after hs_heap_scan_leaks) */
} hs_heap_view;

/* The table of allocation stacks. */
hs_stacktab *hs_heap_table(void);
/* Unbiased values of entry e for the view, in the view's sample-type order,
 * from its counters now (cur) and at the last dump (base): allocations since
 * then, in-use now. Returns the number of values (4 or 2). */
int hs_heap_values(const hs_stack_entry *e, hs_heap_view view, const int64_t cur[4],
                   const int64_t base[4], int64_t out[4]);
/* Exact mode only: find the live blocks no root points to (data and bss of
 * loaded modules, thread stacks), transitively. Returns the number of leaked
 * blocks, or -1 when not in exact mode or out of memory. */
long hs_heap_scan_leaks(uint64_t *leaked_bytes);
/* exit() was called by the program, from the caller of frame (the agent's
 * exit wrapper's own frame): the leak scan of this thread starts there. */
void hs_heap_note_exit(void *frame);
/* Allocations that could not be tracked (live table full) so far. */
uint64_t hs_heap_untracked(void);

#endif
