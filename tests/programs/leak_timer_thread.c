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
 *
 * `leak_timer_thread spin`: the timer's thread blocks every signal with a
 * raw system call (the agent's signal included: its pthread_sigmask filter
 * is bypassed) and spins in user space instead of blocking: it neither
 * stops in the agent's handler nor shows a stack pointer in
 * /proc/self/task/TID/syscall. Same answer expected.
 */
#define _GNU_SOURCE
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static sem_t g_ready;
static int g_spin;
static volatile unsigned long g_spins;

static void leak_timer_thread_hold(union sigval v)
{
    (void)v;
    if (g_spin) {
        uint64_t all = ~0ull;
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof all);
    }
    char *volatile held = malloc(3000);
    memset(held, 1, 3000);
    sem_post(&g_ready);
    for (;;) {
        if (g_spin)
            g_spins++;
        else
            pause();
    }
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

int main(int argc, char **argv)
{
    g_spin = argc > 1 && !strcmp(argv[1], "spin");
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
    printf(g_spin ? "timer thread spinning\n" : "timer thread blocked\n");
    fflush(stdout);
    exit(0);
}
