/* upload.h — continuous mode: the profiles of every window go to a
 * collector (`hotspur serve`, HOTSPUR_SERVER) over HTTP, from a thread of
 * the agent's own, through a bounded queue. The program's threads never
 * wait on the network; at exit the wait is bounded (2 s). */
#ifndef HS_AGENT_UPLOAD_H
#define HS_AGENT_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

/* Read HOTSPUR_SERVER, HOTSPUR_SERVICE, HOTSPUR_VERSION, HOTSPUR_LABELS,
 * HOTSPUR_TOKEN, HOTSPUR_UPLOAD_TIMEOUT, HOTSPUR_UPLOAD_QUEUE and start the
 * upload thread. 0, or -1 with a message on stderr (a URL it can't use). */
int hs_upload_start(void);
/* Where hs_upload_start reads those settings by name ("HOTSPUR_SERVER"...):
 * get, or the environment when get is NULL (the default). An attached agent
 * (attach.c) passes its config lines: setenv in a running multi-threaded
 * host is not safe. Call before hs_upload_start. */
void hs_upload_settings(const char *(*get)(const char *name));
/* The first window of a process is placed in the first HS_UPLOAD_FIRST_NS
 * of its first period (or the whole period when shorter), so the first
 * profile arrives soon after start (as Cloud Profiler's first one does). */
#define HS_UPLOAD_FIRST_NS 10000000000LL
/* Where a window of duration_ns starts in its period of period_ns:
 * uniform in [0, period - duration] nanoseconds; in the process's first
 * period (first != 0), in [0, min(period, HS_UPLOAD_FIRST_NS) - duration]
 * (at once with the defaults, 60 s and 10 s). Later periods are unchanged:
 * one window in each, at a random point. */
int64_t hs_upload_phase(int64_t period_ns, int64_t duration_ns, int first);
/* Queue one encoded profile (takes data); at a window's end, for every
 * enabled type (hs_agent_window_end). */
void hs_upload_queue(const char *type, void *data, size_t len, int64_t start_ns, int64_t duration_ns,
                     void *arg);
/* At exit: send what is queued for at most 2 s, then stop; report what
 * went wrong (drops, rejections, unsent profiles) on stderr. */
void hs_upload_exit(void);
/* Before exec: send what is queued for at most 1 s (stopping at the first
 * failure), then hand every profile not sent (encoded, gzipped pprof) to
 * keep, which writes it to a file, and empty the queue. The upload thread
 * goes on (the exec may fail). Returns the number handed to keep. */
int hs_upload_before_exec(void (*keep)(const char *type, const void *data, size_t len, void *arg), void *arg);
/* In a fork child: forget the parent's queue; with `on`, a thread of its own. */
void hs_upload_after_fork(int on);
/* HOTSPUR_OTLP_ENDPOINT (instead of HOTSPUR_SERVER): profiles go to
 * {endpoint}/v1development/profiles as OTLP protobuf (docs/otlp.md). */
int hs_upload_is_otlp(void);
struct hs_profile;
/* p as the OTLP request uploaded (resource: service, version, labels). 0, or -1. */
int hs_upload_otlp_encode(const struct hs_profile *p, void **data, size_t *len);
/* " uploaded=N queued=N dropped=N rejected=N failures=N" for ctl status. */
void hs_upload_status(char *out, size_t len);

#endif
