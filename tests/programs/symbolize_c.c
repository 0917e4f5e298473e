/* symbolize_c.c — test program for the symbolizer (tests/unit/test_symbolize.c).
 * Built -O2 -g as PIE and as -no-pie, then stripped and stripped with a
 * .gnu_debuglink. It records a return address inside an always-inline
 * function inlined into hs_outer and prints it (see symbolize_report.h).
 * The "MARK:" comments let the test find the expected line numbers. */
#include "symbolize_report.h"

void *volatile hs_captured_pc;

__attribute__((noinline)) void hs_capture(void)
{
    hs_captured_pc = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) int hs_inlined_leaf(int x)
{
    hs_capture(); /* MARK:leaf */
    return x * 3 + 1;
}

__attribute__((noinline)) int hs_outer(int x)
{
    int r = hs_inlined_leaf(x); /* MARK:outer */
    __asm__ volatile("" ::: "memory");
    return r + 2;
}

int main(int argc, char **argv)
{
    (void)argv;
    int r = hs_outer(argc);
    if (hs_report(hs_captured_pc) != 0)
        return 1;
    return r == 0; /* never true; keeps r alive */
}
