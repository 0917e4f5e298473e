/* fork_early.c — forks N children one after another from the first moment
 * of main (while the agent thread may still be loading the symbolizer:
 * agent_symlib.sh); each ends with _exit(0) at once. Exits 0 if every
 * child did, else 1.
 *   fork_early N */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50, bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0)
            _exit(0);
        int st;
        bad |= waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}
