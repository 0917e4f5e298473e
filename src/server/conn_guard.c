/* conn_guard.c — the deadline for a request's head. libmicrohttpd's idle
 * timeout restarts on every byte, so a client that drip-feeds its request
 * line and headers a byte at a time holds a connection (and its thread)
 * for as long as it likes; 256 such clients locked everyone out. The
 * guard knows every open connection (libmicrohttpd's connection
 * notifications) and when it last started waiting for a request head
 * (its opening, or the end of its previous request); once a second a
 * thread shuts down the socket of each connection whose head has not
 * arrived within the deadline. A connection in a request (head received,
 * body arriving or being answered) is left to the idle timeout. */
#include "base/clock.h"
#include "server/server.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

typedef struct hs_guarded {
    int fd;
    int64_t since_ns;     /* waiting for a head since */
    bool in_request, cut;
    struct hs_guarded *prev, *next;
} hs_guarded;

struct hs_conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stopping;
    int64_t deadline_ns;
    hs_guarded *head;
    unsigned long cut_total;
};

static void *guard_loop(void *arg)
{
    hs_conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&g->cv, &g->mu, &until);
        int64_t now = hs_monotonic_ns();
        /* under the lock: a connection's CLOSED notification, which comes
         * before its socket is closed, waits, so fd is still its own */
        for (hs_guarded *e = g->head; e; e = e->next)
            if (!e->in_request && !e->cut && now - e->since_ns > g->deadline_ns) {
                shutdown(e->fd, SHUT_RDWR);
                e->cut = true;
                g->cut_total++;
            }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

hs_conn_guard *hs_conn_guard_start(int head_deadline_s)
{
    hs_conn_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->deadline_ns = (int64_t)head_deadline_s * 1000000000;
    if (pthread_create(&g->thread, NULL, guard_loop, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g);
        return NULL;
    }
    return g;
}

void hs_conn_guard_stop(hs_conn_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->head) {
        hs_guarded *e = g->head;
        g->head = e->next;
        free(e);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

void *hs_conn_guard_open(hs_conn_guard *g, int fd)
{
    hs_guarded *e = calloc(1, sizeof *e);
    if (!e)
        return NULL; /* unguarded: the idle timeout still applies */
    e->fd = fd;
    e->since_ns = hs_monotonic_ns();
    pthread_mutex_lock(&g->mu);
    e->next = g->head;
    if (g->head)
        g->head->prev = e;
    g->head = e;
    pthread_mutex_unlock(&g->mu);
    return e;
}

void hs_conn_guard_request(hs_conn_guard *g, void *entry, bool in_request)
{
    hs_guarded *e = entry;
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    e->in_request = in_request;
    if (!in_request)
        e->since_ns = hs_monotonic_ns();
    pthread_mutex_unlock(&g->mu);
}

void hs_conn_guard_close(hs_conn_guard *g, void *entry)
{
    hs_guarded *e = entry;
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    pthread_mutex_unlock(&g->mu);
    free(e);
}

unsigned long hs_conn_guard_cut(hs_conn_guard *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned long n = g->cut_total;
    pthread_mutex_unlock(&g->mu);
    return n;
}
