/* runstat.c — the measuring helper of bench/cpu_overhead.sh.
 *
 *   runstat OUT -- CMD [ARGS...]
 *       Runs CMD (stdin/stdout/stderr passed through), waits for it, and
 *       writes one line to OUT: "WALL_S USER_S SYS_S STATUS" — wall time, and
 *       the CPU time of CMD and every descendant it waited for (getrusage
 *       RUSAGE_CHILDREN), in seconds with microsecond resolution. Exits with
 *       CMD's status. (/usr/bin/time would do, but it has 10 ms resolution
 *       and is not always installed.)
 *
 *   runstat --gperf-samples FILE
 *       Prints "SAMPLES PERIOD_US" of a gperftools CPU profile (legacy
 *       binary format: a header of five words 0, 3, 0, period, 0, then
 *       records count, depth, pc... up to the trailer 0, 1, 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(const char *out, char **cmd)
{
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("runstat: fork");
        return 125;
    }
    if (pid == 0) {
        execvp(cmd[0], cmd);
        fprintf(stderr, "runstat: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            perror("runstat: waitpid");
            return 125;
        }
    }
    double wall = now_s() - t0;
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0) {
        perror("runstat: getrusage");
        return 125;
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    FILE *f = fopen(out, "w");
    if (!f) {
        fprintf(stderr, "runstat: cannot write %s: %s\n", out, strerror(errno));
        return 125;
    }
    fprintf(f, "%.6f %.6f %.6f %d\n", wall, tv_s(ru.ru_utime), tv_s(ru.ru_stime), code);
    if (fclose(f) != 0) {
        fprintf(stderr, "runstat: cannot write %s: %s\n", out, strerror(errno));
        return 125;
    }
    return code;
}

static int gperf_samples(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "runstat: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint64_t hdr[5];
    if (fread(hdr, sizeof hdr[0], 5, f) != 5 || hdr[0] != 0 || hdr[1] != 3) {
        fprintf(stderr, "runstat: %s: not a gperftools CPU profile\n", path);
        fclose(f);
        return 1;
    }
    uint64_t total = 0, rec[2];
    for (;;) {
        if (fread(rec, sizeof rec[0], 2, f) != 2) {
            fprintf(stderr, "runstat: %s: truncated profile\n", path);
            fclose(f);
            return 1;
        }
        if (rec[0] == 0 && rec[1] == 1) /* trailer */
            break;
        if (rec[1] > 4096 || fseek(f, (long)(rec[1] * sizeof(uint64_t)), SEEK_CUR) != 0) {
            fprintf(stderr, "runstat: %s: corrupt record\n", path);
            fclose(f);
            return 1;
        }
        total += rec[0];
    }
    fclose(f);
    printf("%llu %llu\n", (unsigned long long)total, (unsigned long long)hdr[3]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--gperf-samples") == 0)
        return gperf_samples(argv[2]);
    if (argc >= 4 && strcmp(argv[2], "--") == 0)
        return run(argv[1], argv + 3);
    fprintf(stderr, "usage: runstat OUT -- CMD [ARGS...]\n       runstat --gperf-samples FILE\n");
    return 2;
}
