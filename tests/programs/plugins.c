/* plugins.c — loads two plugins alternately, one at a time (dlopen, burn
 * CPU in it, dlclose), ROUNDS times each, for
 * tests/integration/agent_dlopen_reuse.sh:
 *   plugins A.so A_FUNC B.so B_FUNC ROUNDS
 * Each plugin's function gets the same work. Prints "same_address=1" when
 * both were loaded at the same address every time (what the test needs). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 6)
        return 2;
    int rounds = atoi(argv[5]), same = 1;
    void *first = NULL;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            void *h = dlopen(argv[1 + 2 * k], RTLD_NOW);
            void (*burn)(long) = h ? (void (*)(long))dlsym(h, argv[2 + 2 * k]) : NULL;
            if (!burn) {
                fprintf(stderr, "%s\n", dlerror());
                return 1;
            }
            if (!first)
                first = (void *)burn;
            else if ((char *)burn - (char *)first > 4096 || (char *)first - (char *)burn > 4096)
                same = 0;
            burn(40000000L);
            if (dlclose(h) != 0)
                return 1;
        }
    }
    printf("same_address=%d\n", same);
    return 0;
}
