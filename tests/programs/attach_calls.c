/* attach_calls.c — a process for attach_calls.sh (issue 32): what a process
 * blocked in system calls sees of an attach and detach. Three threads block
 * at once: one in read() on stdin (a pipe), one in nanosleep(1.5 s), one in
 * epoll_wait(2 s) on a pipe nobody writes; the one named by argv[1] ("read",
 * "sleep" or "epoll") is the main thread, which the injector stops for its
 * calls. Each sets errno to 777 before its call and reports, when the call
 * ended, what it returned, errno, and whether it lasted its full length; a
 * fourth thread takes SIGUSR1 (the others block it), counting them in the
 * program's own handler. Prints "ready PID" first and "signals N" last.
 * Exit 0. The output is the same attached to or not (no timings in it). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_signals;
static char g_out[3][256];

static void on_usr1(int sig)
{
    (void)sig;
    g_signals++;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *do_read(void *arg)
{
    char buf[64];
    errno = 777;
    ssize_t n = read(0, buf, sizeof buf - 1);
    int e = errno;
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    snprintf(g_out[0], sizeof g_out[0], "read: returned %zd (%s), errno %d", n, buf, e);
    return arg;
}

static void *do_sleep(void *arg)
{
    struct timespec ts = {1, 500000000};
    double t0 = now_s();
    errno = 777;
    int r = nanosleep(&ts, NULL);
    int e = errno;
    snprintf(g_out[1], sizeof g_out[1], "nanosleep: returned %d, errno %d, full length %s", r, e,
             now_s() - t0 >= 1.5 ? "yes" : "no");
    return arg;
}

static void *do_epoll(void *arg)
{
    int p[2], ep = epoll_create1(EPOLL_CLOEXEC);
    if (pipe(p) != 0 || ep < 0)
        return arg;
    struct epoll_event ev = {.events = EPOLLIN}, got;
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    double t0 = now_s();
    errno = 777;
    int r = epoll_wait(ep, &got, 1, 2000);
    int e = errno;
    snprintf(g_out[2], sizeof g_out[2], "epoll_wait: returned %d, errno %d, full length %s", r, e,
             now_s() - t0 >= 2.0 ? "yes" : "no");
    return arg;
}

static void *signals(void *arg)
{
    for (;;)
        pause();
    return arg;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "read";
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_t sig_thread;
    pthread_create(&sig_thread, NULL, signals, NULL); /* the one thread that takes SIGUSR1 */
    pthread_sigmask(SIG_BLOCK, &usr1, &old);
    void *(*fn[3])(void *) = {do_read, do_sleep, do_epoll};
    int self = strcmp(mode, "sleep") == 0 ? 1 : strcmp(mode, "epoll") == 0 ? 2 : 0;
    pthread_t t[3];
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    for (int i = 0; i < 3; i++)
        if (i != self)
            pthread_create(&t[i], NULL, fn[i], NULL);
    fn[self](NULL);
    for (int i = 0; i < 3; i++)
        if (i != self)
            pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++)
        printf("%s\n", g_out[i]);
    printf("signals %d\n", (int)g_signals);
    return 0;
}
