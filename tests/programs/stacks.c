/* stacks.c — stack shapes the unwinder and symbolizer must get right; built
 * with -O2 -g -fomit-frame-pointer.
 *   stacks qsort MS    time in slow_compare, called by libc's qsort from
 *                      sort_caller from main
 *   stacks inline MS   time in hot_inline, always inlined into inline_outer
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned long sink;

__attribute__((noinline)) static int slow_compare(const void *a, const void *b)
{
    unsigned long x = *(const unsigned *)a;
    for (int i = 0; i < 2000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
    unsigned ua = *(const unsigned *)a, ub = *(const unsigned *)b;
    return (ua > ub) - (ua < ub);
}

__attribute__((noinline)) static void sort_caller(unsigned *v, size_t n)
{
    qsort(v, n, sizeof *v, slow_compare);
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) unsigned long hot_inline(unsigned long x)
{
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

__attribute__((noinline)) static void inline_outer(double ms)
{
    double end = cpu_ms() + ms;
    unsigned long x = 1;
    while (cpu_ms() < end)
        x = hot_inline(x);
    sink = x;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stacks qsort|inline MS\n");
        return 2;
    }
    double ms = atof(argv[2]);
    if (strcmp(argv[1], "inline") == 0) {
        inline_outer(ms);
        return 0;
    }
    size_t n = 4096;
    unsigned *v = malloc(n * sizeof *v);
    if (!v)
        return 1;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end) {
        for (size_t i = 0; i < n; i++)
            v[i] = (unsigned)(i * 2654435761u);
        sort_caller(v, n);
    }
    free(v);
    return 0;
}
