/* linked.c — a program linked with -lhotspur that uses the public API:
 * burns CPU, dumps a profile mid-run to argv[1], burns more, exits. */
#include <stdio.h>
#include <string.h>

#include "hotspur/hotspur.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void linked_work(long n)
{
    unsigned long x = 1;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    printf("agent %s\n", hotspur_version());
    linked_work(300000000L);
    if (hotspur_dump(argv[1]) != 0) {
        perror("hotspur_dump");
        return 1;
    }
    linked_work(100000000L);
    return 0;
}
