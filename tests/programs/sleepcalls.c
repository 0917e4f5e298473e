/* sleepcalls.c — five threads that make short sleeping system calls
 * (nanosleep, select, sem_timedwait: 16 000 of 100 us each; poll,
 * epoll_wait: 6 000 of 1 ms, their unit; 60 000 in all) and count those that fail with EINTR
 * (tests/integration/agent_wall_eintr.sh). SA_RESTART does not restart any
 * of these, so a profiler that signals a thread while it sleeps shows up
 * here. Prints "calls=60000 eintr=N" and one "KIND eintr=N" line per call;
 * exit 0 when no call failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

static const int calls[] = {16000, 6000, 16000, 6000, 16000};
static const char *kinds[] = {"nanosleep", "poll", "select", "epoll_wait", "sem_timedwait"};
static int eintr[5], other[5];

static void *run(void *arg)
{
    int k = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof name, "w-%.10s", kinds[k]);
    pthread_setname_np(pthread_self(), name);
    int ep = epoll_create1(0);
    sem_t sem;
    sem_init(&sem, 0, 0);
    for (int i = 0; i < calls[k]; i++) {
        int r = 0;
        struct timespec ts = {0, 100000};
        struct timeval tv = {0, 100};
        struct epoll_event ev;
        switch (k) {
        case 0: r = nanosleep(&ts, NULL); break;
        case 1: r = poll(NULL, 0, 1); break;
        case 2: r = select(0, NULL, NULL, NULL, &tv); break;
        case 3: r = epoll_wait(ep, &ev, 1, 1); break;
        default: {
            struct timespec abs;
            clock_gettime(CLOCK_REALTIME, &abs);
            abs.tv_nsec += 100000;
            if (abs.tv_nsec >= 1000000000) {
                abs.tv_sec++;
                abs.tv_nsec -= 1000000000;
            }
            r = sem_timedwait(&sem, &abs);
            if (r != 0 && errno == ETIMEDOUT)
                r = 0;
        }
        }
        if (r < 0 && errno == EINTR)
            eintr[k]++;
        else if (r < 0)
            other[k]++;
    }
    return NULL;
}

int main(void)
{
    pthread_t t[5];
    for (long k = 0; k < 5; k++)
        pthread_create(&t[k], NULL, run, (void *)k);
    int total = 0, bad = 0, n = 0;
    for (int k = 0; k < 5; k++) {
        pthread_join(t[k], NULL);
        total += eintr[k];
        bad += other[k];
        n += calls[k];
    }
    printf("calls=%d eintr=%d other_errors=%d\n", n, total, bad);
    for (int k = 0; k < 5; k++)
        printf("%s eintr=%d\n", kinds[k], eintr[k]);
    return total == 0 && bad == 0 ? 0 : 1;
}
