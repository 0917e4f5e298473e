/* stack_edge.c — a program that runs with about 4 KiB of stack left
 * (tests/integration/agent_stack.sh).
 *   stack_edge main    recurse on the main thread to ~4 KiB above its limit
 *                      (RLIMIT_STACK below the top of [stack]);
 *   stack_edge thread  the same on a thread with a 64 KiB stack.
 * At the bottom it computes for 300 ms of CPU time, so a profiler's signals
 * arrive there, then returns. Prints "left=BYTES ok". Without the agent it
 * always works: nothing at the bottom needs more than a few hundred bytes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uintptr_t g_floor; /* lowest usable stack address */
static volatile uintptr_t g_left;
static volatile unsigned long sink;

__attribute__((noinline)) static void bottom_work(void)
{
    struct timespec ts;
    double end;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    end = ts.tv_sec + ts.tv_nsec / 1e9 + 0.3;
    unsigned long x = 1;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    } while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

__attribute__((noinline)) static void descend(int depth)
{
    volatile char pad[192];
    pad[0] = (char)depth;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (sp - g_floor > 4096 + 512) {
        descend(depth + 1);
    } else {
        g_left = sp - g_floor;
        bottom_work();
    }
    __asm__ volatile("" ::"r"(pad) : "memory");
}

static uintptr_t main_stack_floor(void)
{
    struct rlimit rl;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long top = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "[stack]"))
            { unsigned long lo; sscanf(line, "%lx-%lx", &lo, &top); }
    if (f)
        fclose(f);
    if (!top || getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        fprintf(stderr, "need a finite RLIMIT_STACK and a [stack] mapping\n");
        exit(2);
    }
    return top - rl.rlim_cur;
}

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_attr_t a;
    void *lo;
    size_t size;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    g_floor = (uintptr_t)lo;
    descend(0);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "thread") == 0) {
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 65536);
        if (pthread_create(&t, &a, thread_main, NULL) != 0)
            return 2;
        pthread_join(t, NULL);
    } else {
        g_floor = main_stack_floor();
        descend(0);
    }
    printf("left=%lu ok\n", (unsigned long)g_left);
    return 0;
}
