/* cpu_split.c — burns CPU in three functions in a known ratio, measured by
 * the thread's own CPU clock, so the truth does not depend on machine speed.
 *   cpu_split single TOTAL_MS   burn_a 60%, burn_b 30%, burn_c 10% in main
 *   cpu_split threads TOTAL_MS  three threads, loads 60/30/10 in parallel,
 *                               named worker-a, worker-b, worker-c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned long sink;

/* Spin until `ms` of this thread's CPU time have passed; the clock is read
 * rarely so nearly all samples land in the loop itself. */
#define BURN(name)                                                  \
    __attribute__((noinline)) void name(double ms)                  \
    {                                                               \
        double end = thread_cpu_ms() + ms;                          \
        unsigned long x = 1;                                        \
        do {                                                        \
            for (int i = 0; i < 200000; i++)                        \
                x = x * 6364136223846793005ul + 1442695040888963407ul; \
            sink = x;                                               \
        } while (thread_cpu_ms() < end);                            \
    }
BURN(burn_a)
BURN(burn_b)
BURN(burn_c)

typedef struct {
    void (*fn)(double);
    double ms;
    const char *name;
} job;

static void *run(void *p)
{
    job *j = p;
    pthread_setname_np(pthread_self(), j->name);
    j->fn(j->ms);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cpu_split single|threads TOTAL_MS\n");
        return 2;
    }
    double total = atof(argv[2]);
    if (strcmp(argv[1], "single") == 0) {
        for (int round = 0; round < 2; round++) { /* few boundaries: each costs up to a sample */
            burn_a(total * 0.6 / 2);
            burn_b(total * 0.3 / 2);
            burn_c(total * 0.1 / 2);
        }
        return 0;
    }
    job jobs[3] = {{burn_a, total * 0.6, "worker-a"}, {burn_b, total * 0.3, "worker-b"},
                   {burn_c, total * 0.1, "worker-c"}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, run, &jobs[i]) != 0)
            return 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return 0;
}
