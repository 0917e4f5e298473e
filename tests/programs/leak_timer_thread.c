/* leak_timer_thread.c — a block held by a thread the agent did not start
 * (tests/integration/heap_leaks_unregistered.sh, issue 30).
 *
 * A SIGEV_THREAD timer's notification runs on a thread that the C library
 * creates itself (its own pthread_create, not the interposable one): the
 * agent never sees it start. That thread allocates 3000 bytes, keeps the
 * pointer in its live frame and blocks for good. main then loses 1000
 * bytes and exits while the thread still blocks. Lost: the 1000 bytes
 * only; the 3000 are reachable from a running thread's stack (valgrind:
 * "definitely lost: 1,000 bytes in 1 blocks").
 */
#define _GNU_SOURCE
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t g_ready;

static void leak_timer_thread_hold(union sigval v)
{
    (void)v;
    char *volatile held = malloc(3000);
    memset(held, 1, 3000);
    sem_post(&g_ready);
    for (;;)
        pause();
}

static __attribute__((noinline)) void *leak_timer_thread_lose(void)
{
    char *p = malloc(1000);
    memset(p, 2, 1000);
    return p;
}

/* Leave no copy of the lost pointer in main's frame or below it. */
static __attribute__((noinline)) void lose_one(void)
{
    volatile uintptr_t x = (uintptr_t)leak_timer_thread_lose();
    x = 0;
    (void)x;
    char pad[4096];
    memset(pad, 0, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

int main(void)
{
    sem_init(&g_ready, 0, 0);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = leak_timer_thread_hold;
    timer_t t;
    struct itimerspec its = {{0, 0}, {0, 1000000}};
    if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0 || timer_settime(t, 0, &its, NULL) != 0) {
        perror("timer");
        return 1;
    }
    while (sem_wait(&g_ready) != 0)
        ;
    lose_one();
    printf("timer thread blocked\n");
    fflush(stdout);
    exit(0);
}
