/* hotspur.h — the public C API of the hotspur agent (libhotspur.so).
 *
 * A program linked with -lhotspur (or running with it preloaded) is profiled
 * as configured by the environment (see docs/agent.md). These calls let the
 * program act on its own profile. All return 0 on success and -1 on failure
 * (with errno set, or a message on stderr). */
#ifndef HOTSPUR_H
#define HOTSPUR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The agent's version, e.g. "0.1.0". */
const char *hotspur_version(void);

/* Write the CPU profile collected so far to path (gzipped pprof), without
 * stopping or resetting it. -1 if the agent is not profiling this process or
 * the file cannot be written. */
int hotspur_dump(const char *path);

#ifdef __cplusplus
}
#endif

#endif
