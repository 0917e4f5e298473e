/* stack_decompose.c — a profile into stack records and samples
 * (hs_stack_decompose), through the memo (hs_stack_memo) the server shares
 * between uploads, and the names of unsymbolized frames
 * (hs_stack_unnamed_format/parse).
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
#include "store/stack_internal.h"

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
    st_encoder_free(&s->e);
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
    if (st_encoder_init(&s->e) < 0)
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
    uint32_t id = st_intern(&s->e, str);
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

const char *st_basename_of(const char *path)
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
                    const char *file = st_basename_of(hs_profile_string(p, m->filename));
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
    if (st_encode_ids(&s->e, c->frames, nf, l, nl, &c->rec) < 0)
        return UINT32_MAX;
    const unsigned char *rec = recstore_add(s->recs, c->rec.p, c->rec.n);
    if (!rec)
        return UINT32_MAX;
    size_t need = s->n_stack + 1;
    size_t cap = s->cap_stack;
    if (need > cap) {
        size_t nc = cap ? cap * 2 : 1024;
        if (st_resize((void **)&s->key, nc, sizeof *s->key) < 0 || st_resize((void **)&s->rec, nc, sizeof *s->rec) < 0 ||
            st_resize((void **)&s->hash, nc, sizeof *s->hash) < 0)
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

const char *const hs_stack_default_drop[] = {"tid"};
const size_t hs_stack_n_default_drop = sizeof hs_stack_default_drop / sizeof hs_stack_default_drop[0];

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
            qsort_r(labels, nl, sizeof *labels, st_label_cmp, &s->e.strs);
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
    hs_stack_options o = {hs_stack_default_drop, hs_stack_n_default_drop, HS_STACK_DEFAULT_MAX_DEPTH, HS_STACK_DEFAULT_MAX_SAMPLES, NULL};
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
