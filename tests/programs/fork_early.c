/* fork_early.c — forks N children one after another from the first moment
 * of main, while the agent's thread is starting (agent_symlib.sh: the
 * symbolizer was once loaded on that thread, and a fork during the load
 * broke children); each ends with _exit(0) at once. Exits 0 if every child
 * did, else 1 with the reason on stderr.
 *   fork_early N */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50, bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "fork_early: fork: %s\n", strerror(errno));
            return 1;
        }
        if (p == 0)
            _exit(0);
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "fork_early: child %d: wait status %#x\n", i, st);
            bad = 1;
        }
    }
    return bad;
}
