/* draw.h — the heap profiler's random draw of the bytes until its next
 * sample (agent/heap.c), header-only so that tests/unit/test_heap_draw.c
 * checks the very code the agent runs.
 *
 * The interval is exponential with mean `rate` (Poisson sampling by bytes,
 * as Go and tcmalloc do): -ln(u) * rate, u uniform in (0, 1]. The natural
 * log is computed inline rather than by libm's log: a sample runs cold (one
 * allocation in ~2000 at the default rate), and the call into libm (its PLT
 * entry, its code and its 128-entry table, all out of cache by then) cost
 * as much time as the stack unwinding (perf, bench/heap_fastpath.sh). Here:
 * no table, no call, no libm; within 1e-13 of libm's log (relative, checked
 * by the unit test), far below what a sampling interval needs.
 */
#ifndef HS_AGENT_DRAW_H
#define HS_AGENT_DRAW_H

#include <stdint.h>
#include <string.h>

/* xorshift64*: the next 64 random bits from *state (never 0). */
static inline uint64_t hs_draw_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* ln(u) for u in [2^-64, 1] (a normal double, so its exponent is plain):
 * u = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) = 2 atanh(s), s = (m -
 * 1) / (m + 1), |s| <= 0.1716, by its series to s^15: the first term left
 * out, 2 s^17 / 17, is below 4e-14 of ln(m) at the ends of the range. */
static inline double hs_draw_log_unit(double u)
{
    uint64_t b;
    memcpy(&b, &u, sizeof b);
    int e = (int)(b >> 52) - 1023;
    b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &b, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 15;
    p = 1.0 / 13 + s2 * p;
    p = 1.0 / 11 + s2 * p;
    p = 1.0 / 9 + s2 * p;
    p = 1.0 / 7 + s2 * p;
    p = 1.0 / 5 + s2 * p;
    p = 1.0 / 3 + s2 * p;
    p = 1.0 + s2 * p;
    return (double)e * 0.69314718055994530942 + 2.0 * s * p;
}

/* An interval of mean `rate` from 64 random bits: u = (top 53 bits + 1) /
 * 2^53, in (0, 1], then -ln(u) * rate, at least 1. */
static inline int64_t hs_draw_interval(uint64_t random, double rate)
{
    double u = (double)((random >> 11) + 1) * 0x1p-53;
    double v = -hs_draw_log_unit(u) * rate;
    return v < 1.0 ? 1 : (int64_t)v;
}

#endif
