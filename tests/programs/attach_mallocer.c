/* attach_mallocer.c — one thread that does nothing but malloc and free
 * blocks too large for glibc's tcache (so each call takes the arena's
 * lock), for attach_inject.sh: a thread stopped inside malloc must not be
 * made to call dlopen. Prints "ready", then runs until SIGTERM; on SIGINT
 * prints the number of rounds and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t stop;

static void on_int(int sig)
{
    (void)sig;
    stop = 1;
}

int main(void)
{
    signal(SIGINT, on_int);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready\n");
    unsigned long rounds = 0;
    void *keep[64] = {0};
    while (!stop) {
        unsigned i = (unsigned)(rounds % 64);
        free(keep[i]);
        keep[i] = malloc(2048 + (rounds * 977) % 30000);
        rounds++;
    }
    printf("rounds %lu\n", rounds);
    return 0;
}
