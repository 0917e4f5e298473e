/* view.c — hs_view: one or more profiles (plus base profiles for a diff)
 * turned into filtered stacks of node ids, pprof's driver pipeline
 * (sample index, FilterSamplesByName, ShowFrom, FilterSamplesByTag,
 * Aggregate by granularity, CreateNodes) in one pass over the samples.
 *
 * Everything regex-related is decided once per function, mapping and
 * location (loc_info below); the per-sample loop only reads those tables and
 * appends precomputed node lists, so it stays linear in the stack frames. */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/view_internal.h"
#include "base/vec.h"




static int warn(struct hs_view_private *pv, const char *msg)
{
    size_t l = strlen(msg);
    char *n = realloc(pv->warnings, pv->warn_len + l + 2);
    if (!n)
        return -1;
    memcpy(n + pv->warn_len, msg, l);
    n[pv->warn_len + l] = '\n';
    n[pv->warn_len + l + 1] = 0;
    pv->warnings = n;
    pv->warn_len += l + 1;
    return 0;
}

static uint32_t node_intern(struct hs_view_private *pv, const hs_an_node_key *k)
{
    /* hash the fields, not the struct: its padding is indeterminate */
    uint64_t h = hs_mix64(((uint64_t)k->function << 32) ^ k->file);
    h = hs_mix64(h ^ ((uint64_t)k->objfile << 17) ^ (uint64_t)k->line);
    h = hs_mix64(h ^ (uint64_t)k->start_line ^ (k->address * 0x9e3779b97f4a7c15ULL));
    size_t slot = (size_t)-1;
    uint32_t id;
    while ((id = hs_idmap_next(&pv->node_map, h, &slot)) != UINT32_MAX) {
        const hs_node *n = &pv->nodes[id];
        if (n->line == k->line && n->start_line == k->start_line && n->address == k->address &&
            n->function == pv->strs.strs[k->function] && n->file == pv->strs.strs[k->file] &&
            n->objfile == pv->strs.strs[k->objfile])
            return id;
    }
    if (pv->n_nodes >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (HS_VEC_RESERVE(pv->nodes, pv->cap_nodes, pv->n_nodes + 1) < 0)
        return UINT32_MAX;
    hs_node *n = &pv->nodes[pv->n_nodes];
    n->function = pv->strs.strs[k->function];
    n->file = pv->strs.strs[k->file];
    n->objfile = pv->strs.strs[k->objfile];
    n->line = k->line;
    n->start_line = k->start_line;
    n->address = k->address;
    /* nearly every node's name is its own: kept, not interned */
    char buf[1024], *name = buf;
    size_t fl = strlen(n->function), filel = strlen(n->file), room = HS_AN_PRINTABLE_ROOM(fl, filel, strlen(n->objfile));
    if (room > sizeof buf && !(name = malloc(room)))
        return UINT32_MAX;
    hs_an_printable_name_at(name, n->function, fl, n->file, filel, n->objfile, n->line, n->address);
    n->name = hs_strtab_keep(&pv->strs, name);
    if (name != buf)
        free(name);
    if (!n->name)
        return UINT32_MAX;
    id = (uint32_t)pv->n_nodes;
    if (hs_idmap_put(&pv->node_map, h, id) < 0)
        return UINT32_MAX;
    pv->n_nodes++;
    return id;
}



static uint8_t fn_bits(prof_ctx *c, const hs_function *fn)
{
    return fn ? c->fmatch[fn - c->p->functions] : 0;
}

/* The filters' matches of every function (its name or its file) and
 * mapping (its file). */
int hs_an_compute_matches(prof_ctx *c)
{
    const hs_profile *p = c->p;
    c->fmatch = calloc(p->n_functions + 1, 1);
    c->mmatch = calloc(p->n_mappings + 1, 1);
    if (!c->fmatch || !c->mmatch)
        return -1;
    for (size_t i = 0; i < p->n_functions; i++)
        c->fmatch[i] = hs_an_function_bits(c->f, hs_profile_string(p, p->functions[i].name),
                                           hs_profile_string(p, p->functions[i].filename));
    for (size_t i = 0; i < p->n_mappings; i++)
        c->mmatch[i] = hs_an_filter_bits(c->f, hs_profile_string(p, p->mappings[i].filename));
    return 0;
}

static int list_push(prof_ctx *c, uint32_t node, uint8_t inl)
{
    if (c->n_lists == c->cap_lists) {
        size_t nc = c->cap_lists ? c->cap_lists * 2 : 4096;
        uint32_t *nl = realloc(c->lists, nc * sizeof *nl);
        if (!nl)
            return -1;
        c->lists = nl;
        uint8_t *ni = realloc(c->inls, nc);
        if (!ni)
            return -1;
        c->inls = ni;
        c->cap_lists = nc;
    }
    c->lists[c->n_lists] = node;
    c->inls[c->n_lists] = inl;
    c->n_lists++;
    return 0;
}

/* Decide focus/ignore/hide/show/show-from for every location and precompute
 * its node list (root first). */
int hs_an_compute_locations(prof_ctx *c, struct hs_view_private *pv)
{
    const hs_profile *p = c->p;
    const hs_an_filters *f = c->f;
    c->li = calloc(p->n_locations + 1, sizeof *c->li);
    if (!c->li)
        return -1;
    uint8_t *keep = NULL;
    size_t keep_cap = 0;
    uint32_t empty = hs_strtab_intern(&pv->strs, "");
    if (empty == UINT32_MAX)
        return -1;
    /* room for the nodes this profile can add, at once: about a node per
     * function at function granularity, per location below it (grown by
     * doubling, the map was rehashed and the array copied a dozen times) */
    bool by_function = c->gran == HS_GRAN_FUNCTIONS && !c->obj_names;
    size_t more = (by_function ? p->n_functions : p->n_locations) + p->n_mappings + 1;
    if (HS_VEC_RESERVE(pv->nodes, pv->cap_nodes, pv->n_nodes + more) < 0 ||
        hs_hmap_reserve(&pv->node_map, pv->n_nodes + more) < 0)
        return -1;
    /* a mapping's file name and, at function granularity, a named
     * function's node are the same in every location: found once (node + 1,
     * strtab id + 1; 0 = not yet) */
    uint32_t *fn_node = by_function ? calloc(p->n_functions + 1, sizeof *fn_node) : NULL;
    uint32_t *map_obj = calloc(p->n_mappings + 1, sizeof *map_obj);
    /* a function's node name and file (trimmed, cleaned) as strtab ids, the
     * same in each of its lines: found once (file id + 1, name id) */
    uint32_t *fn_strs = calloc(2 * (p->n_functions + 1), sizeof *fn_strs);
    if ((by_function && !fn_node) || !map_obj || !fn_strs) {
        free(fn_node);
        free(map_obj);
        free(fn_strs);
        return -1;
    }
    bool any_rule = hs_an_filters_by_name(f) || f->noinlines; /* else every line of every location shows */
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *L = &p->locations[i];
        loc_info *li = &c->li[i];
        const hs_mapping *m = L->mapping_id ? hs_profile_mapping(p, L->mapping_id) : NULL;
        uint8_t mb = m ? c->mmatch[m - p->mappings] : 0;
        if (keep_cap < 2 * (L->n_lines + 1)) {
            keep_cap = 2 * (L->n_lines + 16);
            uint8_t *nk = realloc(keep, keep_cap);
            if (!nk) {
                free(keep);
                return -1;
            }
            keep = nk;
        }
        uint8_t dec = HS_LOC_FOCUSED;
        if (any_rule) {
            uint8_t *lb = keep + L->n_lines + 1;
            for (size_t k = 0; k < L->n_lines; k++) {
                const hs_function *fn = hs_an_line_fn(p, &L->lines[k]);
                lb[k] = fn ? fn_bits(c, fn) : HS_FM_NOFN;
            }
            dec = hs_an_location_rule(f, mb, lb, L->n_lines, keep);
        } else {
            memset(keep, 1, L->n_lines);
        }
        li->dec = dec;
        c->fm |= (dec & HS_LOC_FOCUSED) != 0;
        c->im |= (dec & HS_LOC_IGNORED) != 0;
        c->hm |= (dec & HS_LOC_HIDEMATCH) != 0;
        c->hnm |= (dec & HS_LOC_SHOWMATCH) != 0;
        c->sfm |= (dec & HS_LOC_SHOWFROM) != 0;
        if (dec & HS_LOC_HIDDEN)
            continue;
        if (c->keepmask && L->n_lines) {
            c->keepmask[i] = malloc(L->n_lines);
            if (!c->keepmask[i])
                goto oom;
            memcpy(c->keepmask[i], keep, L->n_lines);
        }
        /* node list, outermost line first */
        uint32_t obj = empty;
        if (m) {
            uint32_t *mo = &map_obj[m - p->mappings];
            if (!*mo && (*mo = hs_strtab_intern(&pv->strs, hs_profile_string(p, m->filename)) + 1) == 0)
                goto oom;
            obj = *mo - 1;
        }
        li->off = (uint32_t)c->n_lists;
        uint64_t addr = c->gran == HS_GRAN_ADDRESSES ? L->address : 0;
        if (L->n_lines == 0) {
            hs_an_node_key k;
            hs_an_node_key_of(&k, c->gran, c->obj_names, empty, false, empty, false, empty, obj, 0, 0, addr);
            uint32_t id = node_intern(pv, &k);
            if (id == UINT32_MAX || list_push(c, id, 0) < 0)
                goto oom;
        } else {
            bool first = true;
            for (size_t kk = L->n_lines; kk-- > 0;) {
                if (!keep[kk])
                    continue;
                const hs_line *ln = &L->lines[kk];
                const hs_function *fn = hs_an_line_fn(p, ln);
                uint32_t *fnc = fn && fn_node && fn->name ? &fn_node[fn - p->functions] : NULL;
                if (fnc && *fnc) {
                    if (list_push(c, *fnc - 1, first ? 0 : 1) < 0)
                        goto oom;
                    first = false;
                    continue;
                }
                hs_an_node_key k;
                if (!fn) {
                    hs_an_node_key_of(&k, c->gran, c->obj_names, empty, false, empty, false, empty, obj, 0, 0, addr);
                } else {
                    const char *name = c->gran == HS_GRAN_FILES ? "" : hs_profile_string(p, fn->name);
                    uint32_t *fs = &fn_strs[2 * (size_t)(fn - p->functions)];
                    if (!fs[0]) {
                        const char *raw = c->gran == HS_GRAN_FUNCTIONS ? "" : hs_profile_string(p, fn->filename);
                        uint32_t fid = empty;
                        if (*raw) {
                            char *file = hs_an_node_file(raw, c->untrimmed, c->trim_path, c->source_path);
                            fid = file ? hs_strtab_intern(&pv->strs, file) : UINT32_MAX;
                            free(file);
                        }
                        uint32_t nid = hs_strtab_intern(&pv->strs, name);
                        if (fid == UINT32_MAX || nid == UINT32_MAX)
                            goto oom;
                        fs[0] = fid + 1;
                        fs[1] = nid;
                    }
                    hs_an_node_key_of(&k, c->gran, c->obj_names, empty, true, fs[1], *name != 0, fs[0] - 1, obj,
                                      ln->line, fn->start_line, addr);
                }
                uint32_t id = node_intern(pv, &k);
                if (id == UINT32_MAX || list_push(c, id, first ? 0 : 1) < 0)
                    goto oom;
                if (fnc && *hs_profile_string(p, fn->name))
                    *fnc = id + 1;
                first = false;
            }
        }
        li->n = (uint32_t)(c->n_lists - li->off);
        if (li->n > c->most_nodes)
            c->most_nodes = li->n;
    }
    free(keep);
    free(fn_node);
    free(map_obj);
    free(fn_strs);
    return 0;
oom:
    free(keep);
    free(fn_node);
    free(map_obj);
    free(fn_strs);
    return -1;
}

/* Room for n_stacks more stacks and n_frames more nodes in the arena. */
static int reserve_stacks(struct hs_view_private *pv, size_t n_stacks, size_t n_frames)
{
    if (pv->n_stacks + n_stacks > pv->cap_stacks) {
        size_t nc = pv->n_stacks + n_stacks;
        hs_stack *ns = realloc(pv->stacks, nc * sizeof *ns);
        if (!ns)
            return -1;
        pv->stacks = ns;
        pv->cap_stacks = nc;
    }
    if (pv->arena_n + n_frames > pv->arena_cap) {
        size_t nc = pv->arena_n + n_frames;
        uint32_t *na = realloc(pv->arena, nc * sizeof *na);
        if (!na)
            return -1;
        pv->arena = na;
        uint8_t *ni = realloc(pv->inl_arena, nc);
        if (!ni)
            return -1;
        pv->inl_arena = ni;
        pv->arena_cap = nc;
    }
    return 0;
}

/* Room for one more stack of `need` nodes, both tables grown by doubling. */
static int add_stack(struct hs_view_private *pv, size_t need)
{
    size_t more_stacks = 0, more_frames = 0;
    if (pv->n_stacks == pv->cap_stacks)
        more_stacks = pv->cap_stacks ? pv->cap_stacks : 1024;
    if (pv->arena_n + need > pv->arena_cap) {
        size_t nc = pv->arena_cap ? pv->arena_cap : 65536;
        while (nc < pv->arena_n + need)
            nc *= 2;
        more_frames = nc - pv->arena_n;
    }
    return reserve_stacks(pv, more_stacks, more_frames);
}

/* A sample's labels as the tag filters read them. */
typedef struct {
    const hs_profile *p;
    const hs_sample *s;
} prof_sample;

static void prof_label(const void *arg, size_t i, hs_an_label *out)
{
    const prof_sample *ps = arg;
    const hs_label *l = &ps->s->labels[i];
    out->key = hs_profile_string(ps->p, l->key);
    out->str = l->str ? hs_profile_string(ps->p, l->str) : NULL;
    out->unit = hs_profile_string(ps->p, l->num_unit);
    out->num = l->num;
}

static bool tags_keep(const prof_ctx *c, const hs_sample *S)
{
    prof_sample ps = {c->p, S};
    return hs_an_tags_keep(c->f, &ps, S->n_labels, prof_label);
}

/* hs_an_sample_keep's room: the kept locations, and the rule's scratch. */

int hs_an_keep_buf_reserve(keep_buf *b, size_t n)
{
    if (n <= b->cap)
        return 0;
    size_t cap = n + 64;
    const hs_location **nl = realloc(b->locs, cap * sizeof *nl);
    if (!nl)
        return -1;
    b->locs = nl;
    uint8_t *nd = realloc(b->dec, cap);
    if (!nd)
        return -1;
    b->dec = nd;
    uint32_t *np = realloc(b->pos, cap * sizeof *np);
    if (!np)
        return -1;
    b->pos = np;
    b->cap = cap;
    return 0;
}

void hs_an_keep_buf_free(keep_buf *b)
{
    free(b->locs);
    free(b->dec);
    free(b->pos);
    memset(b, 0, sizeof *b);
}

/* The filters (filters.h's rules) on one sample: false when dropped; else
 * b->locs[0..*np) are its kept locations, leaf first. b has room for
 * S->n_locations. */
bool hs_an_sample_keep(const prof_ctx *c, const hs_sample *S, keep_buf *b, size_t *np)
{
    const hs_profile *p = c->p;
    size_t n = 0, kept;
    for (size_t k = 0; k < S->n_locations; k++) {
        const hs_location *L = hs_profile_location_at(p, S->location_ids[k], c->dense);
        if (!L)
            continue;
        b->locs[n] = L;
        b->dec[n++] = c->li[L - p->locations].dec;
    }
    if (!hs_an_sample_rule(c->f, b->dec, n, b->pos, &kept) || !tags_keep(c, S))
        return false;
    if (kept != n) /* else pos is 0..n-1 */
        for (size_t j = 0; j < kept; j++) /* pos[j] >= j: in place */
            b->locs[j] = b->locs[b->pos[j]];
    *np = kept;
    return true;
}

/* Whether hs_an_sample_keep depends only on the sample's labels: no filter by
 * name or location, so every location it has is kept. */
static bool keep_by_tags_only(const prof_ctx *c)
{
    return !hs_an_filters_by_name(c->f) && !c->keepmask;
}

/* Profiles of at least this many samples have their samples merged into
 * stacks on a second thread while this one works out the locations
 * (hs_an_compute_matches, hs_an_compute_locations), when keep_by_tags_only; their
 * stacks' nodes are filled in after. */
size_t hs_an_view_apart_min = 4096;

/* The locations' decisions and node lists; then, for the last profile, the
 * lookup tables of nodes and names freed (no node is added any more). */
static int locations_done(prof_ctx *c, struct hs_view_private *pv, bool last)
{
    if (hs_an_compute_matches(c) < 0 || hs_an_compute_locations(c, pv) < 0)
        return -1;
    if (last) {
        hs_idmap_free(&pv->node_map);
        hs_strtab_seal(&pv->strs);
    }
    return 0;
}

/* The nodes of stacks [b, e), each its sample's locations root first, into
 * the arena from at (its room reserved); with fill false only counted.
 * Returns where the next stack's go. */
static size_t fill_range(const prof_ctx *c, struct hs_view_private *pv, size_t b, size_t e, size_t at,
                         bool fill)
{
    const hs_profile *p = c->p;
    uint32_t *arena = pv->arena;
    uint8_t *inl = pv->inl_arena;
    for (size_t i = b; i < e; i++) {
        const hs_sample *S = pv->stacks[i].sample;
        size_t start = at;
        for (size_t k = S->n_locations; k-- > 0;) { /* a location has one or two nodes: no memcpy calls */
            const hs_location *L = hs_profile_location_at(p, S->location_ids[k], c->dense);
            if (!L)
                continue;
            const loc_info *li = &c->li[L - p->locations];
            for (uint32_t j = 0; fill && j < li->n; j++) {
                arena[at + j] = c->lists[li->off + j];
                inl[at + j] = c->inls[li->off + j];
            }
            at += li->n;
        }
        if (fill)
            pv->stacks[i].n = (uint32_t)(at - start);
    }
    return at;
}

/* The other thread's part of fill_stacks: the nodes of the stacks before
 * its own counted, then its own filled after them. */
typedef struct {
    const prof_ctx *c;
    struct hs_view_private *pv;
    size_t first, mid, at;
} fill_job;

static void *fill_thread(void *arg)
{
    fill_job *j = arg;
    size_t at = fill_range(j->c, j->pv, j->first, j->mid, j->pv->arena_n, false);
    j->at = fill_range(j->c, j->pv, j->mid, j->pv->n_stacks, at, true);
    return NULL;
}

/* The nodes of stacks [first, n_stacks) of p, added by add_profile while
 * the locations were not known, into the arena: on two threads (the first
 * two thirds of their frames and the rest) from 16 * hs_an_view_apart_min
 * frames. 0, or -1 (out of memory). */
static int fill_stacks(const prof_ctx *c, struct hs_view_private *pv, size_t first)
{
    size_t frames = 0, half = 0, mid = first;
    for (size_t i = first; i < pv->n_stacks; i++)
        frames += pv->stacks[i].sample->n_locations;
    if (reserve_stacks(pv, 0, frames * c->most_nodes) < 0)
        return -1;
    /* the other thread counts this one's share before it fills its own:
     * measured, counting a frame costs ~0.55 of filling it */
    for (; mid < pv->n_stacks && half < frames / 3 * 2; mid++)
        half += pv->stacks[mid].sample->n_locations;
    fill_job job = {c, pv, first, mid, 0};
    pthread_t tid;
    if (frames / 16 < hs_an_view_apart_min || pthread_create(&tid, NULL, fill_thread, &job) != 0) {
        pv->arena_n = fill_range(c, pv, first, pv->n_stacks, pv->arena_n, true);
        return 0;
    }
    (void)fill_range(c, pv, first, mid, pv->arena_n, true);
    pthread_join(tid, NULL);
    pv->arena_n = job.at;
    return 0;
}

/* An earlier sample of p equal to S: true with its entry in *val. */
static bool find_same(const struct hs_view_private *pv, const hs_hmap *seen, const hs_profile *p,
                      uint64_t h, const hs_sample *S, uint64_t *val)
{
    for (size_t it = HS_HMAP_START; hs_hmap_next(seen, h, &it, val);) {
        const hs_sample *o = (*val & 1) ? pv->stacks[*val >> 1].sample : &p->samples[*val >> 1];
        if (hs_an_same_sample(o, S))
            return true;
    }
    return false;
}

/* A stack class of the decoder seen in this profile: its array and entry. */
typedef struct {
    const uint64_t *ids; /* NULL: not yet */
    size_t n;
    uint64_t entry; /* as in add_profile's `seen` */
} class_seen;

/* The samples of one profile merged into stacks (add_profile's loop), on
 * the calling thread or a second one (merge_thread). */
typedef struct {
    view_full *vf;
    const prof_ctx *c;
    int si;
    bool is_base;
    bool apart; /* the locations are being worked out meanwhile: sample_keep_tags,
                   and the stacks' nodes are filled in after (fill_stacks) */
    bool merge;
    double scale;
    class_seen *classes;
    size_t n_classes;
    hs_hmap *seen; /* sample_hash -> stack index << 1 | 1, or dropped sample index << 1 */
    bool *flags_out;
    int rc;
} merge_job;

/* 0, or -1 (out of memory). */
static int merge_samples(merge_job *j)
{
    view_full *vf = j->vf;
    struct hs_view_private *pv = &vf->priv;
    const prof_ctx *c = j->c;
    const hs_profile *p = c->p;
    int si = j->si;
    bool is_base = j->is_base, apart = j->apart, merge = j->merge;
    double scale = j->scale;
    class_seen *classes = j->classes;
    size_t n_classes = j->n_classes;
    hs_hmap *seen = j->seen;
    bool *flags_out = j->flags_out;
    keep_buf kb = {0};
    int64_t base_key = 0; /* the string "pprof::base", which marks --diff-base samples */
    for (size_t i = 1; i < p->n_strings && !base_key; i++)
        if (strcmp(p->strings[i], "pprof::base") == 0)
            base_key = (int64_t)i;
    for (size_t s = 0; s < p->n_samples; s++) {
        const hs_sample *S = &p->samples[s];
        /* the class entry of a sample 16 ahead and the stack of one 8 ahead
         * are fetched into the cache: both tables are as large as the
         * profile's distinct stacks and read in random order */
        if (classes && s + 16 < p->n_samples) {
            uint32_t k = hs_profile_sample_stack(p, s + 16, NULL);
            if (k < n_classes)
                __builtin_prefetch(&classes[k]);
            k = hs_profile_sample_stack(p, s + 8, NULL);
            if (k < n_classes && classes[k].ids && (classes[k].entry & 1))
                __builtin_prefetch(&pv->stacks[classes[k].entry >> 1]);
        }
        int64_t v = S->values[si];
        if (scale != 1.0)
            v = (int64_t)llround((double)v * scale);
        int64_t av = v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
        int64_t dv = vf->pub.mean ? S->values[0] : 0;
        for (size_t l = 0; base_key && l < S->n_labels; l++)
            if (S->labels[l].key == base_key) { /* pprof's computeTotal: DiffBaseSample */
                vf->diff_total += av;
                vf->diff_div += dv;
                vf->has_diff = true;
                break;
            }
        if (is_base) {
            vf->pub.base_total += av;
            vf->base_div_total += dv;
        } else {
            vf->pub.total += av;
            vf->div_total += dv;
        }
        if (hs_an_keep_buf_reserve(&kb, S->n_locations + 1) < 0)
            goto oom;
        /* a sample indistinguishable from an earlier one (the same shared
         * location id array, equal labels) adds to its stack; label-less
         * samples find it by the decoder's stack class, others by hash */
        uint64_t sh = 0, prev = 0;
        bool found = false;
        class_seen *cs = NULL;
        if (merge) {
            uint32_t k = S->n_labels ? UINT32_MAX : hs_profile_sample_stack(p, s, NULL);
            if (k < n_classes && (!classes[k].ids || (classes[k].ids == S->location_ids &&
                                                      classes[k].n == S->n_locations))) {
                cs = &classes[k];
                found = cs->ids != NULL;
                prev = cs->entry;
            } else {
                sh = hs_an_sample_hash(S);
                found = find_same(pv, seen, p, sh, S, &prev);
            }
        }
        bool remember = merge && !found;
        if (found) {
            if (!(prev & 1))
                continue; /* dropped, as that one was */
            hs_stack *st = &pv->stacks[prev >> 1];
            int64_t *acc = is_base ? &st->base : &st->value;
            /* values of one sign only: sums of |value| stay exact */
            if ((*acc < 0) == (v < 0)) {
                *acc += v;
                st->div += dv;
                st->n_samples++;
                if (is_base)
                    vf->pub.kept_base += v;
                else
                    vf->pub.kept_total += v;
                continue;
            }
        }
        size_t n = 0, need = 0;
        bool kept = apart ? tags_keep(c, S) : hs_an_sample_keep(c, S, &kb, &n);
        const hs_location **locs = kb.locs;
        uint64_t entry = kept ? (uint64_t)pv->n_stacks << 1 | 1 : (uint64_t)s << 1;
        if (remember && cs) {
            *cs = (class_seen){S->location_ids, S->n_locations, entry};
        } else if (remember && hs_hmap_add(seen, sh, entry) < 0) {
            goto oom;
        }
        if (!kept)
            continue;
        flags_out[0] = true; /* tagfocus matched something */
        for (size_t k = 0; k < n; k++) /* none when apart: filled in after */
            need += c->li[locs[k] - p->locations].n;
        if (add_stack(pv, need) < 0) {
            goto oom;
        }
        for (size_t k = n; k-- > 0;) { /* a location has one or two nodes: no memcpy calls */
            const loc_info *li = &c->li[locs[k] - p->locations];
            for (uint32_t j = 0; j < li->n; j++) {
                pv->arena[pv->arena_n + j] = c->lists[li->off + j];
                pv->inl_arena[pv->arena_n + j] = c->inls[li->off + j];
            }
            pv->arena_n += li->n;
        }
        hs_stack *st = &pv->stacks[pv->n_stacks];
        pv->n_stacks++;
        st->n = (uint32_t)need;
        st->value = is_base ? 0 : v;
        st->base = is_base ? v : 0;
        st->div = dv;
        st->n_samples = 1;
        st->profile = p;
        st->sample = S;
        if (is_base)
            vf->pub.kept_base += v;
        else
            vf->pub.kept_total += v;
    }
    hs_an_keep_buf_free(&kb);
    return 0;
oom:
    hs_an_keep_buf_free(&kb);
    return -1;
}

static void *merge_thread(void *arg)
{
    merge_job *j = arg;
    j->rc = merge_samples(j);
    return NULL;
}

/* Process one profile's samples. sign: 0 NEW, 1 BASE. last: no profile
 * follows, so once its locations are done no node is added any more. */
static int add_profile(view_full *vf, const hs_profile *p, int si, bool is_base, bool last,
                       double scale, const hs_an_filters *f, bool *flags_out, char *err,
                       size_t errlen)
{
    struct hs_view_private *pv = &vf->priv;
    prof_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.dense = hs_profile_locations_dense(p);
    c.f = f;
    c.gran = vf->pub.granularity;
    c.obj_names = vf->obj_names;
    c.trim_path = vf->trim_path;
    c.source_path = vf->source_path;
    c.untrimmed = vf->untrimmed;
    int rc = -1;
    bool merge = !vf->each_sample;
    hs_hmap seen = {0}; /* sample_hash -> stack index << 1 | 1, or dropped sample index << 1 */
    size_t n_classes = 0;
    (void)hs_profile_sample_stack(p, 0, &n_classes);
    class_seen *classes = merge && n_classes ? hs_table_calloc(n_classes, sizeof *classes) : NULL;
    if (merge && n_classes && !classes)
        n_classes = 0; /* the hash alone still merges */
    size_t first = pv->n_stacks;
    merge_job mj = {vf, &c, si, is_base, false, merge, scale, classes, n_classes, &seen, flags_out, 0};
    pthread_t merge_tid;
    /* apart: room for a stack per sample (the pages past those used stay
     * untouched), so that the stacks are not allocated by the other thread
     * (in its own malloc arena, where this thread cannot reuse what it frees) */
    mj.apart = keep_by_tags_only(&c) && p->n_samples >= hs_an_view_apart_min &&
               reserve_stacks(pv, p->n_samples, 0) == 0; /* read by the thread */
    bool apart = mj.apart && pthread_create(&merge_tid, NULL, merge_thread, &mj) == 0;
    if (!apart)
        mj.apart = false; /* no thread: merged below, knowing the locations */
    if (locations_done(&c, pv, last) < 0) {
        hs_err(err, errlen, "out of memory");
        goto out;
    }
    if (classes && !apart) {
        /* room for every stack this profile can add and their nodes, at
         * once: grown by doubling, the arena was copied (old and new alive)
         * at its largest, which was the peak of the whole build. One stack
         * per stack class of label-less samples, one per labelled sample, of
         * at most most_nodes nodes per location (the pages past those used
         * stay untouched; counting each location's was 7% of the build). */
        uint8_t *counted = calloc(n_classes, 1);
        size_t more_stacks = 0, more_frames = 0;
        if (!counted) {
            hs_err(err, errlen, "out of memory");
            goto out;
        }
        for (size_t s = 0; s < p->n_samples; s++) {
            const hs_sample *S = &p->samples[s];
            uint32_t k = S->n_labels ? UINT32_MAX : hs_profile_sample_stack(p, s, NULL);
            if (k < n_classes) {
                if (counted[k])
                    continue;
                counted[k] = 1;
            }
            more_stacks++;
            more_frames += S->n_locations * c.most_nodes;
        }
        free(counted);
        if (reserve_stacks(pv, more_stacks, more_frames) < 0) {
            hs_err(err, errlen, "out of memory");
            goto out;
        }
    }
    if (apart) {
        pthread_join(merge_tid, NULL);
        apart = false;
        hs_hmap_free(&seen); /* not needed for the fill: memory back first */
        free(classes);
        classes = NULL;
        malloc_trim(0); /* what the thread freed is in its own malloc arena, which
                           this thread's later allocations cannot reuse */
        if (mj.rc < 0 || fill_stacks(&c, pv, first) < 0) {
            hs_err(err, errlen, "out of memory");
            goto out;
        }
    } else if (merge_samples(&mj) < 0) {
        hs_err(err, errlen, "out of memory");
        goto out;
    }
    flags_out[1] |= c.fm;
    flags_out[2] |= c.im;
    flags_out[3] |= c.hm;
    flags_out[4] |= c.hnm;
    flags_out[5] |= c.sfm;
    rc = 0;
out:
    if (apart) /* failed before its join */
        pthread_join(merge_tid, NULL);
    hs_hmap_free(&seen);
    free(classes);
    free(c.fmatch);
    free(c.mmatch);
    free(c.li);
    free(c.lists);
    free(c.inls);
    return rc;
}

static bool same_types(const hs_profile *a, const hs_profile *b)
{
    if (a->n_sample_types != b->n_sample_types)
        return false;
    for (size_t i = 0; i < a->n_sample_types; i++) {
        if (strcmp(hs_profile_string(a, a->sample_types[i].type),
                   hs_profile_string(b, b->sample_types[i].type)) != 0 ||
            strcmp(hs_profile_string(a, a->sample_types[i].unit),
                   hs_profile_string(b, b->sample_types[i].unit)) != 0)
            return false;
    }
    return true;
}

/* "(samples/count, cpu/nanoseconds)" */
static void types_of(const hs_profile *p, char *out, size_t len)
{
    size_t w = (size_t)snprintf(out, len, "(");
    for (size_t i = 0; p && i < p->n_sample_types && w + 2 < len; i++)
        w += (size_t)snprintf(out + w, len - w, "%s%s/%s", i ? ", " : "",
                              hs_profile_string(p, p->sample_types[i].type),
                              hs_profile_string(p, p->sample_types[i].unit));
    if (w + 2 < len)
        snprintf(out + w, len - w, ")");
}

static int64_t sum_index(const hs_profile *p, int si)
{
    int64_t t = 0;
    for (size_t s = 0; s < p->n_samples; s++)
        t += p->samples[s].values[si];
    return t;
}

hs_view *hs_view_build(hs_profile *const *ps, size_t n, hs_profile *const *bs, size_t n_base,
                       const hs_analysis_options *o, char *err, size_t errlen)
{
    if (n == 0 || !ps[0]) {
        hs_err(err, errlen, "no profile to analyze");
        return NULL;
    }
    const hs_profile *p0 = ps[0];
    if (p0->n_sample_types == 0) {
        hs_err(err, errlen, "profile has no sample types");
        return NULL;
    }
    int si;
    if (o->sample_index) {
        si = hs_profile_sample_index(p0, o->sample_index);
        if (si < 0 || (size_t)si >= p0->n_sample_types) {
            char types[512] = "";
            size_t tl = 0;
            for (size_t i = 0; i < p0->n_sample_types && tl < sizeof types - 64; i++)
                tl += (size_t)snprintf(types + tl, sizeof types - tl, "%s%s", i ? " " : "",
                                       hs_profile_string(p0, p0->sample_types[i].type));
            hs_err(err, errlen, "sample index '%s' not found; available: %s", o->sample_index,
                      types);
            return NULL;
        }
    } else {
        si = hs_profile_default_index(p0);
        if (si < 0 || (size_t)si >= p0->n_sample_types)
            si = (int)p0->n_sample_types - 1;
    }
    /* Every profile has p0's sample types; or, with --sample-index NAME,
     * at least a NAME of the same unit (each is read at its own index). */
    int *qsi = malloc((n + n_base) * sizeof *qsi);
    if (!qsi) {
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n + n_base; i++) {
        const hs_profile *q = i < n ? ps[i] : bs[i - n];
        qsi[i] = si;
        if (q && same_types(p0, q))
            continue;
        int k = q && o->sample_index ? hs_profile_sample_index(q, o->sample_index) : -1;
        if (k >= 0 && (size_t)k < q->n_sample_types &&
            strcmp(hs_profile_string(q, q->sample_types[k].unit), hs_profile_string(p0, p0->sample_types[si].unit)) == 0 &&
            strcmp(hs_profile_string(q, q->sample_types[k].type), hs_profile_string(p0, p0->sample_types[si].type)) == 0) {
            qsi[i] = k;
            continue;
        }
        char t0[256], tq[256];
        types_of(p0, t0, sizeof t0);
        types_of(q, tq, sizeof tq);
        hs_err(err, errlen,
                  "profiles are not compatible: profile 1 has sample types %s, profile %zu has %s%s", t0, i + 1,
                  tq, o->sample_index ? "" : "; to compare one type both have, pick it with --sample-index NAME");
        free(qsi);
        return NULL;
    }
    hs_an_filters f;
    if (hs_an_filters_compile(&f, o, err, errlen) < 0) {
        free(qsi);
        return NULL;
    }
    view_full *vf = calloc(1, sizeof *vf);
    if (!vf) {
        free(qsi);
        hs_an_filters_free(&f);
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    hs_view *v = &vf->pub;
    struct hs_view_private *pv = &vf->priv;
    v->priv = pv;
    v->sample_index = si;
    v->granularity = o->granularity;
    vf->obj_names = o->obj_names;
    vf->trim_path = o->trim_path;
    vf->source_path = o->source_path;
    vf->untrimmed = o->untrimmed_paths;
    vf->each_sample = o->each_sample;
    v->mean = o->mean;
    v->diff = n_base > 0;
    v->profile = p0;
    v->base = n_base ? bs[0] : NULL;
    v->sample_type = hs_profile_string(p0, p0->sample_types[si].type);
    v->unit = hs_profile_string(p0, p0->sample_types[si].unit);
    if (hs_strtab_init(&pv->strs) < 0 || hs_idmap_init(&pv->node_map, 1024) < 0) {
        hs_err(err, errlen, "out of memory");
        goto fail;
    }
    double scale = 1.0;
    if (n_base && o->normalize) {
        int64_t tn = 0, tb = 0;
        for (size_t i = 0; i < n; i++)
            tn += sum_index(ps[i], qsi[i]);
        for (size_t i = 0; i < n_base; i++)
            tb += sum_index(bs[i], qsi[n + i]);
        scale = tn ? (double)tb / (double)tn : 0.0;
    }
    bool flags[6] = {false, false, false, false, false, false};
    for (size_t i = 0; i < n + n_base; i++) {
        bool is_base = i >= n;
        const hs_profile *q = is_base ? bs[i - n] : ps[i];
        if (add_profile(vf, q, qsi[i], is_base, i + 1 == n + n_base, is_base ? 1.0 : scale, &f, flags,
                        err, errlen) < 0)
            goto fail;
    }
    free(qsi);
    qsi = NULL;
    /* fix up stack pointers now that the arena is final: the stacks' node
     * lists follow each other in it */
    for (size_t i = 0, off = 0; i < pv->n_stacks; off += pv->stacks[i++].n) {
        pv->stacks[i].nodes = pv->arena + off;
        pv->stacks[i].inl = pv->inl_arena + off;
    }
    vf->trim_path = vf->source_path = NULL;
    /* pprof's computeTotal: with -diff_base samples, the total is theirs */
    if (vf->diff_total > 0) {
        v->total = vf->diff_total;
        vf->div_total = vf->diff_div;
    }
    /* pprof's computeTotal with a mean divisor: sum |value| / sum count */
    if (v->mean && vf->div_total)
        v->total /= vf->div_total;
    if (v->mean && vf->base_div_total)
        v->base_total /= vf->base_div_total;
    if (o->relative) {
        v->total = 0;
        v->base_total = 0;
        for (size_t i = 0; i < pv->n_stacks; i++) {
            int64_t a = pv->stacks[i].value, b = pv->stacks[i].base;
            v->total += a < 0 ? -a : a;
            v->base_total += b < 0 ? -b : b;
        }
    }
    int wr = 0;
    if (f.has_focus && !flags[1])
        wr |= warn(pv, "Focus expression matched no samples");
    if (f.has_ignore && !flags[2])
        wr |= warn(pv, "Ignore expression matched no samples");
    if (f.has_hide && !flags[3])
        wr |= warn(pv, "Hide expression matched no samples");
    if (f.has_show && !flags[4])
        wr |= warn(pv, "Show expression matched no samples");
    if (f.has_show_from && !flags[5])
        wr |= warn(pv, "ShowFrom expression matched no samples");
    if ((f.has_tagfocus || f.has_tagignore) && !flags[0] && pv->n_stacks == 0)
        wr |= warn(pv, "Tag filters matched no samples");
    if (o->tagshow) {
        if (hs_analysis_regcomp(&vf->tagshow, o->tagshow, "tagshow", err, errlen) < 0)
            goto fail;
        vf->has_tagshow = true;
    }
    if (o->taghide) {
        if (hs_analysis_regcomp(&vf->taghide, o->taghide, "taghide", err, errlen) < 0)
            goto fail;
        vf->has_taghide = true;
    }
    if (vf->has_tagshow || vf->has_taghide) {
        /* pprof's FilterTagsByName reports whether any label key matched */
        bool sm = false, hm = false;
        for (size_t i = 0; i < pv->n_stacks; i++) {
            const hs_sample *S = pv->stacks[i].sample;
            const hs_profile *q = pv->stacks[i].profile;
            for (size_t l = 0; l < S->n_labels; l++) {
                const char *key = hs_profile_string(q, S->labels[l].key);
                if (vf->has_tagshow && hs_regex_match(&vf->tagshow, key))
                    sm = true;
                if (vf->has_taghide && hs_regex_match(&vf->taghide, key))
                    hm = true;
            }
        }
        if (vf->has_tagshow && !sm)
            wr |= warn(pv, "TagShow expression matched no samples");
        if (vf->has_taghide && !hm)
            wr |= warn(pv, "TagHide expression matched no samples");
    }
    if (wr) {
        hs_err(err, errlen, "out of memory");
        goto fail;
    }
    v->nodes = pv->nodes;
    v->n_nodes = pv->n_nodes;
    v->stacks = pv->stacks;
    v->n_stacks = pv->n_stacks;
    v->warnings = pv->warnings ? pv->warnings : "";
    hs_an_filters_free(&f);
    return v;
fail:
    free(qsi);
    hs_an_filters_free(&f);
    hs_view_free(v);
    return NULL;
}

void hs_view_free(hs_view *v)
{
    if (!v)
        return;
    view_full *vf = (view_full *)v;
    struct hs_view_private *pv = &vf->priv;
    hs_strtab_free(&pv->strs);
    hs_idmap_free(&pv->node_map);
    free(pv->nodes);
    free(pv->stacks);
    free(pv->arena);
    free(pv->inl_arena);
    free(pv->warnings);
    free(pv->ustacks);
    if (vf->has_tagshow)
        hs_regex_free(&vf->tagshow);
    if (vf->has_taghide)
        hs_regex_free(&vf->taghide);
    free(vf);
}

bool hs_view_label_shown(const hs_view *v, const char *key)
{
    const view_full *vf = (const view_full *)v;
    if (vf->has_tagshow && !hs_regex_match(&vf->tagshow, key))
        return false;
    return !(vf->has_taghide && hs_regex_match(&vf->taghide, key));
}
