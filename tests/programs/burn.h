/* burn.h — CPU burning for the services test programs (sleeper, daemon,
 * forktwo, labels, live_target): HS_BURN(name, clock) defines a noinline
 * `void name(double ms)` that computes until `ms` milliseconds of `clock`
 * have passed (CLOCK_MONOTONIC: wall time; CLOCK_THREAD_CPUTIME_ID or
 * CLOCK_PROCESS_CPUTIME_ID: CPU time), so each function's share holds by
 * construction on any machine. The clock is read every ~20000 iterations,
 * so nearly all samples land in the loop itself. */
#ifndef HS_TEST_BURN_H
#define HS_TEST_BURN_H

#include <time.h>

static inline double hs_clock_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned long hs_burn_sink;

#define HS_BURN(name, clock)                                            \
    __attribute__((noinline)) void name(double ms)                      \
    {                                                                   \
        double end = hs_clock_ms(clock) + ms;                           \
        unsigned long x = 1;                                            \
        do {                                                            \
            for (int i = 0; i < 20000; i++)                             \
                x = x * 6364136223846793005ul + 1442695040888963407ul;  \
            hs_burn_sink = x;                                           \
        } while (hs_clock_ms(clock) < end);                             \
    }

#endif
