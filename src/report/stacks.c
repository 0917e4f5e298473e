/* stacks.c — the string intern table, pair map, buffered writer (and its
 * writer thread) and JSON string writer
 * shared by the exporters and importers (see stacks.h). */
#include "report/stacks.h"

#include "base/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/json.h"

static void wbuf_put(void *ctx, const void *p, size_t n)
{
    hs_wmem(ctx, p, n);
}

void hs_wjson_string(hs_wbuf *w, const char *s)
{
    hs_json_write_string(s, wbuf_put, w);
}

void hs_json_string(FILE *out, const char *s)
{
    hs_wbuf w;
    hs_wbuf_init(&w, out);
    hs_wjson_string(&w, s);
    hs_wflush(&w);
}

/* ---------------------------------------------------------------- wbuf */

/* The writer thread's buffers (HS_WTHREAD_SIZE each) and hand-over: job
 * is the buffer given to write (NULL: none), under mu. */
#define HS_WTHREAD_SIZE ((size_t)1 << 18)

struct hs_wthread {
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* job set or quit (to the thread); job done (to the caller) */
    FILE *out;
    char *bufs[2];
    const char *job;
    size_t job_n;
    bool quit;
    int err; /* errno of the first write that failed, 0: none */
};

void hs_wbuf_init(hs_wbuf *w, FILE *out)
{
    w->out = out;
    w->n = 0;
    w->cap = sizeof w->own;
    w->buf = w->own;
    w->thr = NULL;
    w->mem = w->failed = false;
}

void hs_wbuf_mem(hs_wbuf *w)
{
    hs_wbuf_init(w, NULL);
    w->buf = NULL; /* own is left alone: pieces of a walk take what they need */
    w->cap = 0;
    w->mem = true;
}

void hs_wbuf_mem_free(hs_wbuf *w)
{
    if (w->buf != w->own)
        free(w->buf);
    hs_wbuf_mem(w);
}

/* In memory: room for need bytes (twice the room at least), or failed
 * and emptied (then the room it had, if any, is written over). */
static void hs_wgrow(hs_wbuf *w, size_t need)
{
    if (w->failed) { /* written over from now on */
        w->n = 0;
        return;
    }
    size_t cap = w->cap ? w->cap * 2 : 16384;
    while (cap < need)
        cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
        w->failed = true;
        w->n = 0;
        if (!w->buf) { /* somewhere to write over */
            w->buf = w->own;
            w->cap = sizeof w->own;
        }
        return;
    }
    w->buf = b;
    w->cap = cap;
}

int hs_wpath_fork(hs_wpath *piece, const hs_wpath *from)
{
    memset(piece, 0, sizeof *piece);
    piece->depth = from->depth;
    size_t len = from->depth ? from->off[from->depth] : 0;
    if (!(piece->w = malloc(sizeof *piece->w)) ||
        HS_VEC_RESERVE(piece->off, piece->off_cap, (size_t)from->depth + 1) < 0 ||
        HS_VEC_RESERVE(piece->path, piece->path_cap, len + 1) < 0) {
        free(piece->w);
        free(piece->off);
        free(piece->path);
        memset(piece, 0, sizeof *piece);
        return -1;
    }
    hs_wbuf_mem(piece->w);
    if (from->depth) {
        memcpy(piece->off, from->off, ((size_t)from->depth + 1) * sizeof *piece->off);
        memcpy(piece->path, from->path, len);
    }
    return 0;
}

int hs_wpath_join(hs_wpath *to, const hs_wpath *piece)
{
    if (piece->w->failed)
        return 1;
    if (piece->w->n) /* else buf may be NULL */
        hs_wmem(to->w, piece->w->buf, piece->w->n);
    return 0;
}

void hs_wpath_free(hs_wpath *p)
{
    if (p->w && p->w->mem) {
        hs_wbuf_mem_free(p->w);
        free(p->w);
    }
    free(p->path);
    free(p->off);
    memset(p, 0, sizeof *p);
}

int hs_wpath_open(hs_wpath *p, FILE *out)
{
    memset(p, 0, sizeof *p);
    if (!(p->w = malloc(sizeof *p->w)))
        return -1;
    hs_wbuf_init(p->w, out);
    return 0;
}

void hs_wpath_close(hs_wpath *p)
{
    hs_wbuf *w = p->w; /* the file's: hs_wpath_free leaves it */
    if (w)
        hs_wbuf_end(w);
    hs_wpath_free(p);
    free(w);
}

static void *hs_wthread_main(void *arg)
{
    hs_wthread *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->job && !t->quit)
            pthread_cond_wait(&t->cv, &t->mu);
        if (!t->job)
            break;
        const char *p = t->job;
        size_t n = t->job_n;
        pthread_mutex_unlock(&t->mu);
        /* an error shows in ferror(out), and its errno after hs_wbuf_end */
        int e = fwrite(p, 1, n, t->out) == n ? 0 : errno;
        pthread_mutex_lock(&t->mu);
        if (!t->err)
            t->err = e;
        t->job = NULL;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void hs_wthread_free(hs_wthread *t)
{
    free(t->bufs[0]);
    free(t->bufs[1]);
    free(t);
}

int hs_wbuf_thread(hs_wbuf *w)
{
    if (w->thr)
        return 0;
    hs_wthread *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    t->out = w->out;
    t->bufs[0] = malloc(HS_WTHREAD_SIZE);
    t->bufs[1] = malloc(HS_WTHREAD_SIZE);
    if (!t->bufs[0] || !t->bufs[1]) {
        hs_wthread_free(t);
        return -1;
    }
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        hs_wthread_free(t);
        return -1;
    }
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        hs_wthread_free(t);
        return -1;
    }
    if (pthread_create(&t->tid, NULL, hs_wthread_main, t) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        hs_wthread_free(t);
        return -1;
    }
    hs_wflush(w); /* what was buffered before goes first */
    w->thr = t;
    w->buf = t->bufs[0];
    w->cap = HS_WTHREAD_SIZE;
    return 0;
}

void hs_wbuf_end(hs_wbuf *w)
{
    hs_wthread *t = w->thr;
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->quit = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->tid, NULL); /* it writes its job, if any, first */
    if (t->err) /* errno is per thread: the caller's strerror(errno) wants it */
        errno = t->err;
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    hs_wthread_free(t);
    w->thr = NULL;
    w->buf = w->own;
    w->cap = sizeof w->own;
    w->n = 0;
}

void hs_wflush(hs_wbuf *w)
{
    hs_wthread *t = w->thr;
    if (w->mem) { /* called when full: more room */
        hs_wgrow(w, w->n + 1);
        return;
    }
    if (!w->n)
        return;
    if (!t) {
        fwrite(w->buf, 1, w->n, w->out);
        w->n = 0;
        return;
    }
    pthread_mutex_lock(&t->mu);
    while (t->job) /* the other buffer is still being written */
        pthread_cond_wait(&t->cv, &t->mu);
    t->job = w->buf;
    t->job_n = w->n;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    w->buf = w->buf == t->bufs[0] ? t->bufs[1] : t->bufs[0];
    w->n = 0;
}

void hs_wint(hs_wbuf *w, int64_t v)
{
    if (w->n + 20 > w->cap)
        hs_wflush(w);
    w->n += hs_int_dec(w->buf + w->n, v);
}

void hs_wmem(hs_wbuf *w, const void *p, size_t len)
{
    if (w->n + len > w->cap) {
        if (w->mem) {
            hs_wgrow(w, w->n + len);
            if (w->failed && len > w->cap)
                return;
        } else {
            hs_wflush(w);
        }
        if (len > w->cap) {
            if (w->thr) { /* in pieces, each through the thread (out is its) */
                for (const char *s = p; len;) {
                    size_t k = len < w->cap ? len : w->cap;
                    memcpy(w->buf, s, k);
                    w->n = k;
                    hs_wflush(w);
                    s += k;
                    len -= k;
                }
                return;
            }
            fwrite(p, 1, len, w->out);
            return;
        }
    }
    memcpy(w->buf + w->n, p, len);
    w->n += len;
}

/* ---------------------------------------------------------------- map */

int hs_map_init(hs_map *m)
{
    *m = (hs_map){0};
    return hs_idmap_init(&m->ids, 1024);
}

void hs_map_free(hs_map *m)
{
    hs_idmap_free(&m->ids);
    free(m->keys);
    *m = (hs_map){0};
}

uint32_t hs_map_get(hs_map *m, uint64_t a, uint64_t b, int *is_new)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ b; /* (the map mixes its keys) */
    size_t it = HS_HMAP_START;
    uint32_t id;
    *is_new = 0;
    while ((id = hs_idmap_next(&m->ids, h, &it)) != UINT32_MAX)
        if (m->keys[2 * id] == a && m->keys[2 * id + 1] == b)
            return id;
    if (m->n >= UINT32_MAX - 1 || HS_VEC_RESERVE(m->keys, m->cap, 2 * (m->n + 1)) != 0 ||
        hs_idmap_put(&m->ids, h, (uint32_t)m->n) != 0)
        return UINT32_MAX;
    m->keys[2 * m->n] = a;
    m->keys[2 * m->n + 1] = b;
    *is_new = 1;
    return (uint32_t)m->n++;
}

int hs_out_finish(FILE *out, char *err, size_t errlen)
{
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        return -1;
    }
    return 0;
}
