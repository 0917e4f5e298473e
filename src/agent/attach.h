/* attach.h — the agent started in a process that already runs (`hotspur
 * attach PID`, docs/attach.md): the entry points the injector calls in the
 * target after dlopen, and the codes they return to it. Shared by the
 * agent (attach.c) and the command (cli/cmd_attach.c), which turns a code
 * into one line. */
#ifndef HS_AGENT_ATTACH_H
#define HS_AGENT_ATTACH_H

/* hotspur_attach_start(config): config is lines "key=value" (or "key"):
 *   heap            the heap profile (sampled, HOTSPUR_HEAP_RATE's default)
 *   rate=N          heap sampling rate in bytes (1: exact, every block)
 *   leaks           exact heap + the leak scan at detach
 *   lock            the lock profile
 *   output=PATH     the profile's file name template (absolute)
 *   stats           print the agent's counters at detach (to the target's stderr)
 *   server=URL      continuous mode: each window's profiles uploaded there
 *                   (no files), as HOTSPUR_SERVER; with it, optionally:
 *   service=S  version=V  labels=K=V,...  token=T   as HOTSPUR_SERVICE/VERSION/
 *                   LABELS/TOKEN
 *   period=NS  window=NS  a window of NS every period (default 10 s / 60 s)
 * It returns the number of GOT entries rewritten (>= 0), or a code below.
 * hotspur_attach_stop(NOTE): restore every rewritten entry, stop the agent's
 * threads, write the profiles; then, when NOTE is an absolute path, write
 * there "output=TEMPLATE", "heap=0|1", "lock=0|1", "leaks=0|1" lines (what
 * the command needs to name the files) and in continuous mode
 * "uploads=uploaded=N queued=N dropped=N refused=N failures=N" (the
 * uploads stop before the note is written). HS_ATTACH_OK or a code below. */
#define HS_ATTACH_OK 0
#define HS_ATTACH_ALREADY (-1)      /* start: attached already (detach first) */
#define HS_ATTACH_PRELOADED (-2)    /* start: the agent runs there from the start (LD_PRELOAD) */
#define HS_ATTACH_BAD_CONFIG (-3)   /* start: a config line not understood */
#define HS_ATTACH_FOREIGN_MALLOC (-4) /* start: malloc is not glibc's (jemalloc, tcmalloc...) */
#define HS_ATTACH_START_FAILED (-5) /* start: the agent did not start (its stderr says why) */
#define HS_ATTACH_NOT_ATTACHED (-6) /* stop: nothing attached */
#define HS_ATTACH_WRITE_FAILED (-7) /* stop: the hooks are off, but a profile was not written */
#define HS_ATTACH_NOTHING (-8)      /* start: no profile asked for */

/* Agent side: 1 when the calling thread is loading the agent for `hotspur
 * attach` (traced by hotspur): the constructor then leaves the start to
 * hotspur_attach_start and does not read the host's environment. */
int hs_attach_loading(void);

#endif
