/* idlers.c — many threads that wait, for the wall profile's cost test
 * (tests/integration/services_threads.sh).
 *   idlers THREADS SECONDS
 * THREADS threads named "idle" wait SECONDS in idle_thread_wait (one
 * nanosleep), the main thread joins them, then prints the CPU time the whole
 * process used (the agent's thread included), the wall time and the sum of
 * the threads' lifetimes (each from its start routine's first line to its
 * last, CLOCK_MONOTONIC):
 *   cpu_ms=C wall_ms=W thread_ms=T
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "burn.h"

static double seconds;
static _Atomic long long lifetimes_us; /* sum over the threads */

__attribute__((noinline)) void idle_thread_wait(void)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)}, rem;
    while (nanosleep(&ts, &rem) != 0)
        ts = rem;
    __asm__ volatile("" ::: "memory");
}

static void *run(void *arg)
{
    (void)arg;
    double t0 = hs_clock_ms(CLOCK_MONOTONIC);
    pthread_setname_np(pthread_self(), "idle");
    idle_thread_wait();
    atomic_fetch_add(&lifetimes_us, (long long)((hs_clock_ms(CLOCK_MONOTONIC) - t0) * 1000));
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc == 3 ? atoi(argv[1]) : 0;
    seconds = argc == 3 ? atof(argv[2]) : 0;
    if (n < 1 || n > 4096 || seconds <= 0) {
        fprintf(stderr, "usage: idlers THREADS SECONDS\n");
        return 2;
    }
    double t0 = hs_clock_ms(CLOCK_MONOTONIC);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, run, NULL) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("cpu_ms=%.0f wall_ms=%.0f thread_ms=%.0f\n", hs_clock_ms(CLOCK_PROCESS_CPUTIME_ID),
           hs_clock_ms(CLOCK_MONOTONIC) - t0, (double)atomic_load(&lifetimes_us) / 1000);
    free(t);
    return 0;
}
