/* cpu_short.c — many short-lived threads or processes, each computing for a
 * few milliseconds of CPU (tests/integration/agent_cpu_short.sh).
 *   cpu_short threads N MS   N threads (two at a time), MS ms of CPU each
 *   cpu_short procs N MS     N forked children (one at a time), MS ms each,
 *                            ending with exit(0)
 * Each thread or child measures the CPU time of its work
 * (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID around it: what the
 * program itself spends, not a profiler's set-up in a new thread or child).
 * Prints "cpu_ns=TOTAL" and "pid=PID". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

HS_BURN(short_work, CLOCK_THREAD_CPUTIME_ID)
static double g_ms;
static _Atomic int64_t g_cpu_ns;

static int64_t cpu_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *arg)
{
    (void)arg;
    int64_t c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    short_work(g_ms);
    g_cpu_ns += cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int n = atoi(argv[2]);
    g_ms = atof(argv[3]);
    if (strcmp(argv[1], "threads") == 0) {
        for (int i = 0; i < n; i += 2) {
            pthread_t t[2];
            for (int k = 0; k < 2; k++)
                pthread_create(&t[k], NULL, worker, NULL);
            for (int k = 0; k < 2; k++)
                pthread_join(t[k], NULL);
        }
    } else {
        int p[2];
        if (pipe(p) != 0)
            return 2;
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                int64_t c0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
                short_work(g_ms);
                int64_t c = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
                if (write(p[1], &c, sizeof c) != sizeof c)
                    _exit(3);
                exit(0);
            }
            int st;
            int64_t c;
            if (pid < 0 || waitpid(pid, &st, 0) != pid || read(p[0], &c, sizeof c) != sizeof c)
                return 2;
            g_cpu_ns += c;
        }
    }
    printf("cpu_ns=%lld pid=%d\n", (long long)g_cpu_ns, (int)getpid());
    return 0;
}
