/* daemon.c — a service that runs until SIGTERM, for the on-demand and
 * periodic profile tests (tests/integration/services_*.sh).
 *   daemon PHASE_FILE
 * The main thread reads PHASE_FILE about every 10 ms and, by its first
 * character, computes in phase_one_work ('1'), in phase_two_work ('2'), or
 * waits in idle_wait (anything else, or no file), so a test can choose what
 * each dump must contain. A second thread ("sleeper") loops on sleep(1) and
 * measures each call: sleep() must not return early just because the
 * process is profiled. A SIGUSR1 handler counts signals (only the main
 * thread takes them). On SIGTERM it prints, and exits normally:
 *   usr1=N sleeps=N early=N min_sleep_ms=X
 * where `early` counts sleep(1) calls that returned before 1 s or with
 * time left. It prints "ready" once both threads run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

static volatile sig_atomic_t stop, usr1;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

/* Compute for about `ms` of wall time. */
HS_BURN(phase_one_work, CLOCK_MONOTONIC)
HS_BURN(phase_two_work, CLOCK_MONOTONIC)

__attribute__((noinline)) void idle_wait(void)
{
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory");
}

static int read_phase(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int c = fgetc(f);
    fclose(f);
    return c == '1' ? 1 : c == '2' ? 2 : 0;
}

static long sleeps, early;
static double min_sleep = 1e9;

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "sleeper");
    for (;;) {
        double t0 = hs_clock_ms(CLOCK_MONOTONIC);
        unsigned left = sleep(1);
        double d = hs_clock_ms(CLOCK_MONOTONIC) - t0;
        sleeps++;
        if (left != 0 || d < 999.0)
            early++;
        if (d < min_sleep)
            min_sleep = d;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: daemon PHASE_FILE\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);

    /* The sleeper thread blocks SIGTERM and SIGUSR1 (it inherits this mask),
     * so only the program's own profiler could interrupt its sleep. */
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0)
        return 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    printf("ready\n");
    fflush(stdout);

    while (!stop) {
        switch (read_phase(argv[1])) {
        case 1: phase_one_work(10); break;
        case 2: phase_two_work(10); break;
        default: idle_wait(); break;
        }
    }
    /* The sleeper's counters are read without a lock: the figures of a
     * sleep in progress are not needed, the others were written > 1 s ago. */
    printf("usr1=%d sleeps=%ld early=%ld min_sleep_ms=%.1f\n", (int)usr1, sleeps, early,
           sleeps ? min_sleep : 0.0);
    fflush(stdout);
    return 0;
}
