/* contention.c — THREADS threads contend on one lock; each measures its own
 * wait around the lock call with clock_gettime, and the program prints the
 * total, for the lock profile test (tests/integration/services_lock.sh).
 *   contention mutex|timedlock|rwlock THREADS ITERS
 * mutex: pthread_mutex_lock; timedlock: pthread_mutex_timedlock (deadline
 * far away); rwlock: even threads pthread_rwlock_wrlock, odd threads
 * pthread_rwlock_rdlock.
 * Each iteration takes the lock in wait_for_lock (the waiting call site),
 * holds it for about 200 us in critical_section (asleep, so contention does
 * not need CPUs), releases it, and computes briefly in outside_work.
 * Output: waited_ns=TOTAL locks=N max_ns=LONGEST_SINGLE_WAIT
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
enum { MUTEX, TIMEDLOCK, RWLOCK };
static int kind;
static long iters;
static atomic_llong waited_ns, locks, max_ns;
static volatile unsigned long sink;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The waiting call site: the lock profile's delay must land here. */
__attribute__((noinline)) void wait_for_lock(int reader)
{
    long long t0 = now_ns();
    if (kind == RWLOCK && reader) {
        pthread_rwlock_rdlock(&rw);
    } else if (kind == RWLOCK) {
        pthread_rwlock_wrlock(&rw);
    } else if (kind == TIMEDLOCK) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 60;
        if (pthread_mutex_timedlock(&mu, &deadline) != 0)
            abort();
    } else {
        pthread_mutex_lock(&mu);
    }
    long long d = now_ns() - t0;
    atomic_fetch_add(&waited_ns, d);
    atomic_fetch_add(&locks, 1);
    long long m = atomic_load(&max_ns);
    while (d > m && !atomic_compare_exchange_weak(&max_ns, &m, d))
        ;
}

__attribute__((noinline)) void critical_section(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void outside_work(void)
{
    unsigned long x = 1;
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

static void *run(void *arg)
{
    int reader = (int)(long)arg % 2;
    pthread_setname_np(pthread_self(), "contender");
    for (long i = 0; i < iters; i++) {
        wait_for_lock(reader);
        critical_section();
        if (kind == RWLOCK)
            pthread_rwlock_unlock(&rw);
        else
            pthread_mutex_unlock(&mu);
        outside_work();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static const char *kinds[] = {"mutex", "timedlock", "rwlock"};
    kind = -1;
    for (int k = 0; argc == 4 && k < 3; k++)
        if (strcmp(argv[1], kinds[k]) == 0)
            kind = k;
    if (kind < 0) {
        fprintf(stderr, "usage: contention mutex|timedlock|rwlock THREADS ITERS\n");
        return 2;
    }
    int n = atoi(argv[2]);
    iters = atol(argv[3]);
    if (n < 1 || n > 256 || iters < 1)
        return 2;
    pthread_t t[256];
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, run, (void *)(long)i) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("waited_ns=%lld locks=%lld max_ns=%lld\n", (long long)waited_ns,
           (long long)locks, (long long)max_ns);
    return 0;
}
