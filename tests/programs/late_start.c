/* late_start.c — threads that exist before the agent starts: the program
 * (linked with -lhotspur, no environment) starts two threads, then starts
 * the agent with hotspur_start(), lets the threads burn CPU and dumps the
 * profile to argv[1]. Their samples must be there. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "hotspur/hotspur.h"

static atomic_int go;
static volatile unsigned long sink;

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void early_thread_work(double ms)
{
    double end = thread_cpu_ms() + ms;
    unsigned long x = 1;
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
    } while (thread_cpu_ms() < end);
}

static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&go)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    early_thread_work(400);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    if (hotspur_start(NULL) != 0) {
        perror("hotspur_start");
        return 1;
    }
    atomic_store(&go, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    if (hotspur_dump(argv[1]) != 0) {
        perror("hotspur_dump");
        return 1;
    }
    if (hotspur_start(NULL) == 0) {
        fprintf(stderr, "second hotspur_start succeeded\n");
        return 1;
    }
    return 0;
}
