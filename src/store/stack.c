/* stack.c — stack records: encoding, hashing, decomposing a profile into
 * stacks and samples, rebuilding a profile from merged rows (see stack.h
 * for the record format).
 *
 * Decomposition interns every string it uses into one table (so equal
 * strings are one id whatever their index in the pprof string table),
 * expands each location once into frames of string ids, finds each
 * sample's stack by its key (locations + labels) and encodes and hashes
 * only the stacks not seen before, then merges samples of one stack. The
 * table, the locations and the stacks live in an hs_stack_memo, which the
 * server shares between uploads (a private one otherwise), so a stack that
 * repeats across profiles costs a key lookup, not an encoding. */
#define _GNU_SOURCE /* qsort_r */
#include "store/stack.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "base/err.h"
#include "base/hashmap.h"
#include "base/strtab.h"
#include "base/bytes.h"
#include "base/vec.h"

#define ERR(...) hs_err(err, errlen, __VA_ARGS__)

uint64_t hs_stack_hash(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

/* ---- the core encoder: frames and labels as interned string ids ---- */

typedef struct {
    uint32_t fn, sys, file, map;
    int64_t line, start_line;
    bool inlined;
} id_frame;

typedef struct {
    uint32_t key, str, unit;
    int64_t num;
} id_label;

typedef struct {
    hs_strtab strs;   /* id -> string; id 0 is "" */
    uint32_t *stamp;     /* per string id: the record it last got a ref in */
    uint32_t *ref;       /* per string id: its ref in that record */
    uint32_t *len1;      /* per string id: strlen + 1, 0 when not known yet */
    size_t n_stamp;
    uint32_t record_no;
    uint32_t *refs;      /* scratch: a record's local refs */
    size_t cap_refs;
    int oom;
    uint32_t *tab;       /* the string ids of the record's table, in order */
    size_t n_tab, cap_tab;
} encoder;

static int encoder_init(encoder *e)
{
    memset(e, 0, sizeof *e);
    if (hs_strtab_init(&e->strs) < 0)
        return -1;
    if (hs_strtab_intern(&e->strs, "") != 0) {
        hs_strtab_free(&e->strs);
        return -1;
    }
    return 0;
}

static void encoder_free(encoder *e)
{
    hs_strtab_free(&e->strs);
    free(e->stamp);
    free(e->ref);
    free(e->len1);
    free(e->refs);
    free(e->tab);
}

static uint32_t intern(encoder *e, const char *s)
{
    if (!s || !*s)
        return 0;
    return hs_strtab_intern(&e->strs, s);
}

/* The record-local ref of string id: 0 for "", else 1 + its table slot. */
static uint32_t local_ref(encoder *e, uint32_t id)
{
    if (id == 0)
        return 0;
    if (e->stamp[id] == e->record_no)
        return e->ref[id];
    if (e->n_tab == e->cap_tab) {
        size_t nc = e->cap_tab ? e->cap_tab * 2 : 64;
        uint32_t *nt = realloc(e->tab, nc * sizeof *nt);
        if (!nt) {
            e->oom = 1;
            return 0;
        }
        e->tab = nt;
        e->cap_tab = nc;
    }
    e->tab[e->n_tab++] = id;
    e->stamp[id] = e->record_no;
    e->ref[id] = (uint32_t)e->n_tab;
    return e->ref[id];
}

static int label_cmp(const void *a, const void *b, void *arg)
{
    const id_label *x = a, *y = b;
    const hs_strtab *t = arg;
    int c = strcmp(t->strs[x->key], t->strs[y->key]);
    if (c)
        return c;
    if ((c = strcmp(t->strs[x->str], t->strs[y->str])))
        return c;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return strcmp(t->strs[x->unit], t->strs[y->unit]);
}

/* Append the record to out (labels must already be sorted). 0, or -1 on
 * out of memory. */
static int encode_ids(encoder *e, const id_frame *f, size_t nf, const id_label *l, size_t nl, hs_bytes *out)
{
    if (e->n_stamp < e->strs.n) {
        size_t nn = e->strs.n * 2;
        uint32_t *ns = realloc(e->stamp, nn * sizeof *ns);
        if (!ns)
            return -1;
        e->stamp = ns;
        uint32_t *nr = realloc(e->ref, nn * sizeof *nr);
        if (!nr)
            return -1;
        e->ref = nr;
        uint32_t *nl1 = realloc(e->len1, nn * sizeof *nl1);
        if (!nl1)
            return -1;
        e->len1 = nl1;
        memset(e->stamp + e->n_stamp, 0, (nn - e->n_stamp) * sizeof *ns);
        memset(e->len1 + e->n_stamp, 0, (nn - e->n_stamp) * sizeof *nl1);
        e->n_stamp = nn;
    }
    if (++e->record_no == 0) { /* wrapped: stamps are stale */
        memset(e->stamp, 0, e->n_stamp * sizeof *e->stamp);
        e->record_no = 1;
    }
    e->n_tab = 0;
    /* pass 1: the record-local refs, which make the string table */
    size_t nr = nf * 4 + nl * 3;
    if (nr > e->cap_refs) {
        uint32_t *n = realloc(e->refs, nr * sizeof *n);
        if (!n)
            return -1;
        e->refs = n;
        e->cap_refs = nr;
    }
    uint32_t *r = e->refs;
    for (size_t i = 0; i < nf; i++) {
        *r++ = local_ref(e, f[i].fn);
        *r++ = local_ref(e, f[i].sys);
        *r++ = local_ref(e, f[i].file);
        *r++ = local_ref(e, f[i].map);
    }
    for (size_t i = 0; i < nl; i++) {
        *r++ = local_ref(e, l[i].key);
        *r++ = local_ref(e, l[i].str);
        *r++ = local_ref(e, l[i].unit);
    }
    if (e->oom)
        return -1;
    /* pass 2: write, at most 10 bytes per varint */
    size_t need = 31 + nf * 61 + nl * 40;
    for (size_t i = 0; i < e->n_tab; i++) {
        uint32_t id = e->tab[i];
        if (!e->len1[id])
            e->len1[id] = (uint32_t)strlen(e->strs.strs[id]) + 1;
        need += e->len1[id] + 9;
    }
    if (hs_bytes_reserve(out, need) < 0)
        return -1;
    unsigned char *w = out->p + out->n;
    *w++ = HS_STACK_RECORD_VERSION;
    w = hs_uv_write(w, e->n_tab);
    for (size_t i = 0; i < e->n_tab; i++) {
        uint32_t id = e->tab[i], len = e->len1[id] - 1;
        w = hs_uv_write(w, len);
        memcpy(w, e->strs.strs[id], len);
        w += len;
    }
    r = e->refs;
    w = hs_uv_write(w, nf);
    for (size_t i = 0; i < nf; i++) {
        *w++ = f[i].inlined ? 1 : 0;
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_uv_write(w, *r++);
        w = hs_sv_write(w, f[i].line);
        w = hs_sv_write(w, f[i].start_line);
    }
    w = hs_uv_write(w, nl);
    for (size_t i = 0; i < nl; i++) {
        w = hs_uv_write(w, r[0]);
        w = hs_uv_write(w, r[1]);
        w = hs_sv_write(w, l[i].num);
        w = hs_uv_write(w, r[2]);
        r += 3;
    }
    out->n = (size_t)(w - out->p);
    return 0;
}

int hs_stack_encode(const hs_stack_frame *frames, size_t n_frames, const hs_stack_label *labels,
                    size_t n_labels, void **out, size_t *outlen, char *err, size_t errlen)
{
    encoder e;
    int rc = -1;
    id_frame *f = calloc(n_frames ? n_frames : 1, sizeof *f);
    id_label *l = calloc(n_labels ? n_labels : 1, sizeof *l);
    if (!f || !l || encoder_init(&e) < 0) {
        free(f);
        free(l);
        ERR("out of memory");
        return -1;
    }
    for (size_t i = 0; i < n_frames; i++) {
        f[i] = (id_frame){intern(&e, frames[i].function), intern(&e, frames[i].system_name),
                          intern(&e, frames[i].file),     intern(&e, frames[i].mapping),
                          frames[i].line,                 frames[i].start_line,
                          frames[i].inlined};
        if (f[i].fn == UINT32_MAX || f[i].sys == UINT32_MAX || f[i].file == UINT32_MAX || f[i].map == UINT32_MAX)
            goto oom;
    }
    for (size_t i = 0; i < n_labels; i++) {
        l[i] = (id_label){intern(&e, labels[i].key), intern(&e, labels[i].str), intern(&e, labels[i].num_unit),
                          labels[i].num};
        if (l[i].key == UINT32_MAX || l[i].str == UINT32_MAX || l[i].unit == UINT32_MAX)
            goto oom;
    }
    qsort_r(l, n_labels, sizeof *l, label_cmp, &e.strs);
    hs_bytes rec = {0};
    if (encode_ids(&e, f, n_frames, l, n_labels, &rec) < 0) {
        free(rec.p);
        goto oom;
    }
    *out = rec.p;
    *outlen = rec.n;
    rc = 0;
    goto done;
oom:
    ERR("out of memory");
done:
    encoder_free(&e);
    free(f);
    free(l);
    return rc;
}

/* ---- decoding ---- */

/* A record parsed in place: its string table (NUL-terminated copies; s[0]
 * is "") and frames and labels referring to it. Reused across records. */
typedef hs_stack_ref_frame ref_frame;
typedef hs_stack_ref_label ref_label;

typedef struct {
    const char **s;
    size_t ns, cap_s;
    char *bytes;
    size_t cap_bytes;
    ref_frame *f;
    size_t nf, cap_f;
    ref_label *l;
    size_t nl, cap_l;
} parsed;

static void parsed_free(parsed *pr)
{
    free(pr->s);
    free(pr->bytes);
    free(pr->f);
    free(pr->l);
    memset(pr, 0, sizeof *pr);
}


/* Resize *p to n elements (parallel arrays grown together). */
static int resize(void **p, size_t n, size_t size)
{
    void *np = realloc(*p, n * size);
    if (!np)
        return -1;
    *p = np;
    return 0;
}

static int parse_record(const void *data, size_t len, parsed *pr, char *err, size_t errlen)
{
    hs_reader r = {data, (const unsigned char *)data + len, 0};
    pr->ns = pr->nf = pr->nl = 0;
    if (len < 1 || *r.p != HS_STACK_RECORD_VERSION) {
        ERR("stack record: unknown version %d", len ? *r.p : -1);
        return -1;
    }
    r.p++;
    uint64_t ns = hs_read_uv(&r);
    if (r.bad || ns > len) {
        ERR("stack record: bad string count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->s, &pr->cap_s, ns + 1, sizeof *pr->s) < 0 ||
        hs_vec_reserve((void **)&pr->bytes, &pr->cap_bytes, len + ns + 1, 1) < 0)
        goto oom;
    char *w = pr->bytes;
    pr->s[0] = "";
    for (uint64_t i = 0; i < ns; i++) {
        uint64_t sl = hs_read_uv(&r);
        if (r.bad || sl > (uint64_t)(r.end - r.p)) {
            ERR("stack record: truncated string table");
            return -1;
        }
        memcpy(w, r.p, sl);
        w[sl] = 0;
        pr->s[i + 1] = w;
        w += sl + 1;
        r.p += sl;
    }
    pr->ns = ns + 1;
    uint64_t nf = hs_read_uv(&r);
    if (r.bad || nf > (uint64_t)(r.end - r.p) / 7) { /* a frame is at least 7 bytes */
        ERR("stack record: truncated or bad frame count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->f, &pr->cap_f, nf, sizeof *pr->f) < 0)
        goto oom;
    for (uint64_t i = 0; i < nf; i++) {
        ref_frame *f = &pr->f[i];
        f->inlined = hs_read_uv(&r) & 1;
        f->fn = (uint32_t)hs_read_uv(&r);
        f->sys = (uint32_t)hs_read_uv(&r);
        f->file = (uint32_t)hs_read_uv(&r);
        f->map = (uint32_t)hs_read_uv(&r);
        f->line = hs_read_sv(&r);
        f->start_line = hs_read_sv(&r);
        if (r.bad || f->fn > ns || f->sys > ns || f->file > ns || f->map > ns) {
            ERR("stack record: truncated or bad string reference in frame %" PRIu64, i);
            return -1;
        }
    }
    pr->nf = nf;
    uint64_t nl = hs_read_uv(&r);
    if (r.bad || nl > (uint64_t)(r.end - r.p) / 4) { /* a label is at least 4 bytes */
        ERR("stack record: truncated or bad label count");
        return -1;
    }
    if (hs_vec_reserve((void **)&pr->l, &pr->cap_l, nl, sizeof *pr->l) < 0)
        goto oom;
    for (uint64_t i = 0; i < nl; i++) {
        ref_label *l = &pr->l[i];
        l->key = (uint32_t)hs_read_uv(&r);
        l->str = (uint32_t)hs_read_uv(&r);
        l->num = hs_read_sv(&r);
        l->unit = (uint32_t)hs_read_uv(&r);
        if (r.bad || l->key > ns || l->str > ns || l->unit > ns) {
            ERR("stack record: truncated or bad string reference in label %" PRIu64, i);
            return -1;
        }
    }
    pr->nl = nl;
    if (r.p != r.end) {
        ERR("stack record: trailing bytes");
        return -1;
    }
    return 0;
oom:
    ERR("out of memory");
    return -1;
}

int hs_stack_decode(const void *data, size_t len, hs_stack_decoded *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    parsed *pr = calloc(1, sizeof *pr);
    if (!pr) {
        ERR("out of memory");
        return -1;
    }
    if (parse_record(data, len, pr, err, errlen) < 0) {
        parsed_free(pr);
        free(pr);
        return -1;
    }
    out->frames = calloc(pr->nf ? pr->nf : 1, sizeof *out->frames);
    out->labels = calloc(pr->nl ? pr->nl : 1, sizeof *out->labels);
    if (!out->frames || !out->labels) {
        free(out->frames);
        free(out->labels);
        memset(out, 0, sizeof *out);
        parsed_free(pr);
        free(pr);
        ERR("out of memory");
        return -1;
    }
    for (size_t i = 0; i < pr->nf; i++) {
        const ref_frame *f = &pr->f[i];
        out->frames[i] = (hs_stack_frame){pr->s[f->fn], pr->s[f->sys], pr->s[f->file], pr->s[f->map],
                                          f->line,      f->start_line, f->inlined};
    }
    for (size_t i = 0; i < pr->nl; i++) {
        const ref_label *l = &pr->l[i];
        out->labels[i] = (hs_stack_label){pr->s[l->key], pr->s[l->str], pr->s[l->unit], l->num};
    }
    out->n_frames = pr->nf;
    out->n_labels = pr->nl;
    out->buf = pr;
    return 0;
}

void hs_stack_decoded_free(hs_stack_decoded *d)
{
    if (!d)
        return;
    if (d->buf) {
        parsed_free(d->buf);
        free(d->buf);
    }
    free(d->frames);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

struct hs_stack_reader {
    parsed pr;
};

hs_stack_reader *hs_stack_reader_new(void)
{
    return calloc(1, sizeof(hs_stack_reader));
}

void hs_stack_reader_free(hs_stack_reader *r)
{
    if (!r)
        return;
    parsed_free(&r->pr);
    free(r);
}

int hs_stack_read(hs_stack_reader *r, const void *data, size_t len, hs_stack_refs *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (parse_record(data, len, &r->pr, err, errlen) < 0)
        return -1;
    *out = (hs_stack_refs){r->pr.s, r->pr.ns, r->pr.f, r->pr.nf, r->pr.l, r->pr.nl};
    return 0;
}

/* ---- decomposition ---- */

/* The records of a memo, in blocks that never move: decompositions point
 * into them, and each holds a reference, so a reset of the memo frees them
 * only when the last decomposition that uses them is freed. */
typedef struct recblock {
    struct recblock *next;
    size_t n, cap;
    unsigned char data[];
} recblock;

typedef struct {
    atomic_size_t refs;
    recblock *head; /* the block being filled */
    size_t bytes;
} recstore;

static void recstore_unref(recstore *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (recblock *b = r->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(r);
}

static recstore *recstore_new(void)
{
    recstore *r = calloc(1, sizeof *r);
    if (r)
        atomic_init(&r->refs, 1);
    return r;
}

/* A copy of data[0..n) in r (stable until r is freed); NULL on out of memory. */
static const unsigned char *recstore_add(recstore *r, const void *data, size_t n)
{
    enum { BLOCK = 256 << 10 };
    recblock *b = r->head;
    if (!b || b->cap - b->n < n) {
        size_t cap = n > BLOCK ? n : BLOCK;
        if (!(b = malloc(sizeof *b + cap)))
            return NULL;
        b->n = 0;
        b->cap = cap;
        b->next = r->head;
        r->head = b;
    }
    unsigned char *w = b->data + b->n;
    memcpy(w, data, n);
    b->n += n;
    r->bytes += n;
    return w;
}

struct hs_stack_parts {
    hs_store_sample *samples;
    hs_store_stack *stacks;
    recstore *recs;     /* the memo's records (referenced), which stacks point into */
    char *type_strings; /* sample type / unit / period strings */
};

void hs_stack_parts_free(hs_stack_parts *parts)
{
    if (!parts)
        return;
    free(parts->samples);
    free(parts->stacks);
    recstore_unref(parts->recs);
    free(parts->type_strings);
    free(parts);
}

/* ---- the decomposition cache ----
 *
 * Decomposition works in three steps, each memoized in an hs_stack_memo:
 * a pprof string becomes an interned string id (once per profile per
 * string), a location becomes a cache location — its expanded frames,
 * found by their content (once per profile per location) — and a sample
 * becomes a cache stack, found by its key: the cache locations of its
 * frames and its sorted, kept labels. Only a stack the cache has not seen
 * is encoded (encode_ids) and hashed; a known one is a hash of its key and
 * one comparison. Keys are exact (ids of equal content are equal), so a
 * stack's record and hash are those of the uncached encoding: the cache
 * changes what is computed, never the answer. The cache is bounded: when
 * it holds more than max_bytes at the start of a decomposition it is
 * emptied. */

/* A run of elements of one of the memo's arrays. */
typedef struct {
    size_t off;
    uint32_t n;
} span;

/* A stack's record. */
typedef struct {
    const unsigned char *p;
    uint32_t n;
} recref;

/* Everything a reset empties. */
typedef struct {
    encoder e;          /* e.strs: every string interned since the reset */
    size_t str_bytes;
    hs_idmap loc_map;  /* hash of a location's frames -> location */
    span *loc;          /* location -> its frames in pool */
    size_t n_loc, cap_loc;
    id_frame *pool;
    size_t n_pool, cap_pool;
    hs_idmap stack_map; /* XXH3 of a stack's key -> stack */
    span *key;           /* stack -> its key in keys */
    recref *rec;         /* stack -> its record in recs */
    uint64_t *hash;      /* stack -> its record's hash */
    size_t n_stack, cap_stack;
    uint32_t *keys;
    size_t n_keys, cap_keys;
    recstore *recs;
} cstate;

struct hs_stack_memo {
    pthread_mutex_t mu; /* one decomposition at a time */
    size_t max_bytes;
    cstate s;
    id_frame *frames;   /* scratch: one location's or one stack's frames */
    size_t cap_frames;
    id_label *labels;   /* scratch: one sample's labels */
    size_t cap_labels;
    uint32_t *kbuf;     /* scratch: one sample's key */
    size_t cap_kbuf;
    hs_bytes rec;           /* scratch: a new record */
};

static void cstate_free(cstate *s)
{
    encoder_free(&s->e);
    hs_idmap_free(&s->loc_map);
    hs_idmap_free(&s->stack_map);
    free(s->loc);
    free(s->pool);
    free(s->key);
    free(s->rec);
    free(s->hash);
    free(s->keys);
    recstore_unref(s->recs);
    memset(s, 0, sizeof *s);
}

static int cstate_init(cstate *s)
{
    memset(s, 0, sizeof *s);
    if (encoder_init(&s->e) < 0)
        return -1;
    if (!(s->recs = recstore_new()) || hs_idmap_init(&s->loc_map, 1024) < 0 ||
        hs_idmap_init(&s->stack_map, 1024) < 0) {
        cstate_free(s);
        return -1;
    }
    return 0;
}

/* What the cache holds, roughly (allocator overhead not counted). */
static size_t cstate_bytes(const cstate *s)
{
    return s->recs->bytes + s->n_keys * sizeof *s->keys + s->n_pool * sizeof *s->pool + s->str_bytes +
           s->e.strs.n * (sizeof(char *) + 3 * sizeof(uint32_t) + 24) +
           s->n_loc * (sizeof *s->loc + 24) + s->n_stack * (2 * sizeof(span) + sizeof(uint64_t) + 24);
}

hs_stack_memo *hs_stack_memo_new(size_t max_bytes)
{
    hs_stack_memo *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_bytes = max_bytes;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (cstate_init(&c->s) < 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        return NULL;
    }
    return c;
}

void hs_stack_memo_free(hs_stack_memo *c)
{
    if (!c)
        return;
    cstate_free(&c->s);
    pthread_mutex_destroy(&c->mu);
    free(c->frames);
    free(c->labels);
    free(c->kbuf);
    free(c->rec.p);
    free(c);
}

static uint32_t cintern(cstate *s, const char *str)
{
    size_t n0 = s->e.strs.n;
    uint32_t id = intern(&s->e, str);
    if (s->e.strs.n > n0)
        s->str_bytes += strlen(str) + 1;
    return id;
}

static bool frames_eq(const id_frame *a, const id_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].fn != b[i].fn || a[i].sys != b[i].sys || a[i].file != b[i].file || a[i].map != b[i].map ||
            a[i].line != b[i].line || a[i].start_line != b[i].start_line || a[i].inlined != b[i].inlined)
            return false;
    return true;
}

/* Multiply-xor over the frames' fields, one full mix at the end: the memo's
 * map only needs well-spread bits (candidates are compared), and this runs
 * for every location of every upload. */
static uint64_t frames_hash(const id_frame *f, size_t n)
{
    const uint64_t k = 0x9e3779b97f4a7c15ULL;
    uint64_t h = n;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((uint64_t)f[i].fn << 32 | f[i].sys)) * k;
        h = (h ^ ((uint64_t)f[i].file << 32 | f[i].map)) * k;
        h = (h ^ (uint64_t)f[i].line) * k;
        h = (h ^ ((uint64_t)f[i].start_line << 1 | f[i].inlined)) * k;
    }
    return hs_mix64(h);
}

/* The cache location whose frames are f[0..n) (f not in the pool), added
 * when new; UINT32_MAX on out of memory. */
static uint32_t cache_location(cstate *s, const id_frame *f, size_t n)
{
    uint64_t h = frames_hash(f, n);
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&s->loc_map, h, &slot)) != UINT32_MAX)
        if (s->loc[c].n == n && frames_eq(s->pool + s->loc[c].off, f, n))
            return c;
    if (s->n_loc >= UINT32_MAX - 1 || hs_vec_reserve((void **)&s->loc, &s->cap_loc, s->n_loc + 1, sizeof *s->loc) < 0 ||
        hs_vec_reserve((void **)&s->pool, &s->cap_pool, s->n_pool + n, sizeof *s->pool) < 0)
        return UINT32_MAX;
    memcpy(s->pool + s->n_pool, f, n * sizeof *f);
    s->loc[s->n_loc] = (span){s->n_pool, (uint32_t)n};
    s->n_pool += n;
    if (hs_idmap_put(&s->loc_map, h, (uint32_t)s->n_loc) < 0)
        return UINT32_MAX;
    return (uint32_t)s->n_loc++;
}

/* Per decomposition: the profile's strings and locations as cache ids. */
typedef struct {
    const hs_profile *p;
    hs_stack_memo *c;
    uint32_t *sid;  /* profile string index -> string id (UINT32_MAX: not yet) */
    uint32_t *loc;  /* profile location index -> cache location + 1 (0: not yet) */
    uint32_t *nfr;  /* profile location index -> its frame count (once loc is set) */
} decomp;

static inline uint32_t pstr(decomp *d, int64_t idx)
{
    if (idx <= 0 || (size_t)idx >= d->p->n_strings)
        return 0;
    if (d->sid[idx] == UINT32_MAX)
        d->sid[idx] = cintern(&d->c->s, d->p->strings[idx]);
    return d->sid[idx];
}

int hs_stack_unnamed_format(char *out, size_t cap, const char *build_id, uint64_t map_offset, uint64_t rel)
{
    size_t n = strlen(build_id);
    if (n == 0 || n > HS_BUILD_ID_MAX || strspn(build_id, "0123456789abcdef") != n)
        return -1;
    int w = snprintf(out, cap, HS_STACK_UNNAMED_PREFIX "%s:%" PRIx64 ":%" PRIx64, build_id, map_offset, rel);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

bool hs_stack_unnamed_parse(const char *sys, char build_id[HS_BUILD_ID_MAX + 1], uint64_t *map_offset,
                            uint64_t *rel)
{
    size_t np = sizeof HS_STACK_UNNAMED_PREFIX - 1;
    if (strncmp(sys, HS_STACK_UNNAMED_PREFIX, np) != 0)
        return false;
    sys += np;
    size_t n = strspn(sys, "0123456789abcdef");
    if (n == 0 || n > HS_BUILD_ID_MAX || sys[n] != ':')
        return false;
    memcpy(build_id, sys, n);
    build_id[n] = '\0';
    char *end;
    const char *q = sys + n + 1;
    if (!isxdigit((unsigned char)*q))
        return false;
    *map_offset = strtoull(q, &end, 16);
    if (*end != ':' || !isxdigit((unsigned char)end[1]))
        return false;
    q = end + 1;
    *rel = strtoull(q, &end, 16);
    return *end == '\0';
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* out = "FILE+0xOFF" as snprintf(out, cap, "%s+0x%" PRIx64) writes it
 * (cut to cap - 1 bytes), without printf's cost: it runs for every
 * unsymbolized location of every upload. */
static void offset_name(char *out, size_t cap, const char *file, uint64_t off)
{
    char hex[20];
    size_t nh = 0;
    do
        hex[nh++] = "0123456789abcdef"[off & 15];
    while ((off >>= 4) != 0);
    size_t n = 0;
    for (; file[n] && n + 1 < cap; n++)
        out[n] = file[n];
    for (const char *x = "+0x"; *x && n + 1 < cap; x++)
        out[n++] = *x;
    while (nh && n + 1 < cap)
        out[n++] = hex[--nh];
    out[n] = '\0';
}

/* Expand location l (index li) into its frames and find its cache
 * location. 0, or -1 on out of memory. */
static int expand_location(decomp *d, const hs_location *l, size_t li)
{
    const hs_profile *p = d->p;
    hs_stack_memo *c = d->c;
    const hs_mapping *m = l->mapping_id ? hs_profile_mapping(p, l->mapping_id) : NULL;
    uint32_t map = m ? pstr(d, m->filename) : 0;
    size_t n = l->n_lines ? l->n_lines : 1;
    if (hs_vec_reserve((void **)&c->frames, &c->cap_frames, n, sizeof *c->frames) < 0)
        return -1;
    uint32_t unnamed = UINT32_MAX; /* the file-offset name, made on first need */
    for (size_t i = 0; i < n; i++) {
        const hs_function *fn = l->n_lines ? hs_profile_function(p, l->lines[i].function_id) : NULL;
        id_frame f = {0};
        f.map = map;
        f.inlined = l->n_lines && i + 1 < l->n_lines;
        if (fn) {
            f.fn = pstr(d, fn->name);
            f.sys = pstr(d, fn->system_name);
            f.file = pstr(d, fn->filename);
            f.start_line = fn->start_line;
        }
        if (l->n_lines)
            f.line = l->lines[i].line;
        if (f.fn == 0) {
            if (unnamed == UINT32_MAX) {
                char name[512];
                if (m) {
                    const char *file = basename_of(hs_profile_string(p, m->filename));
                    uint64_t fo = l->address - m->memory_start + m->file_offset;
                    offset_name(name, sizeof name, *file ? file : "[unknown]", fo);
                    const char *bid = hs_profile_string(p, m->build_id);
                    if (!l->n_lines && *bid) {
                        /* kept so the server can name it later (hs_stack_unnamed_parse) */
                        char sys[512];
                        if (hs_stack_unnamed_format(sys, sizeof sys, bid, m->file_offset,
                                                    l->address - m->memory_start) == 0 &&
                            (f.sys = cintern(&c->s, sys)) == UINT32_MAX)
                            return -1;
                    }
                } else {
                    snprintf(name, sizeof name, "[unknown]");
                }
                unnamed = cintern(&c->s, name);
                if (unnamed == UINT32_MAX)
                    return -1;
            }
            f.fn = unnamed;
        }
        if (f.fn == UINT32_MAX || f.sys == UINT32_MAX || f.file == UINT32_MAX || f.map == UINT32_MAX)
            return -1;
        c->frames[i] = f;
    }
    uint32_t id = cache_location(&c->s, c->frames, n);
    if (id == UINT32_MAX)
        return -1;
    d->loc[li] = id + 1;
    d->nfr[li] = (uint32_t)n;
    return 0;
}

/* The cache stack of key[0..kn) (its n_loc locations, then its labels
 * l[0..nl), sorted), encoded and hashed when new; UINT32_MAX on out of
 * memory. nf: the stack's frame count. */
static uint32_t cache_stack(hs_stack_memo *c, const uint32_t *key, size_t kn, size_t n_loc, size_t nf,
                            const id_label *l, size_t nl)
{
    cstate *s = &c->s;
    uint64_t kh = hs_stack_hash(key, kn * sizeof *key);
    size_t slot = (size_t)-1;
    uint32_t cand;
    while ((cand = hs_idmap_next(&s->stack_map, kh, &slot)) != UINT32_MAX)
        if (s->key[cand].n == kn && memcmp(s->keys + s->key[cand].off, key, kn * sizeof *key) == 0)
            return cand;
    if (s->n_stack >= UINT32_MAX - 1 || hs_vec_reserve((void **)&c->frames, &c->cap_frames, nf, sizeof *c->frames) < 0)
        return UINT32_MAX;
    size_t w = 0;
    for (size_t i = 0; i < n_loc; i++) {
        const span *ls = &s->loc[key[1 + i]];
        memcpy(c->frames + w, s->pool + ls->off, ls->n * sizeof *c->frames);
        w += ls->n;
    }
    c->rec.n = 0;
    if (encode_ids(&s->e, c->frames, nf, l, nl, &c->rec) < 0)
        return UINT32_MAX;
    const unsigned char *rec = recstore_add(s->recs, c->rec.p, c->rec.n);
    if (!rec)
        return UINT32_MAX;
    size_t need = s->n_stack + 1;
    size_t cap = s->cap_stack;
    if (need > cap) {
        size_t nc = cap ? cap * 2 : 1024;
        if (resize((void **)&s->key, nc, sizeof *s->key) < 0 || resize((void **)&s->rec, nc, sizeof *s->rec) < 0 ||
            resize((void **)&s->hash, nc, sizeof *s->hash) < 0)
            return UINT32_MAX;
        s->cap_stack = nc;
    }
    if (hs_vec_reserve((void **)&s->keys, &s->cap_keys, s->n_keys + kn, sizeof *s->keys) < 0)
        return UINT32_MAX;
    memcpy(s->keys + s->n_keys, key, kn * sizeof *key);
    uint32_t id = (uint32_t)s->n_stack;
    s->key[id] = (span){s->n_keys, (uint32_t)kn};
    s->n_keys += kn;
    s->rec[id] = (recref){rec, (uint32_t)c->rec.n};
    s->hash[id] = hs_stack_hash(rec, c->rec.n);
    if (hs_idmap_put(&s->stack_map, kh, id) < 0)
        return UINT32_MAX;
    s->n_stack++;
    return id;
}

static bool dropped(const hs_stack_options *o, const char *key)
{
    for (size_t i = 0; i < o->n_drop_labels; i++)
        if (strcmp(o->drop_labels[i], key) == 0)
            return true;
    return false;
}

static char *copy_types(const hs_profile *p, hs_store_types *t, char *err, size_t errlen)
{
    size_t need = 0;
    for (size_t i = 0; i < p->n_sample_types; i++)
        need += strlen(hs_profile_string(p, p->sample_types[i].type)) +
                strlen(hs_profile_string(p, p->sample_types[i].unit)) + 2;
    need += strlen(hs_profile_string(p, p->period_type.type)) + strlen(hs_profile_string(p, p->period_type.unit)) + 2;
    char *buf = malloc(need), *w = buf;
    if (!buf) {
        ERR("out of memory");
        return NULL;
    }
#define COPY(dst, idx)                                                                                      \
    do {                                                                                                    \
        const char *s_ = hs_profile_string(p, (idx));                                                       \
        size_t l_ = strlen(s_) + 1;                                                                         \
        memcpy(w, s_, l_);                                                                                  \
        (dst) = w;                                                                                          \
        w += l_;                                                                                            \
    } while (0)
    memset(t, 0, sizeof *t);
    t->n = p->n_sample_types;
    for (size_t i = 0; i < p->n_sample_types; i++) {
        COPY(t->type[i], p->sample_types[i].type);
        COPY(t->unit[i], p->sample_types[i].unit);
    }
    COPY(t->period_type, p->period_type.type);
    COPY(t->period_unit, p->period_type.unit);
#undef COPY
    t->period = p->period;
    t->default_index = hs_profile_default_index(p);
    return buf;
}

typedef struct {
    uint32_t stack; /* the cache stack */
    int64_t values[HS_STORE_MAX_VALUES];
} dsample;

/* The index of location id in p, SIZE_MAX when there is none. Ids are
 * usually 1..n in order (ours, Go's): that is checked here, inline, before
 * asking the profile's index. */
static inline size_t loc_index(const hs_profile *p, uint64_t id)
{
    if (id - 1 < p->n_locations && p->locations[id - 1].id == id)
        return (size_t)(id - 1);
    const hs_location *l = hs_profile_location(p, id);
    return l ? (size_t)(l - p->locations) : SIZE_MAX;
}

/* The samples of p into ds (merged by stack), *n_ds of them; under c->mu. */
static int decompose_samples(decomp *d, const hs_stack_options *o, dsample *ds, size_t *n_ds, char *err,
                             size_t errlen)
{
    const hs_profile *p = d->p;
    hs_stack_memo *c = d->c;
    cstate *s = &c->s;
    size_t nt = p->n_sample_types, n = 0;
    hs_idmap bymap = {0}; /* record hash -> index into ds */
    int rc = -1;
    if (hs_idmap_init(&bymap, p->n_samples) < 0)
        goto oom;
    for (size_t si = 0; si < p->n_samples; si++) {
        const hs_sample *sm = &p->samples[si];
        bool any = false;
        for (size_t v = 0; v < nt; v++)
            any |= sm->values[v] != 0;
        if (!any)
            continue;
        /* the key: locations, then labels (5 words each) */
        size_t kn = 2 + sm->n_locations + 5 * sm->n_labels;
        if (hs_vec_reserve((void **)&c->kbuf, &c->cap_kbuf, kn, sizeof *c->kbuf) < 0 ||
            hs_vec_reserve((void **)&c->labels, &c->cap_labels, sm->n_labels, sizeof *c->labels) < 0)
            goto oom;
        uint32_t *key = c->kbuf;
        size_t nf = 0;
        key[0] = (uint32_t)sm->n_locations;
        for (size_t k = 0; k < sm->n_locations; k++) {
            size_t li = loc_index(p, sm->location_ids[k]);
            if (li == SIZE_MAX) {
                ERR("sample %zu: unknown location %" PRIu64, si, sm->location_ids[k]);
                goto fail;
            }
            if (d->loc[li] == 0 && expand_location(d, &p->locations[li], li) < 0)
                goto oom;
            key[1 + k] = d->loc[li] - 1;
            nf += d->nfr[li];
        }
        if (nf > o->max_depth) {
            ERR("sample %zu: stack deeper than %zu frames (with inlined frames)", si, o->max_depth);
            goto fail;
        }
        id_label *labels = c->labels;
        size_t nl = 0;
        for (size_t k = 0; k < sm->n_labels; k++) {
            const hs_label *lb = &sm->labels[k];
            if (dropped(o, hs_profile_string(p, lb->key)))
                continue;
            labels[nl] = (id_label){pstr(d, lb->key), pstr(d, lb->str), pstr(d, lb->num_unit), lb->num};
            if (labels[nl].key == UINT32_MAX || labels[nl].str == UINT32_MAX || labels[nl].unit == UINT32_MAX)
                goto oom;
            nl++;
        }
        if (nl > 1)
            qsort_r(labels, nl, sizeof *labels, label_cmp, &s->e.strs);
        uint32_t *kl = key + 1 + sm->n_locations;
        *kl++ = (uint32_t)nl;
        for (size_t k = 0; k < nl; k++) {
            *kl++ = labels[k].key;
            *kl++ = labels[k].str;
            *kl++ = labels[k].unit;
            *kl++ = (uint32_t)(uint64_t)labels[k].num;
            *kl++ = (uint32_t)((uint64_t)labels[k].num >> 32);
        }
        kn = (size_t)(kl - key);
        uint32_t st = cache_stack(c, key, kn, sm->n_locations, nf, labels, nl);
        if (st == UINT32_MAX)
            goto oom;
        uint64_t h = s->hash[st];
        size_t slot = (size_t)-1;
        uint32_t cand;
        bool merged = false;
        while ((cand = hs_idmap_next(&bymap, h, &slot)) != UINT32_MAX) {
            if (ds[cand].stack == st) {
                for (size_t v = 0; v < nt; v++)
                    ds[cand].values[v] += sm->values[v];
                merged = true;
                break;
            }
            ERR("stack hash collision (%016" PRIx64 ")", h);
            goto fail;
        }
        if (merged)
            continue;
        dsample *x = &ds[n];
        memset(x, 0, sizeof *x);
        x->stack = st;
        for (size_t v = 0; v < nt; v++)
            x->values[v] = sm->values[v];
        if (hs_idmap_put(&bymap, h, (uint32_t)n) < 0)
            goto oom;
        n++;
    }
    *n_ds = n;
    rc = 0;
    goto done;
oom:
    ERR("out of memory");
fail:
done:
    hs_idmap_free(&bymap);
    return rc;
}

int hs_stack_decompose(const hs_profile *p, const hs_stack_options *opt, hs_store_profile *out,
                       hs_stack_parts **parts_out, char *err, size_t errlen)
{
    static const char *const default_drop[] = {"tid"};
    hs_stack_options o = {default_drop, 1, HS_STACK_DEFAULT_MAX_DEPTH, HS_STACK_DEFAULT_MAX_SAMPLES, NULL};
    if (opt) {
        if (opt->drop_labels) {
            o.drop_labels = opt->drop_labels;
            o.n_drop_labels = opt->n_drop_labels;
        }
        if (opt->max_depth)
            o.max_depth = opt->max_depth;
        if (opt->max_samples)
            o.max_samples = opt->max_samples;
        o.memo = opt->memo;
    }
    *parts_out = NULL;
    if (p->n_sample_types == 0) {
        ERR("profile has no sample types");
        return -1;
    }
    if (p->n_sample_types > HS_STORE_MAX_VALUES) {
        ERR("profile has %zu sample types; at most %d are supported", p->n_sample_types, HS_STORE_MAX_VALUES);
        return -1;
    }
    if (p->n_samples > o.max_samples) {
        ERR("profile has %zu samples; the limit is %zu", p->n_samples, o.max_samples);
        return -1;
    }
    int rc = -1;
    size_t nt = p->n_sample_types, n_ds = 0;
    hs_stack_memo *own = NULL, *c = o.memo;
    if (!c && !(c = own = hs_stack_memo_new(SIZE_MAX))) {
        ERR("out of memory");
        return -1;
    }
    decomp d = {.p = p, .c = c};
    dsample *ds = NULL;
    hs_stack_parts *parts = calloc(1, sizeof *parts);
    d.sid = malloc((p->n_strings ? p->n_strings : 1) * sizeof *d.sid);
    d.loc = calloc(p->n_locations ? p->n_locations : 1, sizeof *d.loc);
    d.nfr = malloc((p->n_locations ? p->n_locations : 1) * sizeof *d.nfr);
    ds = malloc((p->n_samples ? p->n_samples : 1) * sizeof *ds);
    pthread_mutex_lock(&c->mu);
    if (!parts || !d.sid || !d.loc || !d.nfr || !ds)
        goto oom;
    memset(d.sid, 0xff, (p->n_strings ? p->n_strings : 1) * sizeof *d.sid);
    if (!c->s.recs || cstate_bytes(&c->s) > c->max_bytes) { /* (no recs: a reset ran out of memory) */
        cstate_free(&c->s);
        if (cstate_init(&c->s) < 0)
            goto oom;
    }
    if (decompose_samples(&d, &o, ds, &n_ds, err, errlen) < 0)
        goto fail;

    parts->samples = malloc((n_ds ? n_ds : 1) * sizeof *parts->samples);
    parts->stacks = malloc((n_ds ? n_ds : 1) * sizeof *parts->stacks);
    if (!parts->samples || !parts->stacks)
        goto oom;
    parts->recs = c->s.recs;
    atomic_fetch_add(&parts->recs->refs, 1);
    parts->type_strings = copy_types(p, &out->types, err, errlen);
    if (!parts->type_strings)
        goto fail;
    memset(out->totals, 0, sizeof out->totals);
    for (size_t i = 0; i < n_ds; i++) {
        const recref *r = &c->s.rec[ds[i].stack];
        uint64_t h = c->s.hash[ds[i].stack];
        parts->samples[i].stack = h;
        memcpy(parts->samples[i].values, ds[i].values, sizeof ds[i].values);
        parts->stacks[i] = (hs_store_stack){h, r->p, r->n};
        for (size_t v = 0; v < nt; v++)
            out->totals[v] += ds[i].values[v];
    }
    out->samples = parts->samples;
    out->n_samples = n_ds;
    out->stacks = parts->stacks;
    out->n_stacks = n_ds;
    *parts_out = parts;
    parts = NULL;
    rc = 0;
    goto done;
oom:
    ERR("out of memory");
fail:
done:
    pthread_mutex_unlock(&c->mu);
    hs_stack_parts_free(parts);
    hs_stack_memo_free(own);
    free(d.sid);
    free(d.loc);
    free(d.nfr);
    free(ds);
    return rc;
}

/* ---- rebuilding a profile ---- */

/* Each record's strings are interned into the new profile first; frames
 * are then tuples of string indices and a run of frames (one location) is
 * found by hashing its tuples. */
typedef struct {
    hs_profile *p;
    hs_idmap locs;       /* hash of a frame run -> index into the keys */
    hs_bytes keys;            /* the runs' keys (int64 tuples), back to back */
    size_t *key_off, *key_len;
    uint64_t *loc_id;
    size_t n_locs, cap_locs;
    hs_idmap maps;       /* mapping file name (string index) -> index into map_ids */
    uint64_t *map_ids;
    int64_t *map_names;
    size_t n_maps, cap_maps;
    int64_t *idx;         /* the current record's string table -> profile string index */
    size_t cap_idx;
    int64_t *key;         /* scratch */
    size_t cap_key;
} builder;

static uint64_t mapping_for(builder *b, int64_t file)
{
    if (file == 0)
        return 0;
    uint64_t h = hs_mix64((uint64_t)file);
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&b->maps, h, &slot)) != UINT32_MAX)
        if (b->map_names[c] == file)
            return b->map_ids[c];
    if (b->n_maps == b->cap_maps) {
        size_t nc = b->cap_maps ? b->cap_maps * 2 : 16;
        if (resize((void **)&b->map_ids, nc, sizeof *b->map_ids) < 0 ||
            resize((void **)&b->map_names, nc, sizeof *b->map_names) < 0)
            return UINT64_MAX;
        b->cap_maps = nc;
    }
    uint64_t id = hs_profile_add_mapping(b->p, 0, 0, 0, hs_profile_string(b->p, file), "");
    if (!id)
        return UINT64_MAX;
    hs_mapping *m = &b->p->mappings[b->p->n_mappings - 1];
    m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = true;
    b->map_ids[b->n_maps] = id;
    b->map_names[b->n_maps] = file;
    if (hs_idmap_put(&b->maps, h, (uint32_t)b->n_maps) < 0)
        return UINT64_MAX;
    b->n_maps++;
    return id;
}

/* The location of frames f[0..n) of pr (an inline run ending in its outer
 * frame); 0 on out of memory. */
static uint64_t location_for(builder *b, const parsed *pr, const ref_frame *f, size_t n)
{
    if (hs_vec_reserve((void **)&b->key, &b->cap_key, n * 6, sizeof *b->key) < 0)
        return 0;
    const int64_t *idx = b->idx;
    int64_t *k = b->key;
    for (size_t i = 0; i < n; i++) {
        *k++ = idx[f[i].fn];
        *k++ = idx[f[i].sys];
        *k++ = idx[f[i].file];
        *k++ = idx[f[i].map];
        *k++ = f[i].line;
        *k++ = f[i].start_line;
    }
    size_t kl = n * 6 * sizeof *b->key;
    uint64_t h = hs_stack_hash(b->key, kl);
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&b->locs, h, &slot)) != UINT32_MAX)
        if (b->key_len[c] == kl && memcmp(b->keys.p + b->key_off[c], b->key, kl) == 0)
            return b->loc_id[c];
    if (b->n_locs == b->cap_locs) {
        size_t nc = b->cap_locs ? b->cap_locs * 2 : 256;
        if (resize((void **)&b->loc_id, nc, sizeof *b->loc_id) < 0 ||
            resize((void **)&b->key_off, nc, sizeof *b->key_off) < 0 ||
            resize((void **)&b->key_len, nc, sizeof *b->key_len) < 0)
            return 0;
        b->cap_locs = nc;
    }
    hs_line lines[64], *lp = n <= 64 ? lines : malloc(n * sizeof *lp);
    if (!lp)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t fid = hs_profile_add_function(b->p, pr->s[f[i].fn], pr->s[f[i].sys], pr->s[f[i].file],
                                               f[i].start_line);
        if (!fid) {
            if (lp != lines)
                free(lp);
            return 0;
        }
        lp[i] = (hs_line){fid, f[i].line, 0};
    }
    uint64_t map = mapping_for(b, idx[f[n - 1].map]);
    uint64_t id = map == UINT64_MAX ? 0 : hs_profile_add_location(b->p, map, 0, lp, n);
    if (lp != lines)
        free(lp);
    if (!id)
        return 0;
    b->key_off[b->n_locs] = b->keys.n;
    b->key_len[b->n_locs] = kl;
    b->loc_id[b->n_locs] = id;
    hs_bytes_put(&b->keys, b->key, kl);
    if (b->keys.oom || hs_idmap_put(&b->locs, h, (uint32_t)b->n_locs) < 0)
        return 0;
    b->n_locs++;
    return id;
}

/* pprof takes the first mapping for the main binary ("File:" in reports);
 * records do not say which it was, so put first the first mapping that is
 * not a shared object or a pseudo-file like [vdso]: swap the two mappings'
 * contents (ids stay in their slots) and the locations' references. */
static void main_mapping_first(hs_profile *p)
{
    size_t k = 0;
    for (; k < p->n_mappings; k++) {
        const char *f = basename_of(hs_profile_string(p, p->mappings[k].filename));
        if (*f && *f != '[' && !strstr(f, ".so"))
            break;
    }
    if (k == 0 || k == p->n_mappings)
        return;
    uint64_t a = p->mappings[0].id, b = p->mappings[k].id;
    hs_mapping t = p->mappings[0];
    p->mappings[0] = p->mappings[k];
    p->mappings[k] = t;
    p->mappings[0].id = a;
    p->mappings[k].id = b;
    for (size_t i = 0; i < p->n_locations; i++) {
        if (p->locations[i].mapping_id == a)
            p->locations[i].mapping_id = b;
        else if (p->locations[i].mapping_id == b)
            p->locations[i].mapping_id = a;
    }
}

hs_profile *hs_stack_build_profile(const hs_store_merged *m, hs_stack_lookup_fn lookup, void *arg,
                                   size_t *missing, char *err, size_t errlen)
{
    size_t n_missing = 0;
    builder b = {0};
    parsed pr = {0};
    uint64_t *ids = NULL;
    hs_label *labels = NULL;
    size_t cap_ids = 0, cap_labels = 0;
    b.p = hs_profile_new();
    if (!b.p || hs_idmap_init(&b.locs, 1024) < 0 || hs_idmap_init(&b.maps, 16) < 0)
        goto oom;
    if (m->types.n == 0 || m->types.n > HS_STORE_MAX_VALUES) {
        ERR("merged result has %zu sample types", m->types.n);
        goto fail;
    }
    for (size_t i = 0; i < m->types.n; i++)
        if (hs_profile_add_sample_type(b.p, m->types.type[i], m->types.unit[i]) < 0)
            goto oom;
    hs_profile_set_period(b.p, m->types.period_type ? m->types.period_type : "",
                          m->types.period_unit ? m->types.period_unit : "", m->types.period);
    if (m->types.default_index >= 0 && (size_t)m->types.default_index < m->types.n)
        b.p->default_sample_type = hs_profile_str(b.p, m->types.type[m->types.default_index]);
    b.p->time_nanos = m->min_start_ns;
    b.p->duration_nanos = m->max_end_ns > m->min_start_ns ? m->max_end_ns - m->min_start_ns : 0;

    for (size_t r = 0; r < m->n_rows; r++) {
        size_t len = 0;
        const void *data = lookup(arg, m->rows[r].stack, &len);
        if (!data) {
            n_missing++;
            continue;
        }
        if (parse_record(data, len, &pr, err, errlen) < 0)
            goto fail;
        if (hs_vec_reserve((void **)&b.idx, &b.cap_idx, pr.ns, sizeof *b.idx) < 0 ||
            hs_vec_reserve((void **)&ids, &cap_ids, pr.nf, sizeof *ids) < 0 ||
            hs_vec_reserve((void **)&labels, &cap_labels, pr.nl, sizeof *labels) < 0)
            goto oom;
        b.idx[0] = 0;
        for (size_t i = 1; i < pr.ns; i++)
            if ((b.idx[i] = hs_profile_str(b.p, pr.s[i])) < 0)
                goto oom;
        size_t nl = 0;
        for (size_t i = 0; i < pr.nf;) {
            size_t j = i;
            while (j + 1 < pr.nf && pr.f[j].inlined)
                j++;
            uint64_t id = location_for(&b, &pr, pr.f + i, j - i + 1);
            if (!id)
                goto oom;
            ids[nl++] = id;
            i = j + 1;
        }
        for (size_t i = 0; i < pr.nl; i++)
            labels[i] = (hs_label){b.idx[pr.l[i].key], b.idx[pr.l[i].str], pr.l[i].num, b.idx[pr.l[i].unit]};
        if (hs_profile_add_sample(b.p, ids, nl, m->rows[r].values, labels, pr.nl) < 0)
            goto oom;
    }
    main_mapping_first(b.p);
    if (missing)
        *missing = n_missing;
    goto done;
oom:
    ERR("out of memory");
fail:
    hs_profile_free(b.p);
    b.p = NULL;
done:
    parsed_free(&pr);
    hs_idmap_free(&b.locs);
    hs_idmap_free(&b.maps);
    free(b.keys.p);
    free(b.key);
    free(b.key_off);
    free(b.key_len);
    free(b.loc_id);
    free(b.map_ids);
    free(b.map_names);
    free(b.idx);
    free(ids);
    free(labels);
    return b.p;
}

/* hs_stack_build_from_store: records fetched into a map, then built. */
typedef struct {
    hs_idmap map; /* hash -> index */
    uint64_t *hashes;
    size_t *off, *len;
    size_t n, cap;
    hs_bytes data;
    int oom;
} record_set;

static void record_set_add(void *arg, uint64_t hash, const void *data, size_t len)
{
    record_set *rs = arg;
    if (rs->oom)
        return;
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? rs->cap * 2 : 256;
        uint64_t *nh = realloc(rs->hashes, nc * sizeof *nh);
        size_t *no = nh ? realloc(rs->off, nc * sizeof *no) : NULL;
        if (nh)
            rs->hashes = nh;
        if (no)
            rs->off = no;
        size_t *nl = no ? realloc(rs->len, nc * sizeof *nl) : NULL;
        if (!nl) {
            rs->oom = 1;
            return;
        }
        rs->len = nl;
        rs->cap = nc;
    }
    rs->hashes[rs->n] = hash;
    rs->off[rs->n] = rs->data.n;
    rs->len[rs->n] = len;
    hs_bytes_put(&rs->data, data, len);
    if (rs->data.oom || hs_idmap_put(&rs->map, hash, (uint32_t)rs->n) < 0) {
        rs->oom = 1;
        return;
    }
    rs->n++;
}

static const void *record_set_lookup(void *arg, uint64_t hash, size_t *len)
{
    record_set *rs = arg;
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&rs->map, hash, &slot)) != UINT32_MAX)
        if (rs->hashes[c] == hash) {
            *len = rs->len[c];
            return rs->data.p + rs->off[c];
        }
    return NULL;
}

hs_profile *hs_stack_build_from_store(hs_store *s, const hs_store_merged *m, size_t *missing, char *err,
                                      size_t errlen)
{
    record_set rs = {0};
    hs_profile *p = NULL;
    uint64_t *hashes = malloc((m->n_rows ? m->n_rows : 1) * sizeof *hashes);
    if (!hashes || hs_idmap_init(&rs.map, m->n_rows) < 0) {
        free(hashes);
        ERR("out of memory");
        return NULL;
    }
    for (size_t i = 0; i < m->n_rows; i++)
        hashes[i] = m->rows[i].stack;
    if (hs_store_get_stacks(s, hashes, m->n_rows, record_set_add, &rs, err, errlen) < 0)
        goto done;
    if (rs.oom) {
        ERR("out of memory");
        goto done;
    }
    p = hs_stack_build_profile(m, record_set_lookup, &rs, missing, err, errlen);
done:
    free(hashes);
    hs_idmap_free(&rs.map);
    free(rs.hashes);
    free(rs.off);
    free(rs.len);
    free(rs.data.p);
    return p;
}

/* ---- profile ids ---- */

static void id_update_str(XXH3_state_t *st, const char *s)
{
    s = s ? s : "";
    uint64_t n = strlen(s);
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, s, n);
}

void hs_stack_profile_id(const void *body, size_t len, const hs_store_profile *meta, char out[33])
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    uint64_t n = len;
    XXH3_128bits_update(&st, &n, sizeof n);
    XXH3_128bits_update(&st, body, len);
    id_update_str(&st, meta->service);
    id_update_str(&st, meta->type);
    id_update_str(&st, meta->version);
    n = meta->n_labels;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < meta->n_labels; i++) {
        id_update_str(&st, meta->labels[i].key);
        id_update_str(&st, meta->labels[i].value);
    }
    int64_t t[2] = {meta->start_ns, meta->duration_ns};
    XXH3_128bits_update(&st, t, sizeof t);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64, (uint64_t)h.low64);
}
