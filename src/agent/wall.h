/* wall.h — wall-clock sampling: every registered thread is sampled on a
 * wall-clock interval whether it runs or waits. */
#ifndef HS_AGENT_WALL_H
#define HS_AGENT_WALL_H

#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

#include "agent/stacktab.h"
#include "agent/threads.h"

/* A running thread's wall samples come from a one-shot timer on its CPU
 * clock that sends the agent's signal (sampler.c): */
/* Give thread tid (in slot s) its wall timer on clock clk, sending sig. */
void hs_wall_timer_create(hs_thread_slot *s, int32_t tid, clockid_t clk, int sig);
/* Delete it (taken from the agent thread first). */
void hs_wall_timer_delete(hs_thread_slot *s);
/* Whether s has a wall timer that sends sig. */
int hs_wall_timer_on(const hs_thread_slot *s, int sig);
/* In the signal handler: 1 if the signal is a wall timer's (the sample is
 * taken), 0 if not. */
int hs_wall_on_timer(const siginfo_t *si, const ucontext_t *uc);
/* The calling thread (in slot s) ends: its timer goes, the rest of its
 * life goes to its last sample. */
void hs_wall_thread_end(hs_thread_slot *s);

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
