/* cd_burn.c — changes directory to / and computes in cd_burn_work for the
 * CPU milliseconds given: a program that moves away from where it was
 * started (and from a relative LD_PRELOAD path), for agent_symlib.sh.
 *   cd_burn MS */
#include <stdlib.h>
#include <unistd.h>

#include "burn.h"

HS_BURN(cd_burn_work, CLOCK_PROCESS_CPUTIME_ID)

int main(int argc, char **argv)
{
    if (argc != 2 || chdir("/") != 0)
        return 2;
    cd_burn_work(atof(argv[1]));
    return 0;
}
