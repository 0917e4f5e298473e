/* spin_until_signal.c — burns CPU until a signal ends it, for the tests of
 * profiles written on SIGINT/SIGTERM (tests/integration/record_signals.sh).
 *   spin_until_signal plain   default action: the signal ends the process
 *   spin_until_signal own     its own SIGINT handler: prints "handled", exits 0
 *   spin_until_signal child   forks a spinning child, ends it with SIGTERM
 *                             after 0.3 s, prints how the child ended, then
 *                             spins 0.3 s more and exits 0
 * Prints "ready" once spinning. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t got;

static void on_int(int sig)
{
    (void)sig;
    got = 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spin until `got` is set or `seconds` have passed (0: forever). */
__attribute__((noinline)) static void spin_for(double seconds)
{
    double end = now() + seconds;
    unsigned long x = 1;
    while (!got && (seconds == 0 || now() < end)) {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    if (strcmp(mode, "own") == 0)
        signal(SIGINT, on_int);
    if (strcmp(mode, "child") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            spin_for(0);
            _exit(0);
        }
        spin_for(0.3);
        kill(pid, SIGTERM);
        int st;
        waitpid(pid, &st, 0);
        printf("child %s %d\n", WIFSIGNALED(st) ? "signaled" : "exited",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        spin_for(0.3);
        return 0;
    }
    printf("ready\n");
    fflush(stdout);
    spin_for(0);
    if (got)
        printf("handled\n");
    return 0;
}
