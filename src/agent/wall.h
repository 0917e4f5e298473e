/* wall.h — wall-clock sampling: every registered thread is sampled on a
 * wall-clock interval whether it runs or waits. */
#ifndef HS_AGENT_WALL_H
#define HS_AGENT_WALL_H

#include <stdint.h>
#include <ucontext.h>

#include "agent/stacktab.h"

/* One tick (the agent thread calls it wall_hz times a second). */
void hs_wall_tick(void);
/* In the sampled thread's signal handler: record its stack for weight_ns.
 * 1 recorded, 0 not (wall sampling off, or the thread is in the agent). */
int hs_wall_on_signal(const ucontext_t *uc, int64_t weight_ns);
/* In a thread that ends with weight_ns of its life not yet in a sample:
 * add it to its last sample (last, NULL if none), else record it at the
 * thread's start routine. */
void hs_wall_owed_at_exit(int64_t weight_ns, hs_stack_entry *last);
/* The wall time before this instant is not counted (CLOCK_MONOTONIC): when
 * sampling resumed, or a window opened. */
int64_t hs_wall_epoch(void);
/* A window opens now (periodic profiles): what threads lived before it is
 * not this window's. */
void hs_wall_mark(void);

#endif
