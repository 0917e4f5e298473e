/* heap_grow.c — a heap that grows at a known rate, for the continuous-mode
 * heap test (tests/integration/continuous_heap.sh).
 *   heap_grow MS
 * every 100 ms of wall time allocates one block of 1 MiB in grow_one()
 * and keeps it (never freed until exit), for MS milliseconds; prints the
 * number of blocks and exits 0. A window of D seconds then allocates about
 * 10 D MiB, and the heap in use at time t is about 10 t MiB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *volatile keep[100000];

__attribute__((noinline)) static void *grow_one(void)
{
    void *p = malloc(1 << 20);
    if (p)
        memset(p, 1, 64);
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: heap_grow MS\n");
        return 2;
    }
    double start = now_ms(), ms = atof(argv[1]);
    int n = 0;
    while (now_ms() - start < ms && n < 100000) {
        keep[n++] = grow_one();
        struct timespec d = {0, 100000000};
        nanosleep(&d, NULL);
    }
    printf("%d\n", n);
    return 0;
}
