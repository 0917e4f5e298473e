/* live_target.c — programs that `record -p` attaches to after they started
 * (no agent, no preload), each with a known truth:
 *   live_target split          forever: burn_a 6 ms, burn_b 3 ms, burn_c 1 ms of
 *                              this thread's CPU (60/30/10), in short rounds so
 *                              any window of a second or more has that split
 *   live_target late MS        burn_a in main; after MS ms of wall time a new
 *                              thread "late-worker" burns in burn_late
 *   live_target pipe           writer() writes 4 KiB blocks to a pipe read by a
 *                              forked child
 *   live_target exit MS        burn_a for MS ms of CPU, then exit
 *   live_target fork           forever: fork a child that burns burn_c for
 *                              300 ms of CPU and exits; the parent waits for it
 *   live_target offcpu         forever: burn_a 3 ms of CPU, then sleeper()
 *                              nanosleeps 7 ms (30% compute, 70% blocked)
 *   live_target mutex          two threads take one mutex and burn 5 ms holding
 *                              it; each takes it in lock_waiter()
 *   live_target parked         a thread asleep in napper() (one nanosleep of an
 *                              hour) and the main thread in joiner()
 *                              (pthread_join on it): both blocked all along
 *   live_target parkedfp       the main thread asleep all along in
 *                              fp_napper(), whose CFA is computed from the
 *                              frame pointer and which makes its nanosleep
 *                              itself (no libc frame below it saves rbp)
 *   live_target execloop N     exec itself with N-1 at once (no work) until N
 *                              is 0: time spent inside execve
 *   live_target mainexit MS    a thread "worker" burns in burn_b forever; the
 *                              main thread sleeps MS ms, then leaves with
 *                              pthread_exit (the process lives on)
 *   live_target exec N         burn_a (N even) or burn_b (N odd) for 400 ms of
 *                              CPU, dlopen and dlclose libz, then exec itself
 *                              with N-1 (the same pid, a new image) until N is 0
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

/* each burns ms of this thread's CPU time */
HS_BURN(burn_a, CLOCK_THREAD_CPUTIME_ID)
HS_BURN(burn_b, CLOCK_THREAD_CPUTIME_ID)
HS_BURN(burn_c, CLOCK_THREAD_CPUTIME_ID)
HS_BURN(burn_late, CLOCK_THREAD_CPUTIME_ID)

static void *late(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "late-worker");
    for (;;)
        burn_late(10);
    return NULL;
}

__attribute__((noinline)) void sleeper(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int n_locked;
__attribute__((noinline)) void lock_waiter(void)
{
    pthread_mutex_lock(&mu);
    n_locked++; /* not a tail call: lock_waiter stays on the stack */
}
static void *contender(void *arg)
{
    (void)arg;
    for (;;) {
        lock_waiter();
        burn_b(5);
        pthread_mutex_unlock(&mu);
        sched_yield();
    }
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    for (;;)
        burn_b(10);
    return NULL;
}

__attribute__((noinline)) void *napper(void *arg)
{
    (void)arg;
    struct timespec ts = {3600, 0};
    nanosleep(&ts, NULL);
    return NULL;
}
/* A frame pointer kept (optimize attribute), the system call made here: its
 * callers are found only from rbp, which /proc/PID/task/TID/syscall does
 * not give (only sp and pc). */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) void fp_napper(void)
{
    struct timespec ts = {3600, 0};
#if defined(__x86_64__)
    long r = SYS_nanosleep;
    __asm__ volatile("syscall" : "+a"(r) : "D"(&ts), "S"(0L) : "rcx", "r11", "memory");
#else
    nanosleep(&ts, NULL);
#endif
    n_locked++; /* not a tail call */
}
__attribute__((noinline)) void joiner(pthread_t th)
{
    pthread_join(th, NULL);
    n_locked++; /* not a tail call */
}

static char buf[4096];
__attribute__((noinline)) void writer(int fd)
{
    for (;;)
        if (write(fd, buf, sizeof buf) < 0)
            exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "split"))
        for (;;) {
            burn_a(6);
            burn_b(3);
            burn_c(1);
        }
    if (!strcmp(argv[1], "late") && argc == 3) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double ms = atof(argv[2]);
        for (int started = 0;;) {
            burn_a(5);
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (!started && (t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 >= ms) {
                pthread_t th;
                if (pthread_create(&th, NULL, late, NULL))
                    return 1;
                started = 1;
            }
        }
    }
    if (!strcmp(argv[1], "pipe")) {
        int p[2];
        if (pipe(p))
            return 1;
        if (fork() == 0) {
            close(p[1]);
            while (read(p[0], buf, sizeof buf) > 0)
                ;
            _exit(0);
        }
        close(p[0]);
        writer(p[1]);
    }
    if (!strcmp(argv[1], "fork"))
        for (;;) {
            pid_t c = fork();
            if (c == 0) {
                burn_c(300);
                _exit(0);
            }
            if (c < 0)
                return 1;
            waitpid(c, NULL, 0);
        }
    if (!strcmp(argv[1], "offcpu"))
        for (;;) {
            burn_a(3);
            sleeper(7);
        }
    if (!strcmp(argv[1], "parked")) {
        pthread_t th;
        if (pthread_create(&th, NULL, napper, NULL))
            return 1;
        joiner(th);
        return 0;
    }
    if (!strcmp(argv[1], "parkedfp")) {
        fp_napper();
        return 0;
    }
    if (!strcmp(argv[1], "mutex")) {
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            if (pthread_create(&th[i], NULL, contender, NULL))
                return 1;
        pthread_join(th[0], NULL);
    }
    if (!strcmp(argv[1], "exec") && argc == 3) {
        int n = atoi(argv[2]);
        (n % 2 ? burn_b : burn_a)(400);
        void *h = dlopen("libz.so.1", RTLD_NOW);
        if (h)
            dlclose(h);
        if (n <= 0)
            return 0;
        char next[16], self[4096];
        snprintf(next, sizeof next, "%d", n - 1);
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0)
            return 1;
        self[k] = 0; /* its path, not /proc/self/exe: the name stays live_target */
        execl(self, argv[0], "exec", next, (char *)NULL);
        return 1;
    }
    if (!strcmp(argv[1], "execloop") && argc == 3) {
        long n = atol(argv[2]);
        if (n <= 0)
            return 0;
        char next[32];
        snprintf(next, sizeof next, "%ld", n - 1);
        execl("/proc/self/exe", argv[0], "execloop", next, (char *)NULL);
        return 1;
    }
    if (!strcmp(argv[1], "mainexit") && argc == 3) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, NULL))
            return 1;
        long ms = atol(argv[2]);
        struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_exit(NULL);
    }
    if (!strcmp(argv[1], "exit") && argc == 3) {
        burn_a(atof(argv[2]));
        return 0;
    }
    return 2;
}
