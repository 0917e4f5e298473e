/* ender.c — processes that end without exit() after computing for 300 ms
 * of CPU in ender_work (tests/integration/agent_endings.sh):
 *   ender fork_exit   a forked child computes, then _exit(0); the parent
 *                     waits and returns 0
 *   ender _exit       computes, then _exit(3)
 *   ender segv        computes, then writes through a null pointer
 *   ender abort       computes, then abort()
 *   ender bus         computes, then touches a page of a mapped empty file
 *   ender exec        computes, then execl("/bin/true")
 *   ender exec_fail   computes, execv() of a missing file fails, computes
 *                     300 ms more in ender_more, returns 0
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

HS_BURN(ender_work, CLOCK_PROCESS_CPUTIME_ID)
HS_BURN(ender_more, CLOCK_PROCESS_CPUTIME_ID)

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (strcmp(m, "fork_exit") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            ender_work(300);
            _exit(0);
        }
        int st;
        return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    }
    ender_work(300);
    if (strcmp(m, "_exit") == 0)
        _exit(3);
    if (strcmp(m, "exec") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        return 2;
    }
    if (strcmp(m, "exec_fail") == 0) {
        char *args[] = {"missing", NULL};
        if (execv("/nonexistent/missing", args) == 0)
            return 2;
        ender_more(300);
        return 0;
    }
    if (strcmp(m, "segv") == 0)
        *(volatile int *)(uintptr_t)(argc * 0) = 1;
    if (strcmp(m, "abort") == 0)
        abort();
    if (strcmp(m, "bus") == 0) {
        char path[] = "/tmp/ender.XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            return 2;
        p[0] = 1;
    }
    return 2;
}
