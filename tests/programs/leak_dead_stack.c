/* leak_dead_stack.c — a leak whose pointer survives only in a thread's dead
 * stack (issue 30): built -O0, thread "lost" allocates 3000 bytes in a deep
 * function that copies the pointer all over an 8 KiB local array and
 * returns without freeing it, then blocks at a shallow depth, so the copies
 * lie below its stack pointer (dead frames). The leak runs under a 4 KiB
 * pad, far below where the thread then blocks: pthread_cond_wait's live
 * frames leave slots unwritten, and a copy there is a live root to
 * valgrind too (1 run in 40 failed so when the leak ran right under
 * lost()). Thread "kept" holds 4000
 * bytes in a local of its live frame and blocks. main waits until both
 * block, then returns: the process exits with both threads running.
 * valgrind says 3000 bytes in 1 block definitely lost; the 4000 bytes are
 * reachable (the live frame). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready, g_never;

static void block_forever(void)
{
    pthread_mutex_lock(&g_mu);
    g_ready++;
    pthread_cond_broadcast(&g_cv);
    while (!g_never)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}

static volatile int g_sink;

/* Leaks its block; copies of the pointer stay in its dead frame. */
static void leak_dead_stack_lose(void)
{
    void *volatile copies[1024];
    void *p = malloc(3000);
    memset(p, 1, 3000);
    for (int i = 0; i < 1024; i++)
        copies[i] = p;
    g_sink = copies[1023] != NULL;
}

/* Runs the leak 4 KiB deeper than lost()'s frame. */
static void leak_deep(void)
{
    volatile char pad[4096];
    pad[0] = 0;
    leak_dead_stack_lose();
    g_sink = pad[0];
}

static void *lost(void *arg)
{
    (void)arg;
    leak_deep();
    block_forever();
    return NULL;
}

static void *leak_dead_stack_keep(void *arg)
{
    (void)arg;
    void *volatile kept = malloc(4000);
    memset(kept, 2, 4000);
    block_forever();
    return kept;
}

int main(void)
{
    pthread_t a, b;
    if (pthread_create(&a, NULL, lost, NULL) != 0 || pthread_create(&b, NULL, leak_dead_stack_keep, NULL) != 0) {
        fprintf(stderr, "leak_dead_stack: pthread_create failed\n");
        return 1;
    }
    pthread_mutex_lock(&g_mu);
    while (g_ready < 2)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    printf("both threads blocked\n");
    return 0;
}
