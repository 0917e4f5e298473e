/* live_twin.c — built twice as non-PIE programs that differ only in the name
 * of their one busy function (TWIN=a: twin_spin_a, TWIN=b: twin_spin_b), so
 * that function sits at the same address in both: a profile of the two
 * processes must name each frame from its own process's file
 * (live_twins.sh). Runs for argv[1] seconds of CPU time (default 30). */
#include <stdlib.h>
#include <time.h>

#include "burn.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define SPIN CAT(twin_spin_, TWIN)

HS_BURN(SPIN, CLOCK_PROCESS_CPUTIME_ID)

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 30;
    SPIN(secs * 1000);
    return 0;
}
