/* perf_symbols.c — test program for symbolizing imported `perf script`
 * frames from the local binary (tests/integration/perf_script_symbolize.sh):
 * ps_leaf burns CPU in a loop whose body is ps_mix, inlined; ps_caller calls
 * it. Built -O2 -g as PIE and as -no-pie. The "MARK:" comments let the test
 * find the expected line numbers. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned ps_mix(unsigned h, unsigned i)
{
    return (h ^ i) * 2654435761u + (h >> 7); /* MARK:mix */
}

__attribute__((noinline)) unsigned ps_leaf(unsigned n)
{
    unsigned h = 1;
    for (unsigned i = 0; i < n; i++) /* MARK:loop */
        h = ps_mix(h, i);
    return h;
}

__attribute__((noinline)) unsigned ps_caller(unsigned n)
{
    return ps_leaf(n) + 1; /* MARK:caller */
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000;
    unsigned r = 0;
    for (int k = 0; k < 100; k++)
        r += ps_caller(n);
    printf("%u\n", r);
    return 0;
}
