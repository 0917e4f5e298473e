/* stress.c — a hostile host for the agent: waves of short-lived threads (some
 * blocking every signal, some leaving through pthread_exit), forks (children
 * that exit, one that execs), the program's own SIGPROF timer and SIGUSR1
 * storm, and an attempt to take over the agent's signal. Prints a checksum
 * that depends only on the work done, so output with and without a profiler
 * can be compared byte for byte.
 *   stress WAVES THREADS_PER_WAVE
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t g_prof_ticks, g_usr1;
static void on_prof(int s) { (void)s; g_prof_ticks++; }
static void on_usr1(int s) { (void)s; g_usr1++; }

static int cmp_u(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* Deterministic work: sort pseudo-random numbers, return a checksum. */
__attribute__((noinline)) static unsigned long stress_work(unsigned seed, int n)
{
    unsigned *v = malloc((size_t)n * sizeof *v);
    if (!v)
        abort();
    for (int i = 0; i < n; i++)
        v[i] = seed = seed * 1103515245u + 12345u;
    qsort(v, (size_t)n, sizeof *v, cmp_u);
    unsigned long sum = 0;
    for (int i = 0; i < n; i += 97)
        sum = sum * 31 + v[i];
    free(v);
    return sum;
}

typedef struct {
    int id;
    unsigned long result;
} job;

static void *worker(void *p)
{
    job *j = p;
    if (j->id % 3 == 0) { /* block everything, as daemons' workers do */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    }
    j->result = stress_work((unsigned)j->id, 20000 + 1000 * (j->id % 7));
    if (j->id % 4 == 1)
        pthread_exit(NULL);
    return NULL;
}

static void *usr1_storm(void *p)
{
    volatile int *stop = p;
    while (!*stop) {
        kill(getpid(), SIGUSR1);
        usleep(500);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int waves = argc > 1 ? atoi(argv[1]) : 10, per = argc > 2 ? atoi(argv[2]) : 16;
    signal(SIGPROF, on_prof);
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    struct itimerval it = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_PROF, &it, NULL);
    /* Try to take every real-time signal, as some programs do. */
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        signal(s, SIG_IGN);

    volatile int stop = 0;
    pthread_t storm;
    pthread_create(&storm, NULL, usr1_storm, (void *)&stop);

    unsigned long total = 0;
    job *jobs = calloc((size_t)per, sizeof *jobs);
    pthread_t *t = calloc((size_t)per, sizeof *t);
    if (!jobs || !t)
        return 1;
    for (int w = 0; w < waves; w++) {
        for (int i = 0; i < per; i++) {
            jobs[i].id = w * per + i;
            if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0)
                return 1;
        }
        for (int i = 0; i < per; i++) {
            pthread_join(t[i], NULL);
            total += jobs[i].result;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            if (w % 3 == 2) {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            exit((int)(stress_work((unsigned)w, 50000) % 100));
        }
        int st;
        waitpid(pid, &st, 0);
        total += (unsigned long)WEXITSTATUS(st);
    }
    stop = 1;
    pthread_join(storm, NULL);
    printf("checksum %lu\n", total);
    /* The program's own SIGPROF timer and handler kept working. */
    return g_prof_ticks > 0 && g_usr1 > 0 ? 0 : 3;
}
