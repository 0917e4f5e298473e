/* batch.c — group commit between the ingest handlers and the store.
 *
 * Every ingest request decomposes its profile on its own thread, then hands
 * it to hs_batcher_submit, which queues it and sleeps. One writer thread
 * takes what is queued, stores it with a single hs_store_put — one
 * transaction, one fsync for the whole batch — and then wakes each
 * submitter with its own result. Requests announce themselves when they
 * start decoding (hs_batcher_expect): the writer waits for the announced
 * ones (at most max_wait_ms, at most max_batch profiles) and commits at
 * once when none is coming, so a lone upload does not wait for company. A request is therefore answered only once its profile is durable,
 * and N concurrent uploads cost one commit instead of N.
 *
 * Per-profile results: the store's put says which profiles it skipped as
 * duplicates (id already stored, or repeating an earlier one of the batch;
 * hs_store_put_marked), inside the same transaction, so nothing is asked
 * beforehand. A put that
 * fails with an ordinary error (-1) is retried one request at a time, so one
 * bad profile fails only its own request; HS_STORE_UNAVAILABLE fails the
 * batch (the handlers answer 503 and clients retry).
 *
 * The profiles of one request (a Pyroscope upload may carry two types) are
 * always in the same put: they are stored together or not at all.
 *
 * The batcher also owns the stack memo (hs_stack_memo) that every ingest
 * thread's decomposition shares: it lives as long as the ingest pipeline.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server.h"

typedef struct hs_batch_req {
    const hs_store_profile *const *profiles;
    size_t n;
    int *results; /* per profile: 0 stored, 1 duplicate */
    int rc;       /* 0, -1 or HS_STORE_UNAVAILABLE */
    char *err;
    size_t errlen;
    bool done;
    pthread_cond_t cv;
    struct hs_batch_req *next;
} hs_batch_req;

struct hs_batcher {
    hs_store *st;
    size_t max_batch;
    int max_wait_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* the writer waits here for requests */
    hs_batch_req *head, *tail;
    size_t queued; /* profiles in the queue */
    long expected; /* requests announced, not yet submitted */
    bool stopping;
    pthread_t thread;
    hs_stack_memo *memo; /* shared by every ingest thread's decompositions */
};

static void hs_req_fail(hs_batch_req *r, int rc, const char *msg)
{
    r->rc = rc;
    snprintf(r->err, r->errlen, "%s", msg);
}

/* Store the requests r[0..n) in one put; fill their rc and results. */
static void hs_batch_put(hs_store *st, hs_batch_req *const *r, size_t n)
{
    char err[256] = "";
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += r[i]->n;
        memset(r[i]->results, 0, r[i]->n * sizeof *r[i]->results);
        r[i]->rc = 0;
    }
    const hs_store_profile **put = malloc((total ? total : 1) * sizeof *put);
    unsigned char *dup = malloc(total ? total : 1);
    if (!put || !dup) {
        free(put);
        free(dup);
        for (size_t i = 0; i < n; i++)
            hs_req_fail(r[i], -1, "out of memory");
        return;
    }
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < r[i]->n; j++)
            put[np++] = r[i]->profiles[j];
    int rc = np ? hs_store_put_marked(st, put, np, dup, NULL, err, sizeof err) : 0;
    if (rc == 0) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < r[i]->n; j++)
                r[i]->results[j] = dup[k++];
    }
    free(put);
    free(dup);
    if (rc == 0)
        return;
    if (rc == -1 && n > 1) {
        /* Isolate the request the store refused: each in a put of its own. */
        for (size_t i = 0; i < n; i++)
            hs_batch_put(st, &r[i], 1);
        return;
    }
    for (size_t i = 0; i < n; i++)
        hs_req_fail(r[i], rc == HS_STORE_UNAVAILABLE ? HS_STORE_UNAVAILABLE : -1, err[0] ? err : "store failed");
}

static void hs_deadline(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *hs_batch_writer(void *arg)
{
    hs_batcher *b = arg;
    size_t cap = 0;
    hs_batch_req **taken = NULL;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->head && !b->stopping)
            pthread_cond_wait(&b->cv_work, &b->mu);
        if (!b->head)
            break; /* stopping and drained */
        if (b->max_wait_ms > 0 && b->queued < b->max_batch && b->expected > 0 && !b->stopping) {
            struct timespec until;
            hs_deadline(&until, b->max_wait_ms);
            while (b->queued < b->max_batch && b->expected > 0 && !b->stopping)
                if (pthread_cond_timedwait(&b->cv_work, &b->mu, &until) == ETIMEDOUT)
                    break;
        }
        /* Take whole requests, up to max_batch profiles (at least one request). */
        size_t n = 0, profiles = 0;
        while (b->head && (n == 0 || profiles + b->head->n <= b->max_batch)) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                hs_batch_req **t = realloc(taken, nc * sizeof *t);
                if (!t)
                    break;
                taken = t;
                cap = nc;
            }
            hs_batch_req *r = b->head;
            b->head = r->next;
            if (!b->head)
                b->tail = NULL;
            b->queued -= r->n;
            profiles += r->n;
            taken[n++] = r;
        }
        if (n == 0) { /* out of memory for the list: fail the first request */
            hs_batch_req *r = b->head;
            b->head = r->next;
            if (!b->head)
                b->tail = NULL;
            b->queued -= r->n;
            hs_req_fail(r, -1, "out of memory");
            r->done = true;
            pthread_cond_signal(&r->cv);
            continue;
        }
        pthread_mutex_unlock(&b->mu);
        hs_batch_put(b->st, taken, n);
        pthread_mutex_lock(&b->mu);
        for (size_t i = 0; i < n; i++) {
            taken[i]->done = true;
            pthread_cond_signal(&taken[i]->cv);
        }
    }
    pthread_mutex_unlock(&b->mu);
    free(taken);
    return NULL;
}

hs_batcher *hs_batcher_new(hs_store *st, size_t max_batch, int max_wait_ms)
{
    hs_batcher *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->st = st;
    b->max_batch = max_batch ? max_batch : 1;
    b->max_wait_ms = max_wait_ms > 0 ? max_wait_ms : 0;
    if (!(b->memo = hs_stack_memo_new(HS_INGEST_MEMO_BYTES))) {
        free(b);
        return NULL;
    }
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) {
        hs_stack_memo_free(b->memo);
        free(b);
        return NULL;
    }
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_mutex_init(&b->mu, NULL) == 0;
    if (ok && pthread_cond_init(&b->cv_work, &ca) != 0) {
        pthread_mutex_destroy(&b->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    if (!ok) {
        hs_stack_memo_free(b->memo);
        free(b);
        return NULL;
    }
    if (pthread_create(&b->thread, NULL, hs_batch_writer, b) != 0) {
        pthread_cond_destroy(&b->cv_work);
        pthread_mutex_destroy(&b->mu);
        hs_stack_memo_free(b->memo);
        free(b);
        return NULL;
    }
    return b;
}

hs_stack_memo *hs_batcher_stack_memo(hs_batcher *b)
{
    return b->memo;
}

void hs_batcher_free(hs_batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    pthread_cond_signal(&b->cv_work);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_cond_destroy(&b->cv_work);
    pthread_mutex_destroy(&b->mu);
    hs_stack_memo_free(b->memo);
    free(b);
}

int hs_batcher_submit_many(hs_batcher *b, const hs_store_profile *const *p, size_t n, int *results,
                           char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    hs_batch_req r = {.profiles = p, .n = n, .results = results, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    if (pthread_cond_init(&r.cv, NULL) != 0) {
        snprintf(err, errlen, "out of resources");
        return -1;
    }
    pthread_mutex_lock(&b->mu);
    if (b->stopping) {
        pthread_mutex_unlock(&b->mu);
        pthread_cond_destroy(&r.cv);
        snprintf(err, errlen, "the server is shutting down");
        return HS_STORE_UNAVAILABLE;
    }
    bool was_empty = !b->head;
    if (b->tail)
        b->tail->next = &r;
    else
        b->head = &r;
    b->tail = &r;
    b->queued += n;
    if (b->expected > 0)
        b->expected--;
    /* wake the writer: the first of a batch, a full batch, or the last one
     * it was waiting for */
    if (was_empty || b->queued >= b->max_batch || b->expected == 0)
        pthread_cond_signal(&b->cv_work);
    while (!r.done)
        pthread_cond_wait(&r.cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    pthread_cond_destroy(&r.cv);
    return r.rc;
}

void hs_batcher_expect(hs_batcher *b, int n)
{
    pthread_mutex_lock(&b->mu);
    b->expected += n;
    if (b->expected < 0)
        b->expected = 0;
    if (b->expected == 0)
        pthread_cond_signal(&b->cv_work); /* nothing more is coming */
    pthread_mutex_unlock(&b->mu);
}

int hs_batcher_submit(hs_batcher *b, const hs_store_profile *p, char *err, size_t errlen)
{
    int result = 0;
    int rc = hs_batcher_submit_many(b, &p, 1, &result, err, errlen);
    return rc != 0 ? rc : result;
}
