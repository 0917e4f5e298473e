/* busy.c — a CPU-bound program whose profile is known by construction, for
 * tests/integration/convert_perf_script.sh: main -> work_a -> spin (3 units)
 * and main -> work_b -> spin (1 unit), so work_a's cum is 3x work_b's. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i ^ (sink >> 3);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void work_a(unsigned long n)
{
    spin(3 * n);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep work_a on the stack */
}

__attribute__((noinline)) static void work_b(unsigned long n)
{
    spin(n);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000UL;
    for (int round = 0; round < 4; round++) {
        work_a(n);
        work_b(n);
    }
    printf("%lu\n", sink);
    return 0;
}
