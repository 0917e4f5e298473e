/* agent.h — the agent's life cycle (agent.c): start, dumps and window
 * ends, pause and resume, the exit write. What every module shares (state,
 * clocks, configuration, threads) is in core.h. */
#ifndef HS_AGENT_AGENT_H
#define HS_AGENT_AGENT_H

#include "agent/core.h"

/* A module at [lo, hi) was unloaded: move the frames recorded in it to
 * [to, to + hi - lo) in every table, so a module loaded later at the same
 * addresses is not mistaken for it. */
void hs_agent_relocate_frames(uint64_t lo, uint64_t hi, uint64_t to);

/* Write every enabled profile, covering the time since the previous dump.
 * tmpl: file name template (NULL: the configured one). Each file written is
 * passed to on_file (may be NULL). Returns the number of files written, or
 * -1 if any failed. Serialized with other dumps and the exit write. */
int hs_agent_dump(const char *tmpl, void (*on_file)(const char *path, void *arg), void *arg);
/* The agent thread at a window's end: upload it (continuous mode: every
 * enabled type, encoded and queued) or write it as the next numbered dump
 * (periodic), unless the exit write took it first. The window is closed
 * (hs_control_window_close) under the dump lock, so exactly one of them
 * has it. */
void hs_agent_window_end(void);
/* Pause or resume every sampler; what was collected is kept. */
void hs_agent_pause(void);
void hs_agent_resume(void);
/* Forget what was collected so far (a periodic profile's window opens). */
void hs_agent_mark(void);
/* Pre-fault the tables the signal handlers write (the agent thread does,
 * once the process has lived a little: a short one never pays for it). */
void hs_agent_populate_tables(void);
/* Stop sampling and write every profile as at exit (once; later calls and
 * the exit handler do nothing). */
void hs_agent_final_write(void);
/* Start with cfg (the public API); 0, or -1 with errno. */
int hs_agent_start_config(const hs_config *cfg);

#endif
