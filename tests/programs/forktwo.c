/* forktwo.c — forks two children that burn CPU in different functions while
 * the parent burns in a third, for the child-process test
 * (tests/integration/services_children.sh).
 *   forktwo CPU_MS
 * child 1 (fork only) burns in child_one_burn; child 2 forks and execs this
 * program again ("forktwo --exec-child CPU_MS"), which burns in
 * child_two_burn; the parent burns in parent_burn, then waits for both.
 * Each process prints "NAME pid=PID" (parent, child1, child2) and exits
 * normally; the parent exits 1 if a child failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

/* Spin for `ms` of this process's CPU time. */
HS_BURN(parent_burn, CLOCK_PROCESS_CPUTIME_ID)
HS_BURN(child_one_burn, CLOCK_PROCESS_CPUTIME_ID)
HS_BURN(child_two_burn, CLOCK_PROCESS_CPUTIME_ID)

static void say(const char *who)
{
    printf("%s pid=%d\n", who, (int)getpid());
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--exec-child") == 0) {
        say("child2");
        child_two_burn(atof(argv[2]));
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: forktwo CPU_MS\n");
        return 2;
    }
    double ms = atof(argv[1]);
    say("parent");
    pid_t c1 = fork();
    if (c1 < 0)
        return 1;
    if (c1 == 0) {
        say("child1");
        child_one_burn(ms);
        exit(0);
    }
    pid_t c2 = fork();
    if (c2 < 0)
        return 1;
    if (c2 == 0) {
        execl("/proc/self/exe", "forktwo", "--exec-child", argv[1], (char *)NULL);
        perror("exec");
        _exit(127);
    }
    parent_burn(ms);
    int st1, st2;
    if (waitpid(c1, &st1, 0) < 0 || waitpid(c2, &st2, 0) < 0)
        return 1;
    return WIFEXITED(st1) && WEXITSTATUS(st1) == 0 && WIFEXITED(st2) &&
                   WEXITSTATUS(st2) == 0
               ? 0
               : 1;
}
