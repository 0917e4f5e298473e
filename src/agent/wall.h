/* wall.h — wall-clock sampling: every registered thread is sampled on a
 * wall-clock interval whether it runs or waits. */
#ifndef HS_AGENT_WALL_H
#define HS_AGENT_WALL_H

#include <stdint.h>
#include <ucontext.h>

/* One tick (the agent thread calls it wall_hz times a second). */
void hs_wall_tick(void);
/* In the sampled thread's signal handler: record its stack for weight_ns. */
void hs_wall_on_signal(const ucontext_t *uc, int64_t weight_ns);

#endif
