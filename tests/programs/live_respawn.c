/* live_respawn.c — a pid reused under `record -p` (live_pid_reuse.sh):
 * live_respawn A B SECS waits for SIGUSR1 (sent once the profiler is
 * attached), runs child A (argv: A SECS) pinned to CPU 1, reaps it, then runs
 * child B with the very pid A had (clone3 with set_tid, needs root) pinned
 * to CPU 0, reaps it and exits. Both children are its own, so an inherited
 * perf event samples both: the samples after A's exit are another
 * process's, never A's. Prints "A PID" and "B PID" lines. */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t spawn(const char *prog, const char *secs, int cpu, pid_t want)
{
    pid_t pid;
    if (want) {
        struct clone_args ca;
        memset(&ca, 0, sizeof ca);
        ca.exit_signal = SIGCHLD;
        ca.set_tid = (uint64_t)(uintptr_t)&want;
        ca.set_tid_size = 1;
        pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    } else {
        pid = fork();
    }
    if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set); /* best effort: one CPU only */
        execl(prog, prog, secs, (char *)NULL);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: live_respawn A B SECS\n");
        return 2;
    }
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    printf("ready\n");
    fflush(stdout);
    int sig;
    sigwait(&usr1, &sig);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    pid_t a = spawn(argv[1], argv[3], 1, 0);
    if (a < 0)
        return 1;
    printf("A %d\n", a);
    fflush(stdout);
    waitpid(a, NULL, 0);
    pid_t b = spawn(argv[2], argv[3], 0, a);
    if (b < 0) {
        perror("clone3 with set_tid");
        return 1;
    }
    printf("B %d\n", b);
    fflush(stdout);
    waitpid(b, NULL, 0);
    return 0;
}
