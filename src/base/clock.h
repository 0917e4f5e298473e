/* clock.h — a clock read as int64 nanoseconds: wall time (CLOCK_REALTIME:
 * profile and window times, "now" in queries, retention) and elapsed time
 * (CLOCK_MONOTONIC: deadlines, periods). Header only. */
#ifndef HS_BASE_CLOCK_H
#define HS_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t hs_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* nanoseconds since the Unix epoch */
static inline int64_t hs_realtime_ns(void)
{
    return hs_clock_ns(CLOCK_REALTIME);
}

/* nanoseconds on a clock that never jumps (deadlines, intervals) */
static inline int64_t hs_monotonic_ns(void)
{
    return hs_clock_ns(CLOCK_MONOTONIC);
}

#endif
