/* fd_closer.c — a daemon-like program that closes every inherited fd
 * (close_range(3, ~0), like closefrom(3)) and then reuses the low numbers,
 * for tests/integration/agent_fds.sh. After closing it opens a TCP listening
 * socket on 127.0.0.1 and a self-pipe (they get fds 3, 4 and 5), then 20
 * times connects to itself, writes one byte into the pipe, and expects to
 * accept that connection and read that byte. It measures the CPU time of
 * every other thread of the process (the agent's) while it waits, and prints:
 *   served=N bytes=N other_cpu_ms=X elapsed_ms=Y
 * Exit status 0 when all 20 connections and bytes came through. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time (ms) of every thread but this one, from /proc/self/task/ * /stat. */
static double others_cpu_ms(void)
{
    long me = syscall(SYS_gettid), hz = sysconf(_SC_CLK_TCK);
    double ms = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        long tid = atol(de->d_name);
        if (tid <= 0 || tid == me)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        unsigned long ut = 0, st = 0;
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
            ms += (double)(ut + st) * 1000.0 / (double)hz;
    }
    closedir(d);
    return ms;
}

int main(void)
{
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
        perror("close_range");
        return 2;
    }
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int p[2];
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) != 0 || pipe(p) != 0) {
        perror("setup");
        return 2;
    }
    fprintf(stderr, "fds: listen=%d pipe=%d,%d\n", lfd, p[0], p[1]);
    double cpu0 = others_cpu_ms(), t0 = now_ms();
    int served = 0, bytes = 0;
    for (int i = 0; i < 20; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            return 2;
        }
        char b = 'x';
        if (write(p[1], &b, 1) != 1)
            return 2;
        struct timespec ts = {0, 50000000}; /* give anyone else time to steal them */
        nanosleep(&ts, NULL);
        struct pollfd pf[2] = {{lfd, POLLIN, 0}, {p[0], POLLIN, 0}};
        if (poll(pf, 2, 500) > 0) {
            if (pf[0].revents & POLLIN) {
                int s = accept(lfd, NULL, NULL);
                if (s >= 0) {
                    served++;
                    close(s);
                }
            }
            if ((pf[1].revents & POLLIN) && read(p[0], &b, 1) == 1 && b == 'x')
                bytes++;
        }
        close(c);
    }
    double cpu = others_cpu_ms() - cpu0, el = now_ms() - t0;
    printf("served=%d bytes=%d other_cpu_ms=%.0f elapsed_ms=%.0f\n", served, bytes, cpu, el);
    return served == 20 && bytes == 20 ? 0 : 1;
}
