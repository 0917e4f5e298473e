/* query_cache.c — stack records kept in memory between queries.
 *
 * A query reads the stack record of each merged row (store/stack.h). Records are immutable by hash, so a
 * copy kept here is always right: the cache only saves fetching them from
 * the store again (a lookup per record in the database). It is an LRU
 * bounded in bytes (records plus their bookkeeping), shared by every
 * request thread under one mutex.
 *
 * A query first copies what it needs into a table of its own (under the
 * lock, in one pass), fetches the rest from the store, adds those to the
 * cache, and builds from its own table: nothing it uses can be evicted
 * under it by another thread.
 *
 * With a namer (names.h), a record fetched from the store that still has
 * frames stored as addresses with a build ID is renamed as it arrives, and
 * kept renamed; when the namer's debug info changes (its generation), the
 * cache is emptied so those records are fetched and named again. */
#define _GNU_SOURCE
#include "server/query_cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/names.h"
#include "store/stack.h"

typedef struct entry {
    uint64_t hash;
    size_t len;
    struct entry *chain;      /* next in the bucket */
    struct entry *prev, *next; /* LRU list: head is the most recent */
    unsigned char data[];
} entry;

struct hs_stack_cache {
    pthread_mutex_t mu;
    size_t max_bytes, bytes, n;
    entry **buckets;
    size_t n_buckets; /* power of two */
    entry *head, *tail;
    uint64_t hits, misses;
    hs_names *names;     /* renames unnamed build-ID frames (NULL: none) */
    uint64_t generation; /* the namer's, when the cache was last emptied */
};

void hs_stack_cache_set_names(hs_stack_cache *c, hs_names *n)
{
    c->names = n;
    c->generation = n ? hs_names_generation(n) : 0;
}

static size_t entry_cost(size_t len)
{
    return sizeof(entry) + len + sizeof(entry *); /* + its share of the buckets */
}

static size_t bucket_of(uint64_t h, size_t nb)
{
    return (size_t)(h ^ (h >> 29)) & (nb - 1);
}

hs_stack_cache *hs_stack_cache_new(size_t max_bytes)
{
    hs_stack_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n_buckets = 1024;
    c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->max_bytes = max_bytes;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void hs_stack_cache_free(hs_stack_cache *c)
{
    if (!c)
        return;
    for (entry *e = c->head, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static entry *find(hs_stack_cache *c, uint64_t h)
{
    for (entry *e = c->buckets[bucket_of(h, c->n_buckets)]; e; e = e->chain)
        if (e->hash == h)
            return e;
    return NULL;
}

static void lru_unlink(hs_stack_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(hs_stack_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static void drop(hs_stack_cache *c, entry *e)
{
    entry **pp = &c->buckets[bucket_of(e->hash, c->n_buckets)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    lru_unlink(c, e);
    c->bytes -= entry_cost(e->len);
    c->n--;
    free(e);
}

static void grow(hs_stack_cache *c)
{
    size_t nb = c->n_buckets * 2;
    entry **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < c->n_buckets; i++)
        for (entry *e = c->buckets[i], *next; e; e = next) {
            next = e->chain;
            size_t k = bucket_of(e->hash, nb);
            e->chain = b[k];
            b[k] = e;
        }
    free(c->buckets);
    c->buckets = b;
    c->n_buckets = nb;
}

/* Keep a copy of a record (lock held). */
static void insert(hs_stack_cache *c, uint64_t h, const void *data, size_t len)
{
    size_t cost = entry_cost(len);
    if (cost > c->max_bytes / 4 || find(c, h))
        return;
    while (c->tail && c->bytes + cost > c->max_bytes)
        drop(c, c->tail);
    entry *e = malloc(sizeof *e + len);
    if (!e)
        return;
    e->hash = h;
    e->len = len;
    memcpy(e->data, data, len);
    size_t k = bucket_of(h, c->n_buckets);
    e->chain = c->buckets[k];
    c->buckets[k] = e;
    e->prev = e->next = NULL;
    lru_push(c, e);
    c->bytes += cost;
    c->n++;
    if (c->n > c->n_buckets)
        grow(c);
}

void hs_stack_cache_stats(hs_stack_cache *c, hs_stack_cache_info *out)
{
    pthread_mutex_lock(&c->mu);
    out->entries = c->n;
    out->bytes = c->bytes;
    out->hits = c->hits;
    out->misses = c->misses;
    pthread_mutex_unlock(&c->mu);
}

/* ---- the records of one query ---- */

/* One slot per record: key, place and length side by side, so a lookup is
 * one cache line (the rebuild looks up every merged row). */
typedef struct {
    uint64_t key;
    size_t off, len; /* into arena; len SIZE_MAX: empty slot */
} local_slot_t;

typedef struct {
    local_slot_t *s;
    size_t cap; /* power of two */
    unsigned char *arena;
    size_t used, acap;
    bool oom;
} local_tab;

/* The table for n records (the arena is kept). */
static int local_init(local_tab *t, size_t n)
{
    t->cap = 16;
    while (t->cap < 2 * n + 2)
        t->cap *= 2;
    t->s = malloc(t->cap * sizeof *t->s);
    if (!t->s)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        t->s[i].len = SIZE_MAX;
    return 0;
}

static void local_free(local_tab *t)
{
    free(t->s);
    free(t->arena);
}

static local_slot_t *local_slot(const local_tab *t, uint64_t h)
{
    size_t i = bucket_of(h, t->cap);
    while (t->s[i].len != SIZE_MAX && t->s[i].key != h)
        i = (i + 1) & (t->cap - 1);
    return &t->s[i];
}

/* Room for len more bytes in the arena. */
static int local_reserve(local_tab *t, size_t len)
{
    if (t->used + len <= t->acap)
        return 0;
    size_t nc = t->acap ? t->acap : 65536;
    while (nc < t->used + len)
        nc *= 2;
    unsigned char *na = realloc(t->arena, nc);
    if (!na) {
        t->oom = true;
        return -1;
    }
    t->arena = na;
    t->acap = nc;
    return 0;
}

static void local_put(local_tab *t, uint64_t h, const void *data, size_t len)
{
    local_slot_t *e = local_slot(t, h);
    if (e->len != SIZE_MAX || local_reserve(t, len) < 0)
        return;
    memcpy(t->arena + t->used, data, len);
    *e = (local_slot_t){h, t->used, len};
    t->used += len;
}

static const void *local_lookup(void *arg, uint64_t h, size_t *len)
{
    local_tab *t = arg;
    const local_slot_t *e = local_slot(t, h);
    if (e->len == SIZE_MAX)
        return NULL;
    *len = e->len;
    return t->arena + e->off;
}

typedef struct {
    local_tab *t;
    hs_stack_cache *c;
    hs_names *names;
} fetch_ctx;

static void on_fetched(void *arg, uint64_t hash, const void *data, size_t len)
{
    fetch_ctx *f = arg;
    void *renamed = NULL;
    size_t rlen = 0;
    hs_names *nm = f->names;
    if (nm && memmem(data, len, HS_STACK_UNNAMED_PREFIX, sizeof HS_STACK_UNNAMED_PREFIX - 1) &&
        hs_names_record(nm, data, len, &renamed, &rlen) == 1) {
        data = renamed;
        len = rlen;
    }
    local_put(f->t, hash, data, len);
    if (f->c) {
        pthread_mutex_lock(&f->c->mu);
        insert(f->c, hash, data, len);
        pthread_mutex_unlock(&f->c->mu);
    }
    free(renamed);
}

/* The records of m's rows into t's arena: the cache's hits copied under
 * the lock (straight to their rows: row_off[i], row_len[i]), the rest
 * fetched from the store (kept in the cache, and found for their rows
 * through t's table); row_off[i] SIZE_MAX when the store has none. */
static int fetch_rows(hs_stack_cache *c, hs_store *st, const hs_store_merged *m, local_tab *t, size_t *row_off,
                      size_t *row_len, int *store_rc, char *err, size_t errlen)
{
    *store_rc = 0;
    uint64_t *want = malloc((m->n_rows + 1) * sizeof *want);
    entry **hit = c ? malloc((m->n_rows + 1) * sizeof *hit) : NULL;
    if (!want || (c && !hit)) {
        free(want);
        free(hit);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < m->n_rows; i++)
        row_off[i] = SIZE_MAX;
    size_t n_want = 0;
    if (c) {
        /* the hits' bytes first, so the arena is allocated once */
        size_t hit_bytes = 0;
        uint64_t gen = c->names ? hs_names_generation(c->names) : 0;
        pthread_mutex_lock(&c->mu);
        if (gen != c->generation) { /* debug info arrived or went: name again */
            while (c->head)
                drop(c, c->head);
            c->generation = gen;
        }
        for (size_t i = 0; i < m->n_rows; i++) {
            hit[i] = find(c, m->rows[i].stack);
            if (hit[i])
                hit_bytes += hit[i]->len;
        }
        if (local_reserve(t, hit_bytes) == 0)
            for (size_t i = 0; i < m->n_rows; i++) {
                entry *e = hit[i];
                if (e) {
                    memcpy(t->arena + t->used, e->data, e->len);
                    row_off[i] = t->used;
                    row_len[i] = e->len;
                    t->used += e->len;
                    lru_unlink(c, e);
                    lru_push(c, e);
                    c->hits++;
                } else {
                    want[n_want++] = m->rows[i].stack;
                    c->misses++;
                }
            }
        pthread_mutex_unlock(&c->mu);
        free(hit);
    } else {
        for (size_t i = 0; i < m->n_rows; i++)
            want[n_want++] = m->rows[i].stack;
    }
    int rc = 0;
    if (t->oom || local_init(t, n_want) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (n_want) {
        fetch_ctx f = {t, c, c ? c->names : NULL};
        rc = hs_store_get_stacks(st, want, n_want, on_fetched, &f, err, errlen);
        *store_rc = rc;
        if (rc == 0 && t->oom) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    free(want);
    if (rc)
        return -1;
    for (size_t i = 0; n_want && i < m->n_rows; i++)
        if (row_off[i] == SIZE_MAX) {
            const local_slot_t *e = local_slot(t, m->rows[i].stack);
            if (e->len != SIZE_MAX) {
                row_off[i] = e->off;
                row_len[i] = e->len;
            }
        }
    return 0;
}

/* Build's lookups come in row order: the next row's record without a
 * probe of the table. */
typedef struct {
    const local_tab *t;
    const hs_store_merged *m;
    const size_t *row_off, *row_len;
    size_t next;
} row_cursor;

static const void *cursor_lookup(void *arg, uint64_t h, size_t *len)
{
    row_cursor *rc = arg;
    if (rc->next < rc->m->n_rows && rc->m->rows[rc->next].stack == h) {
        size_t i = rc->next++;
        if (rc->row_off[i] == SIZE_MAX)
            return NULL;
        *len = rc->row_len[i];
        return rc->t->arena + rc->row_off[i];
    }
    return local_lookup((void *)rc->t, h, len);
}

hs_profile *hs_stack_cache_build(hs_stack_cache *c, hs_store *st, const hs_store_merged *m, size_t *missing,
                                 int *store_rc, char *err, size_t errlen)
{
    local_tab t = {0};
    hs_profile *p = NULL;
    size_t *row_off = malloc((m->n_rows + 1) * sizeof *row_off);
    size_t *row_len = malloc((m->n_rows + 1) * sizeof *row_len);
    if (!row_off || !row_len) {
        free(row_off);
        free(row_len);
        *store_rc = 0;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (fetch_rows(c, st, m, &t, row_off, row_len, store_rc, err, errlen) == 0) {
        row_cursor cur = {&t, m, row_off, row_len, 0};
        p = hs_stack_build_profile(m, cursor_lookup, &cur, missing, err, errlen);
    }
    free(row_off);
    free(row_len);
    local_free(&t);
    return p;
}

struct hs_row_records {
    local_tab t;
};

hs_row_records *hs_stack_cache_records(hs_stack_cache *c, hs_store *st, const hs_store_merged *m,
                                       const unsigned char **rec, size_t *len, int *store_rc, char *err,
                                       size_t errlen)
{
    hs_row_records *r = calloc(1, sizeof *r);
    size_t *row_off = malloc((m->n_rows + 1) * sizeof *row_off);
    if (!r || !row_off) {
        free(r);
        free(row_off);
        *store_rc = 0;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (fetch_rows(c, st, m, &r->t, row_off, len, store_rc, err, errlen) < 0) {
        free(row_off);
        hs_row_records_free(r);
        return NULL;
    }
    for (size_t i = 0; i < m->n_rows; i++) {
        rec[i] = row_off[i] == SIZE_MAX ? NULL : r->t.arena + row_off[i];
        if (!rec[i])
            len[i] = 0;
    }
    free(row_off);
    return r;
}

void hs_row_records_free(hs_row_records *r)
{
    if (!r)
        return;
    local_free(&r->t);
    free(r);
}
