/* leak_stale.c — leaks that stale stack slots used to hide (issue 30):
 * built -O0, main leaks four 2000-byte blocks in leak_stale_make, calling
 * another function between them, so copies of the lost pointers stay in
 * dead stack slots that exit()'s frames later cover without writing.
 *   leak_stale         leak 4 blocks, return from main
 *   leak_stale deep    also keep one block in a local of a function that
 *                      then calls exit(): that block is live (its frame
 *                      is), the 4 are still lost
 *   leak_stale threads first create and join 3 threads (glibc keeps their
 *                      TLS blocks for reuse: not the program's leaks) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *leak_stale_make(void)
{
    void *p = malloc(2000);
    memset(p, 0, 2000);
    return p;
}

static int leak_stale_other(int n)
{
    char buf[256];
    memset(buf, n, sizeof buf);
    return buf[3];
}

static void *leak_stale_thread(void *a)
{
    return a;
}

static void leak_stale_deep(void)
{
    void *volatile kept = malloc(500);
    memset(kept, 1, 500);
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        for (int i = 0; i < 3; i++) {
            pthread_t t;
            pthread_create(&t, NULL, leak_stale_thread, NULL);
            pthread_join(t, NULL);
        }
    int s = 0;
    for (int i = 0; i < 4; i++) {
        void *p = leak_stale_make();
        s += leak_stale_other(i);
        (void)p;
    }
    s += leak_stale_other(9);
    printf("%d\n", s);
    if (argc > 1 && strcmp(argv[1], "deep") == 0)
        leak_stale_deep();
    return 0;
}
