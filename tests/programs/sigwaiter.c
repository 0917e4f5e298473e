/* sigwaiter.c — a program that uses SIGRTMAX-3 itself, the agent's default
 * sampling signal (tests/integration/agent_signal.sh).
 *   sigwaiter wait     block it (and only it), start two busy threads, then
 *                      100 times sigqueue() it to the process and take it
 *                      with sigtimedwait (0.2 s timeout each);
 *   sigwaiter handler  install an SA_SIGINFO handler for it, start the busy
 *                      threads, sigqueue() it 100 times.
 * Prints "got=N foreign=N": N signals of ours received (with the value
 * sent), and signals received that the program did not send (such as a
 * profiler's timer signals). Exit 0 when got=100 and foreign=0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

static _Atomic int stop, got, foreign;
HS_BURN(busy_work, CLOCK_THREAD_CPUTIME_ID)

static void *busy(void *arg)
{
    (void)arg;
    while (!stop)
        busy_work(20);
    return NULL;
}

static void on_sig(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_QUEUE && si->si_pid == getpid())
        got++;
    else
        foreign++;
}

int main(int argc, char **argv)
{
    int sig = SIGRTMAX - 3, wait_mode = argc > 1 && strcmp(argv[1], "wait") == 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    if (wait_mode) {
        if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
            return 2;
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sig;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) != 0)
            return 2;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, busy, NULL);
    for (int i = 0; i < 100; i++) {
        union sigval v = {.sival_int = i};
        if (sigqueue(getpid(), sig, v) != 0)
            return 2;
        if (wait_mode) {
            struct timespec to = {0, 200000000};
            siginfo_t si;
            int r;
            while ((r = sigtimedwait(&set, &si, &to)) == sig) {
                if (si.si_code == SI_QUEUE && si.si_value.sival_int == i) {
                    got++;
                    break;
                }
                foreign++;
            }
        } else {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        busy_work(2);
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("got=%d foreign=%d\n", got, foreign);
    return got == 100 && foreign == 0 ? 0 : 1;
}
