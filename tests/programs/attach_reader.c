/* attach_reader.c — a process for `hotspur attach` tests (attach_inject.sh):
 * prints "ready PID", then blocks in read() on stdin; prints what each read
 * returned ("read N: TEXT", or "read -1: errno") until end of input, and a
 * helper thread blocks in nanosleep meanwhile (the main thread is the one a
 * read keeps in a system call). Exit 0 when no read failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        if (nanosleep(&ts, NULL) != 0)
            printf("nanosleep: %s\n", strerror(errno));
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    int bad = 0;
    char buf[256];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf - 1);
        if (n < 0) {
            printf("read -1: %s\n", strerror(errno));
            bad = 1;
            if (errno == EINTR)
                continue;
            break;
        }
        if (n == 0)
            break;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        printf("read %zd: %s\n", n, buf);
    }
    return bad;
}
