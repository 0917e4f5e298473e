/* batch.c — group commit between the ingest handlers and the store.
 *
 * Every ingest request decomposes its profile on its own thread, then hands
 * it to hs_batcher_submit, which queues it and sleeps. A writer thread
 * takes what is queued, stores it with a single hs_store_put — one
 * transaction and fsync (SQLite), one INSERT per table (ClickHouse) for the
 * whole batch — and then wakes each submitter with its own result. A
 * request is therefore answered only once its profile is durable, and N
 * concurrent uploads cost one commit instead of N.
 *
 * How a batch forms (hs_store_batching; each backend has its defaults,
 * `hotspur serve --batch-*` overrides them): one writer at a time gathers.
 * It takes the batch once max_profiles are queued or wait_ms after the
 * batch's first upload was queued. Without linger it also takes it as soon
 * as no request is announced and no other put is in flight: requests
 * announce themselves when they start decoding (hs_batcher_expect), so a
 * lone upload does not wait for company. While another put is in flight
 * the store is busy anyway, so a batch grows until it holds min_parallel
 * profiles rather than compete with it in small pieces (ClickHouse: every
 * INSERT makes new parts, and ClickHouse's work per profile falls as parts
 * grow). With linger it always waits the whole window. Up to `writers`
 * puts are in flight at once: a batch of min_parallel profiles, or one
 * whose window is over, goes beside the puts in flight, so a slow or
 * multi-core store gets several large INSERTs at once; when every writer is busy,
 * uploads queue and the next free writer takes them at once (their window
 * is over), so under load batches grow by themselves.
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
    struct timespec queued_at; /* CLOCK_MONOTONIC */
    pthread_cond_t cv;
    struct hs_batch_req *next;
} hs_batch_req;

struct hs_batcher {
    hs_store *st;
    hs_store_batching cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv_idle; /* idle writers wait here for a batch to start */
    pthread_cond_t cv_fill; /* the gathering writer waits here for more */
    hs_batch_req *head, *tail;
    size_t queued; /* profiles in the queue */
    long expected; /* requests announced, not yet submitted */
    bool gathering; /* a writer is forming the next batch */
    int putting;    /* writers waiting for the store */
    bool stopping;
    pthread_t *threads;
    int n_threads;
    hs_stack_memo *memo; /* shared by every ingest thread's decompositions */
    hs_names *names;     /* names frames before decomposition (set once at start) */
    /* the last put's outcome, for /healthz: a store that cannot write
     * (down, full) is "not accepting writes" until a put succeeds */
    int write_rc;
    char write_err[640];
};

static void hs_req_fail(hs_batch_req *r, int rc, const char *msg)
{
    r->rc = rc;
    snprintf(r->err, r->errlen, "%s", msg);
}

/* Store the requests r[0..n) in one put; fill their rc and results.
 * Returns the put's code: 0, or what made the store write nothing. */
static int hs_batch_put(hs_store *st, hs_batch_req *const *r, size_t n)
{
    char err[640] = "";
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
        return -1;
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
        return 0;
    if ((rc == -1 || rc == HS_STORE_REFUSED) && n > 1) {
        /* Isolate the request the store refused: each in a put of its own. */
        int worst = 0;
        for (size_t i = 0; i < n; i++) {
            int one = hs_batch_put(st, &r[i], 1);
            if (one == HS_STORE_UNAVAILABLE || one == HS_STORE_FULL)
                worst = one;
        }
        return worst;
    }
    for (size_t i = 0; i < n; i++)
        hs_req_fail(r[i], rc, err[0] ? err : "store failed");
    return rc == HS_STORE_REFUSED ? 0 : rc; /* a refused profile says nothing of the store */
}

/* ts + ms */
static struct timespec hs_after(struct timespec ts, int ms)
{
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Without linger, may the batch go before its window is over? When no
 * request is announced and either no other put is in flight or the batch
 * holds min_parallel profiles: while a put is in flight, the store is busy
 * anyway, and a small batch beside it would only cost a part of its own. */
static bool hs_batch_may_go(const hs_batcher *b)
{
    return !b->cfg.linger && b->expected == 0 && (b->putting == 0 || b->queued >= b->cfg.min_parallel);
}

/* Wait (b->mu held, b->gathering ours) until the batch at the head of the
 * queue should go: max_profiles queued, its window over, stopping, or
 * hs_batch_may_go. */
static void hs_batch_gather(hs_batcher *b)
{
    if (b->cfg.wait_ms <= 0)
        return;
    struct timespec until = hs_after(b->head->queued_at, b->cfg.wait_ms);
    while (b->queued < b->cfg.max_profiles && !b->stopping && !hs_batch_may_go(b))
        if (pthread_cond_timedwait(&b->cv_fill, &b->mu, &until) == ETIMEDOUT)
            break;
}

static void *hs_batch_writer(void *arg)
{
    hs_batcher *b = arg;
    /* every request has a profile: a batch is at most max_profiles requests */
    hs_batch_req **taken = malloc(b->cfg.max_profiles * sizeof *taken);
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (b->gathering || (!b->head && !b->stopping))
            pthread_cond_wait(&b->cv_idle, &b->mu);
        if (!b->head)
            break; /* stopping and drained */
        if (!taken) { /* out of memory at start: fail what comes, one by one */
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
        b->gathering = true;
        hs_batch_gather(b);
        /* Take whole requests, up to max_profiles (at least one request). */
        size_t n = 0, profiles = 0;
        while (b->head && (n == 0 || profiles + b->head->n <= b->cfg.max_profiles)) {
            hs_batch_req *r = b->head;
            b->head = r->next;
            if (!b->head)
                b->tail = NULL;
            b->queued -= r->n;
            profiles += r->n;
            taken[n++] = r;
        }
        b->gathering = false;
        if (b->stopping) /* every writer drains what is left, then ends */
            pthread_cond_broadcast(&b->cv_idle);
        else if (b->head) /* the rest is the next batch: another writer's */
            pthread_cond_signal(&b->cv_idle);
        b->putting++;
        pthread_mutex_unlock(&b->mu);
        int put_rc = hs_batch_put(b->st, taken, n);
        pthread_mutex_lock(&b->mu);
        b->write_rc = put_rc;
        if (put_rc)
            snprintf(b->write_err, sizeof b->write_err, "%s", taken[0]->err);
        if (--b->putting == 0 && b->gathering && hs_batch_may_go(b))
            pthread_cond_signal(&b->cv_fill);
        for (size_t i = 0; i < n; i++) {
            taken[i]->done = true;
            pthread_cond_signal(&taken[i]->cv);
        }
    }
    pthread_mutex_unlock(&b->mu);
    free(taken);
    return NULL;
}

static void hs_batcher_destroy(hs_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    pthread_cond_broadcast(&b->cv_idle);
    pthread_cond_broadcast(&b->cv_fill);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < b->n_threads; i++)
        pthread_join(b->threads[i], NULL);
    pthread_cond_destroy(&b->cv_idle);
    pthread_cond_destroy(&b->cv_fill);
    pthread_mutex_destroy(&b->mu);
    hs_stack_memo_free(b->memo);
    free(b->threads);
    free(b);
}

hs_batcher *hs_batcher_new(hs_store *st, const hs_store_batching *cfg)
{
    hs_batcher *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->st = st;
    b->cfg = *cfg;
    if (b->cfg.max_profiles == 0)
        b->cfg.max_profiles = 1;
    if (b->cfg.writers < 1)
        b->cfg.writers = 1;
    if (b->cfg.min_parallel == 0 || b->cfg.min_parallel > b->cfg.max_profiles)
        b->cfg.min_parallel = b->cfg.max_profiles; /* never beside another put before the window is over */
    if (!(b->memo = hs_stack_memo_new(HS_INGEST_MEMO_BYTES)) ||
        !(b->threads = calloc((size_t)b->cfg.writers, sizeof *b->threads))) {
        hs_stack_memo_free(b->memo);
        free(b);
        return NULL;
    }
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) {
        hs_stack_memo_free(b->memo);
        free(b->threads);
        free(b);
        return NULL;
    }
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_mutex_init(&b->mu, NULL) == 0;
    if (ok && pthread_cond_init(&b->cv_fill, &ca) != 0) {
        pthread_mutex_destroy(&b->mu);
        ok = 0;
    }
    if (ok && pthread_cond_init(&b->cv_idle, NULL) != 0) {
        pthread_cond_destroy(&b->cv_fill);
        pthread_mutex_destroy(&b->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    if (!ok) {
        hs_stack_memo_free(b->memo);
        free(b->threads);
        free(b);
        return NULL;
    }
    for (; b->n_threads < b->cfg.writers; b->n_threads++)
        if (pthread_create(&b->threads[b->n_threads], NULL, hs_batch_writer, b) != 0)
            break;
    if (b->n_threads == 0) {
        hs_batcher_destroy(b);
        return NULL;
    }
    return b;
}

void hs_batcher_set_names(hs_batcher *b, hs_names *n)
{
    b->names = n;
}

hs_names *hs_batcher_names(hs_batcher *b)
{
    return b->names;
}

hs_stack_memo *hs_batcher_stack_memo(hs_batcher *b)
{
    return b->memo;
}

size_t hs_batcher_queued(hs_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    size_t n = b->queued;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void hs_batcher_free(hs_batcher *b)
{
    if (b)
        hs_batcher_destroy(b);
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
    clock_gettime(CLOCK_MONOTONIC, &r.queued_at);
    pthread_mutex_lock(&b->mu);
    if (b->stopping) {
        pthread_mutex_unlock(&b->mu);
        pthread_cond_destroy(&r.cv);
        snprintf(err, errlen, "the server is shutting down");
        return HS_STORE_UNAVAILABLE;
    }
    if (b->tail)
        b->tail->next = &r;
    else
        b->head = &r;
    b->tail = &r;
    b->queued += n;
    if (b->expected > 0)
        b->expected--;
    /* wake a writer: an idle one to start a batch, or the gathering one
     * when the batch is full or may go now */
    if (!b->gathering)
        pthread_cond_signal(&b->cv_idle);
    else if (b->queued >= b->cfg.max_profiles || hs_batch_may_go(b))
        pthread_cond_signal(&b->cv_fill);
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
    if (b->gathering && hs_batch_may_go(b))
        pthread_cond_signal(&b->cv_fill); /* nothing more is coming */
    pthread_mutex_unlock(&b->mu);
}

int hs_batcher_submit(hs_batcher *b, const hs_store_profile *p, char *err, size_t errlen)
{
    int result = 0;
    int rc = hs_batcher_submit_many(b, &p, 1, &result, err, errlen);
    return rc != 0 ? rc : result;
}

int hs_batcher_write_health(hs_batcher *b, char *err, size_t errlen)
{
    pthread_mutex_lock(&b->mu);
    int rc = b->write_rc;
    if (rc)
        snprintf(err, errlen, "%s", b->write_err);
    pthread_mutex_unlock(&b->mu);
    return rc;
}
