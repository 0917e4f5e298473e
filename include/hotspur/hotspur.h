/* hotspur.h — the public C API of the hotspur agent (libhotspur.so).
 *
 * Preloaded (LD_PRELOAD, as `hotspur record` does) the agent starts by
 * itself, configured by the environment (docs/agent.md). Linked (-lhotspur)
 * it starts by itself only when HOTSPUR_OUTPUT or HOTSPUR_AUTOSTART=1 is set;
 * otherwise the program starts it with hotspur_start() and needs no
 * environment at all.
 *
 * Every call returns 0 on success and -1 on failure with errno set:
 * EINVAL (bad argument), EALREADY (already started), ESRCH (not started),
 * ENOMEM, or the error of the file system call that failed. */
#ifndef HOTSPUR_H
#define HOTSPUR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *output; /* file name template: %p pid, %t start time (Unix s),
                           %n dump sequence number, %% a percent sign;
                           NULL: "hotspur.%p.pb.gz" */
    int cpu_hz;         /* CPU samples per second per thread; 0: 100; <0: no CPU profile */
    int heap;           /* 1: heap profile */
    long heap_rate;     /* mean bytes between heap samples; 0: 524288; 1: all */
    int wall_hz;        /* wall-clock samples per second per thread; 0: none */
    int lock;           /* 1: lock contention profile */
} hotspur_config;

/* The agent's version, e.g. "0.1.0". */
const char *hotspur_version(void);

/* Start profiling this process with cfg (NULL: defaults, CPU only). */
int hotspur_start(const hotspur_config *cfg);

/* Stop sampling; what was collected is kept for the next dump or exit. */
int hotspur_stop(void);

/* Write every enabled profile now, each covering the time since the previous
 * dump (or the start). path is a file name template as in hotspur_config
 * (NULL: the configured one); with several types each file name carries its
 * type (out.cpu.pb.gz, out.wall.pb.gz, ...). */
int hotspur_dump(const char *path);

/* Attach a label to every later sample of the calling thread (like pprof
 * labels in Go): key and value are copied; setting an existing key replaces
 * its value. At most 8 labels per thread; keys and values up to 63 bytes. */
int hotspur_set_label(const char *key, const char *value);

/* Remove all of the calling thread's labels. */
int hotspur_clear_labels(void);

#ifdef __cplusplus
}
#endif

#endif
