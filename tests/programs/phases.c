/* phases.c — CPU in one function, then in another, for the continuous-mode
 * tests (tests/integration/continuous_*.sh): a window taken during the
 * first phase holds phase_a, one during the second holds phase_b.
 *   phases A_MS B_MS
 * computes in phase_a for A_MS milliseconds of wall time, then in phase_b
 * for B_MS, prints "done" and exits 0. */
#include <stdio.h>
#include <stdlib.h>

#include "burn.h"

HS_BURN(phase_a, CLOCK_MONOTONIC)
HS_BURN(phase_b, CLOCK_MONOTONIC)

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: phases A_MS B_MS\n");
        return 2;
    }
    phase_a(atof(argv[1]));
    phase_b(atof(argv[2]));
    puts("done");
    return 0;
}
