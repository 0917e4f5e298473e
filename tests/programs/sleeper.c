/* sleeper.c — a worker thread ("worker") that spends about 70% of its wall
 * time sleeping and 30% computing, each in its own noinline function, for
 * the wall-clock profile test (tests/integration/services_wall.sh).
 *   sleeper TOTAL_MS
 * Each round sleeps 3.5 to 10.5 ms (7 on average; varied so that the rounds
 * never keep step with a sampler's fixed period) in sleep_phase (nanosleep)
 * and computes for 3/7 of that in compute_phase (spinning on
 * CLOCK_MONOTONIC; each round's share is corrected by the split measured so
 * far, so the split holds by wall time even when the machine is loaded).
 * The main thread waits in pthread_join. At the end the worker prints the
 * measured split:
 *   sleep_ms=S compute_ms=C sleep_pct=P
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "burn.h"

/* Sleep `ms` of wall time; restarts after a signal so the time is honest. */
__attribute__((noinline)) void sleep_phase(double ms)
{
    struct timespec ts = {0, (long)(ms * 1e6)}, rem;
    while (nanosleep(&ts, &rem) != 0)
        ts = rem;
    __asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
}

/* Compute until `ms` of wall time have passed. */
HS_BURN(compute_phase, CLOCK_MONOTONIC)

static double total_ms;

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    double slept = 0, computed = 0, start = hs_clock_ms(CLOCK_MONOTONIC);
    unsigned long rng = 12345; /* fixed seed: the same rounds every run */
    while (hs_clock_ms(CLOCK_MONOTONIC) - start < total_ms) {
        double t0 = hs_clock_ms(CLOCK_MONOTONIC);
        rng = rng * 6364136223846793005ul + 1442695040888963407ul;
        sleep_phase(3.5 + 7.0 * (double)(rng >> 11) / (double)(1ul << 53));
        double t1 = hs_clock_ms(CLOCK_MONOTONIC);
        /* 3/7 of the sleep, corrected for what oversleeping and preemption
         * did to the split so far, so it stays 70/30 on a loaded machine. */
        double want = (slept + t1 - t0) * 3 / 7 - computed;
        compute_phase(want < 0 ? 0 : want > 9 ? 9 : want);
        double t2 = hs_clock_ms(CLOCK_MONOTONIC);
        slept += t1 - t0;
        computed += t2 - t1;
    }
    printf("sleep_ms=%.0f compute_ms=%.0f sleep_pct=%.1f\n", slept, computed,
           100 * slept / (slept + computed));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (total_ms = atof(argv[1])) <= 0) {
        fprintf(stderr, "usage: sleeper TOTAL_MS\n");
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 0;
}
