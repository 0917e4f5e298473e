/* query_view.c — the view of stored profiles straight from the merged
 * stack rows: each row's record is read (store/stack.h, hs_stack_read),
 * the view's rules (analysis/filters.h: which lines of a location show,
 * which locations of a sample stay, whether its labels pass the tag
 * filters, what keys and names a node has) decide what it keeps, and the
 * kept stacks become an hs_view (hs_view_from_parts) that every answer
 * reads as the CLI's reports read theirs: the flame graph's call tree,
 * the function table and diff (hs_graph), peek (hs_peek_compute), source
 * (hs_list_compute), the callers/callees sandwich. No profile is rebuilt
 * from the rows for any of them.
 *
 * What is this file's own is how a record gives the rules their inputs: a
 * run of inlined frames and the frame they were inlined into is one
 * location whose lines are those frames (innermost first) and whose
 * mapping is its outer frame's (none when that name is ""), as the file's
 * location was; match bits are worked out once per distinct string.
 * tests/unit/test_query.c compares every answer with the CLI's analysis of
 * the same profiles (hs_view_build on the files), over a matrix of
 * granularities, filters, tag filters, sample indexes and selections. */
#include <stdlib.h>
#include <string.h>

#include "analysis/filters.h"
#include "base/err.h"
#include "base/hashmap.h"
#include "base/strtab.h"
#include "server/query_cache.h"
#include "server/query_internal.h"
#include "store/stack.h"
#include "base/vec.h"

enum { FM_KNOWN = 128 }; /* beside filters.h's HS_FM_* bits */

/* what is known of one interned string */
typedef struct {
    uint32_t fnode; /* its node at functions granularity, UINT32_MAX: not yet */
    uint32_t clean; /* the string as a node's file (trimmed, cleaned), UINT32_MAX: not yet */
    uint8_t bits;   /* FM_* matches, FM_KNOWN once computed */
} str_info;


struct hs_q_view_priv {
    hs_strtab strs; /* moved into the view when it is made */
    str_info *si;
    size_t cap_si;
    hs_node *nodes; /* likewise */
    hs_an_node_key *keys;
    const char **bids;  /* per node: the build ID of an unnamed frame's object, or NULL */
    const char **files; /* per node: its file, or its function's first non-empty one */
    size_t n_nodes, cap_nodes;
    hs_idmap node_map;
};

typedef struct {
    struct hs_q_view_priv *t;
    const hs_analysis_options *o;
    const hs_an_filters *f;
    uint32_t empty;
    bool fn_files; /* find each function node's file (hs_q_view.files) */
    /* the current record */
    hs_stack_refs r;
    uint32_t *gid; /* record string -> string id, UINT32_MAX: not yet */
    size_t cap_gid;
    /* the current record's locations, leaf first */
    uint32_t *loc_start, *loc_n; /* frame range */
    uint8_t *loc_dec;            /* HS_LOC_* */
    uint32_t *pos;               /* hs_an_sample_rule's answer */
    uint8_t *keep, *lb;          /* per frame: shown, match bits */
    size_t cap_locs, cap_frames;
} reader_ctx;


/* Intern s; its str_info is set up the first time. */
static uint32_t intern(struct hs_q_view_priv *t, const char *s, size_t len)
{
    size_t before = t->strs.n;
    uint32_t id = hs_strtab_intern_len(&t->strs, s, len);
    if (id == UINT32_MAX || t->strs.n == before)
        return id;
    if (hs_vec_reserve((void **)&t->si, &t->cap_si, t->strs.n, sizeof *t->si) < 0)
        return UINT32_MAX;
    t->si[id] = (str_info){UINT32_MAX, UINT32_MAX, 0};
    return id;
}

static const char *str(const reader_ctx *c, uint32_t id)
{
    return c->t->strs.strs[id];
}

/* The string id of the record's string i. */
static uint32_t sid(reader_ctx *c, uint32_t i)
{
    if (c->gid[i] == UINT32_MAX)
        c->gid[i] = i == 0 ? c->empty : intern(c->t, c->r.strings[i], c->r.string_lens[i]);
    return c->gid[i];
}

/* hs_an_name_bits of string id s (HS_FM_PRUNE: as a function's name). */
static uint8_t bits(reader_ctx *c, uint32_t s)
{
    str_info *si = &c->t->si[s];
    if (!(si->bits & FM_KNOWN))
        si->bits = FM_KNOWN | hs_an_name_bits(c->f, str(c, s));
    return (uint8_t)(si->bits & ~FM_KNOWN);
}

/* hs_an_function_bits of a frame's function; 0xff: out of memory. */
static uint8_t frame_bits(reader_ctx *c, const hs_stack_ref_frame *fr)
{
    uint32_t a = sid(c, fr->fn), b = sid(c, fr->file);
    if (a == UINT32_MAX || b == UINT32_MAX)
        return 0xff;
    return bits(c, a) | (bits(c, b) & ~HS_FM_PRUNE);
}

/* The mapping of a location whose outer frame is fr: its file's string id,
 * or UINT32_MAX for none (hs_stack_build_profile makes no mapping for "").
 * *oom on failure. */
static uint32_t loc_mapping(reader_ctx *c, const hs_stack_ref_frame *fr, bool *oom)
{
    if (fr->map == 0 || !*c->r.strings[fr->map])
        return UINT32_MAX;
    uint32_t s = sid(c, fr->map);
    if (s == UINT32_MAX)
        *oom = true;
    return s;
}

/* A file name as a node has it (hs_an_node_file), once per string. */
static uint32_t node_file(reader_ctx *c, uint32_t s)
{
    str_info *si = &c->t->si[s];
    if (si->clean != UINT32_MAX)
        return si->clean;
    char *cf = hs_an_node_file(str(c, s), c->o->untrimmed_paths, c->o->trim_path, c->o->source_path);
    uint32_t out = cf ? intern(c->t, cf, strlen(cf)) : UINT32_MAX;
    free(cf);
    if (out == UINT32_MAX)
        return UINT32_MAX;
    c->t->si[s].clean = out; /* si may have moved */
    return out;
}

static uint64_t key_hash(const hs_an_node_key *k)
{
    uint64_t h = hs_mix64(((uint64_t)k->function << 32) ^ k->file);
    h = hs_mix64(h ^ ((uint64_t)k->objfile << 17) ^ (uint64_t)k->line);
    return hs_mix64(h ^ (uint64_t)k->start_line);
}

static uint32_t node_of_key(reader_ctx *c, const hs_an_node_key *k)
{
    struct hs_q_view_priv *t = c->t;
    uint64_t h = key_hash(k);
    size_t slot = (size_t)-1;
    uint32_t id;
    while ((id = hs_idmap_next(&t->node_map, h, &slot)) != UINT32_MAX) {
        const hs_an_node_key *o = &t->keys[id];
        if (o->function == k->function && o->file == k->file && o->objfile == k->objfile && o->line == k->line &&
            o->start_line == k->start_line)
            return id;
    }
    if (t->n_nodes >= UINT32_MAX - 1 ||
        hs_vec_reserve((void **)&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *t->nodes) < 0)
        return UINT32_MAX;
    size_t cap = t->cap_nodes;
    void *nk = realloc(t->keys, cap * sizeof *t->keys);
    if (!nk)
        return UINT32_MAX;
    t->keys = nk;
    void *nb = realloc(t->bids, cap * sizeof *t->bids);
    if (!nb)
        return UINT32_MAX;
    t->bids = nb;
    t->bids[t->n_nodes] = NULL;
    void *nf = realloc(t->files, cap * sizeof *t->files);
    if (!nf)
        return UINT32_MAX;
    t->files = nf;
    hs_node *n = &t->nodes[t->n_nodes];
    memset(n, 0, sizeof *n);
    n->function = str(c, k->function);
    n->file = str(c, k->file);
    n->objfile = str(c, k->objfile);
    n->line = k->line;
    n->start_line = k->start_line;
    char *name = hs_an_printable_name(n->function, n->file, n->objfile, n->line, 0);
    uint32_t nid = name ? intern(t, name, strlen(name)) : UINT32_MAX;
    free(name);
    if (nid == UINT32_MAX)
        return UINT32_MAX;
    n = &t->nodes[t->n_nodes];
    /* interning may have moved nothing the node points to: strtab strings
     * are stable pointers */
    n->name = t->strs.strs[nid];
    id = (uint32_t)t->n_nodes;
    t->files[id] = n->file;
    if (hs_idmap_put(&t->node_map, h, id) < 0)
        return UINT32_MAX;
    t->keys[id] = *k;
    t->n_nodes++;
    return id;
}

/* At function granularity a node has no file: the function table shows
 * the first non-empty file recorded with its function. 0, or -1 on out of
 * memory. */
static int node_fn_file(reader_ctx *c, uint32_t id, const hs_stack_ref_frame *fr)
{
    uint32_t s = sid(c, fr->file);
    if (s == UINT32_MAX)
        return -1;
    c->t->files[id] = str(c, s);
    return 0;
}

/* The node of frame fr of a location with mapping obj (a string id, or
 * UINT32_MAX), keyed by hs_an_node_key_of. */
static uint32_t frame_node(reader_ctx *c, const hs_stack_ref_frame *fr, uint32_t obj)
{
    hs_granularity g = c->o->granularity;
    uint32_t name = g == HS_GRAN_FILES ? c->empty : sid(c, fr->fn);
    if (name == UINT32_MAX)
        return UINT32_MAX;
    bool named = *str(c, name) != 0;
    if (g == HS_GRAN_FUNCTIONS && named && c->t->si[name].fnode != UINT32_MAX) {
        uint32_t id = c->t->si[name].fnode;
        if (c->fn_files && !*c->t->files[id] && fr->file && node_fn_file(c, id, fr) < 0)
            return UINT32_MAX;
        return id;
    }
    uint32_t file = c->empty;
    if (g != HS_GRAN_FUNCTIONS) {
        file = sid(c, fr->file);
        file = file == UINT32_MAX ? UINT32_MAX : node_file(c, file);
        if (file == UINT32_MAX)
            return UINT32_MAX;
    }
    hs_an_node_key k;
    hs_an_node_key_of(&k, g, false, c->empty, true, name, named, file, obj == UINT32_MAX ? c->empty : obj, fr->line,
                      fr->start_line, 0);
    uint32_t id = node_of_key(c, &k);
    if (id != UINT32_MAX && g == HS_GRAN_FUNCTIONS && named) {
        c->t->si[name].fnode = id;
        if (c->fn_files && !*c->t->files[id] && fr->file && node_fn_file(c, id, fr) < 0)
            return UINT32_MAX;
    }
    /* an unnamed frame (store/stack.h: system name build-id:ID:OFF:REL)
     * tells its object's build ID, for the answer to show */
    const char *sys = c->r.strings[fr->sys];
    if (id != UINT32_MAX && !c->t->bids[id] && strncmp(sys, "build-id:", 9) == 0) {
        char bid[HS_BUILD_ID_MAX + 1];
        uint64_t off, rel;
        if (hs_stack_unnamed_parse(sys, bid, &off, &rel)) {
            uint32_t b = intern(c->t, bid, strlen(bid));
            if (b == UINT32_MAX)
                return UINT32_MAX;
            c->t->bids[id] = c->t->strs.strs[b];
        }
    }
    return id;
}

/* Split the record's frames into locations and decide each one
 * (hs_an_location_rule: c->keep, the shown lines; c->loc_dec). Returns the
 * number of locations, or -1 on out of memory. */
static long locations(reader_ctx *c, bool filters)
{
    const hs_stack_ref_frame *fr = c->r.frames;
    size_t nf = c->r.n_frames, nl = 0;
    if (nf + 1 > c->cap_frames) {
        size_t cap = c->cap_frames;
        if (hs_vec_reserve((void **)&c->keep, &cap, nf + 1, 1) < 0)
            return -1;
        cap = c->cap_frames;
        if (hs_vec_reserve((void **)&c->lb, &cap, nf + 1, 1) < 0)
            return -1;
        c->cap_frames = cap;
    }
    for (size_t i = 0; i < nf;) {
        size_t j = i;
        while (j + 1 < nf && fr[j].inlined)
            j++;
        if (nl + 1 > c->cap_locs) {
            size_t cap = c->cap_locs;
            if (hs_vec_reserve((void **)&c->loc_start, &cap, nl + 1, sizeof *c->loc_start) < 0)
                return -1;
            cap = c->cap_locs;
            if (hs_vec_reserve((void **)&c->loc_n, &cap, nl + 1, sizeof *c->loc_n) < 0)
                return -1;
            cap = c->cap_locs;
            if (hs_vec_reserve((void **)&c->loc_dec, &cap, nl + 1, 1) < 0)
                return -1;
            cap = c->cap_locs;
            if (hs_vec_reserve((void **)&c->pos, &cap, nl + 1, sizeof *c->pos) < 0)
                return -1;
            c->cap_locs = cap;
        }
        c->loc_start[nl] = (uint32_t)i;
        c->loc_n[nl] = (uint32_t)(j - i + 1);
        c->loc_dec[nl] = HS_LOC_FOCUSED;
        memset(c->keep + i, 1, j - i + 1);
        nl++;
        i = j + 1;
    }
    if (!filters)
        return (long)nl;
    for (size_t l = 0; l < nl; l++) {
        const hs_stack_ref_frame *L = fr + c->loc_start[l];
        uint8_t *lb = c->lb + c->loc_start[l];
        size_t n = c->loc_n[l];
        bool oom = false;
        uint32_t map = loc_mapping(c, &L[n - 1], &oom);
        if (oom)
            return -1;
        uint8_t mb = map == UINT32_MAX ? 0 : (uint8_t)(bits(c, map) & ~HS_FM_PRUNE);
        for (size_t k = 0; k < n; k++)
            if ((lb[k] = frame_bits(c, &L[k])) == 0xff)
                return -1;
        c->loc_dec[l] = hs_an_location_rule(c->f, mb, lb, n, c->keep + c->loc_start[l]);
    }
    return (long)nl;
}

/* The record's labels as the tag filters read them. */
static void record_label(const void *arg, size_t i, hs_an_label *out)
{
    const hs_stack_refs *r = arg;
    const hs_stack_ref_label *l = &r->labels[i];
    out->key = r->strings[l->key];
    out->str = l->str ? r->strings[l->str] : NULL;
    out->unit = r->strings[l->unit];
    out->num = l->num;
}

/* The rules on the record's nl locations: false when the sample is
 * dropped, else *kept (leaf first, into the location arrays, compacted)
 * are its locations. */
static bool sample_keep(reader_ctx *c, size_t nl, size_t *kept)
{
    size_t n;
    if (!hs_an_sample_rule(c->f, c->loc_dec, nl, c->pos, &n) ||
        !hs_an_tags_keep(c->f, &c->r, c->r.n_labels, record_label))
        return false;
    for (size_t j = 0; j < n; j++) { /* pos[j] >= j: in place */
        uint32_t k = c->pos[j];
        c->loc_start[j] = c->loc_start[k];
        c->loc_n[j] = c->loc_n[k];
        c->loc_dec[j] = c->loc_dec[k];
    }
    *kept = n;
    return true;
}

/* The sample index the view uses for types t, or -1 when it refuses the
 * one asked for (with its message in err, as `hotspur top` gives it: the
 * view of a profile of those types and no samples says it). */
static int view_sample_index(const hs_store_types *t, const hs_analysis_options *o, char *err, size_t errlen)
{
    hs_profile *p = hs_q_types_profile(t);
    if (!p) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    int si = o->sample_index ? hs_profile_sample_index(p, o->sample_index) : hs_profile_default_index(p);
    if (!o->sample_index && (si < 0 || (size_t)si >= t->n))
        si = (int)t->n - 1;
    if (si < 0 || (size_t)si >= t->n) {
        si = -1;
        hs_view *v = hs_view_build(&p, 1, NULL, 0, o, err, errlen);
        if (v) { /* cannot be: it is the same rule */
            hs_view_free(v);
            hs_err(err, errlen, "sample index '%s' not found", o->sample_index);
        }
    }
    hs_profile_free(p);
    return si;
}

/* Options the view has and the server never sets (query.c parses none of
 * them): not read here. */
static bool server_options(const hs_analysis_options *o)
{
    return !o->prune_from && !o->noinlines && !o->n_base && !o->mean && !o->relative && !o->obj_names &&
           !o->normalize && !o->each_sample;
}

void hs_q_view_free(hs_q_view *out)
{
    hs_view_free(out->v);
    struct hs_q_view_priv *t = out->priv;
    if (t) {
        if (!out->v) { /* else the view has them */
            hs_strtab_free(&t->strs);
            free(t->nodes);
        }
        hs_idmap_free(&t->node_map);
        free(t->si);
        free(t->keys);
        free(t->bids);
        free(t->files);
        free(t);
    }
    memset(out, 0, sizeof *out);
}

/* What the sides' rows become: the stacks, their nodes and inline marks. */
typedef struct {
    hs_stack *stacks;
    size_t n_stacks, cap_stacks;
    uint32_t *arena;
    uint8_t *inl;
    size_t n_arena, cap_arena;
    int64_t total, kept; /* this side's: sum |value| of every row, sum value of the kept */
} stack_out;

/* Room for n more nodes in out's arenas. 0, or -1 on out of memory. */
static int arena_grow(stack_out *out, size_t n)
{
    size_t cap = out->cap_arena;
    if (hs_vec_reserve((void **)&out->arena, &cap, out->n_arena + n, sizeof *out->arena) < 0)
        return -1;
    cap = out->cap_arena;
    if (hs_vec_reserve((void **)&out->inl, &cap, out->n_arena + n, 1) < 0)
        return -1;
    out->cap_arena = cap;
    return 0;
}

/* Read side s's rows (is_base: as the diff's base) into out. 0, or an
 * HTTP status with the message in err. */
static int read_side(hs_q *q, reader_ctx *c, const hs_q_side *s, bool is_base, int si, stack_out *out, char *err,
                     size_t errlen)
{
    const hs_store_merged *m = &s->merged;
    const hs_an_filters *f = c->f;
    bool filters = hs_an_filters_by_name(f) || f->noinlines;
    bool tags = f->has_tagfocus || f->has_tagignore;
    const unsigned char **rec = malloc((m->n_rows + 1) * sizeof *rec);
    size_t *len = malloc((m->n_rows + 1) * sizeof *len);
    hs_stack_reader *rd = hs_stack_reader_new();
    hs_row_records *recs = NULL;
    size_t n_missing = 0;
    int rc = 500;
    bool told = false; /* err says what failed; else it was memory */
    if (!rec || !len || !rd ||
        hs_vec_reserve((void **)&out->stacks, &out->cap_stacks, out->n_stacks + m->n_rows, sizeof *out->stacks) < 0)
        goto done;
    int src = 0;
    if (m->n_rows && !(recs = hs_stack_cache_records(q->qc->cache, q->qc->store, m, rec, len, &src, err, errlen))) {
        rc = src == HS_STORE_UNAVAILABLE ? 503 : 500;
        told = true;
        goto done;
    }
    for (size_t r = 0; r < m->n_rows; r++) {
        if (!rec[r]) {
            n_missing++;
            continue;
        }
        if (hs_stack_read(rd, rec[r], len[r], &c->r, err, errlen) < 0) {
            told = true;
            goto done;
        }
        int64_t v = m->rows[r].values[si];
        out->total += v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
        if (hs_vec_reserve((void **)&c->gid, &c->cap_gid, c->r.n_strings, sizeof *c->gid) < 0)
            goto done;
        memset(c->gid, 0xff, c->r.n_strings * sizeof *c->gid);
        long nl = locations(c, filters);
        if (nl < 0)
            goto done;
        size_t kept = (size_t)nl;
        if ((filters || tags) && !sample_keep(c, (size_t)nl, &kept))
            continue;
        out->kept += v;
        if (out->n_arena + c->r.n_frames > out->cap_arena && arena_grow(out, c->r.n_frames) < 0)
            goto done;
        /* locals: the inline marks' byte stores could alias the fields */
        uint32_t *arena = out->arena;
        uint8_t *inls = out->inl;
        size_t start = out->n_arena, at = start;
        for (size_t l = kept; l-- > 0;) { /* root first */
            const hs_stack_ref_frame *L = c->r.frames + c->loc_start[l];
            const uint8_t *keep = c->keep + c->loc_start[l];
            size_t n = c->loc_n[l];
            bool oom = false;
            uint32_t obj = loc_mapping(c, &L[n - 1], &oom);
            if (oom)
                goto done;
            uint8_t inl = 0; /* the location's outermost shown line is not inlined */
            for (size_t k = n; k-- > 0;) {
                if (!keep[k])
                    continue;
                uint32_t id = frame_node(c, &L[k], obj);
                if (id == UINT32_MAX)
                    goto done;
                inls[at] = inl;
                arena[at++] = id;
                inl = 1;
            }
        }
        out->n_arena = at;
        /* .nodes and .inl hold offsets until the arena is final */
        out->stacks[out->n_stacks++] = (hs_stack){.nodes = (const uint32_t *)(uintptr_t)start,
                                                  .n = (uint32_t)(at - start),
                                                  .n_samples = 1,
                                                  .value = is_base ? 0 : v,
                                                  .base = is_base ? v : 0};
    }
    if (n_missing)
        fprintf(stderr, "hotspur serve: %zu stack records missing from the store\n", n_missing);
    rc = 0;
done:
    if (rc && !told)
        hs_err(err, errlen, "out of memory");
    hs_stack_reader_free(rd);
    hs_row_records_free(recs);
    free(rec);
    free(len);
    return rc;
}

int hs_q_view_build(hs_q *q, const hs_q_side *cur, const hs_q_side *base, hs_q_view *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!server_options(&q->o)) {
        hs_err(err, errlen, "an analysis option the server does not take was set");
        return 500;
    }
    int si = view_sample_index(&q->types, &q->o, err, errlen);
    if (si < 0)
        return 400;
    hs_an_filters f;
    if (hs_an_filters_compile(&f, &q->o, err, errlen) < 0)
        return 400;
    int rc = 500;
    struct hs_q_view_priv *t = calloc(1, sizeof *t);
    reader_ctx c = {.t = t, .o = &q->o, .f = &f, .fn_files = q->fn_files};
    stack_out so = {0};
    hs_view_parts parts;
    memset(&parts, 0, sizeof parts);
    out->priv = t;
    hs_err(err, errlen, "out of memory");
    if (!t || hs_strtab_init(&t->strs) < 0 || hs_idmap_init(&t->node_map, 1024) < 0 ||
        (c.empty = intern(t, "", 0)) == UINT32_MAX)
        goto done;
    if ((rc = read_side(q, &c, cur, false, si, &so, err, errlen)) != 0)
        goto done;
    int64_t total = so.total, kept = so.kept;
    so.total = so.kept = 0;
    if (base && (rc = read_side(q, &c, base, true, si, &so, err, errlen)) != 0)
        goto done;
    rc = 500;
    hs_err(err, errlen, "out of memory");
    uint32_t st_id = intern(t, q->types.type[si], strlen(q->types.type[si]));
    uint32_t un_id = intern(t, q->types.unit[si], strlen(q->types.unit[si]));
    if (st_id == UINT32_MAX || un_id == UINT32_MAX)
        goto done;
    for (size_t i = 0; i < so.n_stacks; i++) {
        size_t off = (size_t)(uintptr_t)so.stacks[i].nodes;
        so.stacks[i].nodes = so.arena + off;
        so.stacks[i].inl = so.inl + off;
    }
    parts.strs = t->strs;
    parts.nodes = t->nodes;
    parts.n_nodes = t->n_nodes;
    parts.stacks = so.stacks;
    parts.n_stacks = so.n_stacks;
    parts.arena = so.arena;
    parts.inl_arena = so.inl;
    parts.sample_type = t->strs.strs[st_id];
    parts.unit = t->strs.strs[un_id];
    parts.sample_index = si;
    parts.granularity = q->o.granularity;
    parts.total = total;
    parts.kept_total = kept;
    parts.base_total = base ? so.total : 0;
    parts.kept_base = base ? so.kept : 0;
    parts.diff = base != NULL;
    memset(&so, 0, sizeof so);
    /* the view has the table and the nodes now, even when it fails */
    memset(&t->strs, 0, sizeof t->strs);
    t->nodes = NULL;
    if (!(out->v = hs_view_from_parts(&parts))) {
        t->n_nodes = 0;
        goto done;
    }
    out->build_ids = (const char *const *)t->bids;
    out->files = (const char *const *)t->files;
    rc = 0;
done:
    if (rc)
        hs_q_view_free(out);
    hs_an_filters_free(&f);
    free(so.stacks);
    free(so.arena);
    free(so.inl);
    free(c.gid);
    free(c.loc_start);
    free(c.loc_n);
    free(c.loc_dec);
    free(c.pos);
    free(c.keep);
    free(c.lb);
    return rc;
}
