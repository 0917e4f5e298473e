/* forker.c — forks children that compute and print, and one that execs
 * /bin/echo; prints the same bytes with or without a profiler; exits with
 * the status given on the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long work(unsigned long n)
{
    unsigned long x = n;
    for (unsigned long i = 0; i < 20000000ul; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

int main(int argc, char **argv)
{
    int status = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < 2; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0) {
            printf("child %d: %lu\n", i, work((unsigned long)i));
            return 0;
        }
        int st;
        waitpid(p, &st, 0);
        printf("child %d exited %d\n", i, WEXITSTATUS(st));
    }
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execl("/bin/echo", "echo", "exec'd", "echo", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    printf("parent: %lu\n", work(7));
    return status;
}
