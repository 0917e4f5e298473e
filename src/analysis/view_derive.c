/* view_derive.c — views made from a built one: identical stacks summed
 * (for the graph and the call tree), the view as a call tree, with every
 * stack reversed, at another sample index; and a view from the parts
 * another stack source built (hs_view_from_parts). */
#include <stdlib.h>
#include <string.h>

#include "analysis/view_internal.h"
#include "base/vec.h"

/* ---- identical stacks summed, for the graph and the call tree ---- */

/* Two passes: each stack's first equal (rep[i], by a hash map over the
 * view's own stacks), then the sums. When no stacks are equal and none is
 * zero, the view's stacks are the answer and nothing is copied: on a large
 * profile decoded with shared stacks that is the common case, and the copy
 * was the peak of the process's memory. */
int hs_an_view_unique(const hs_view *v, const hs_stack **out, size_t *n)
{
    struct hs_view_private *pv = v->priv;
    if (pv->ustacks_done) {
        *out = pv->ustacks ? pv->ustacks : v->stacks;
        *n = pv->n_ustacks;
        return 0;
    }
    if (v->n_stacks >= UINT32_MAX)
        return -1;
    hs_idmap map;
    uint32_t *rep = malloc((v->n_stacks + 1) * sizeof *rep); /* UINT32_MAX: a zero stack */
    if (!rep || hs_idmap_init(&map, v->n_stacks) < 0) {
        free(rep);
        return -1;
    }
    size_t nu = 0;
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        rep[i] = UINT32_MAX;
        if (st->value == 0 && st->base == 0 && st->div == 0)
            continue;
        uint64_t h = st->n;
        for (uint32_t k = 0; k < st->n; k++)
            h = (h ^ ((uint64_t)st->nodes[k] << 1 | st->inl[k])) * 0x9e3779b97f4a7c15ULL;
        h = hs_mix64(h);
        size_t slot = (size_t)-1;
        uint32_t id;
        while ((id = hs_idmap_next(&map, h, &slot)) != UINT32_MAX) {
            const hs_stack *o = &v->stacks[id];
            if (o->n == st->n && memcmp(o->nodes, st->nodes, st->n * sizeof *st->nodes) == 0 &&
                memcmp(o->inl, st->inl, st->n) == 0)
                break;
        }
        if (id == UINT32_MAX) {
            if (hs_idmap_put(&map, h, (uint32_t)i) < 0) {
                free(rep);
                hs_idmap_free(&map);
                return -1;
            }
            id = (uint32_t)i;
            nu++;
        }
        rep[i] = id;
    }
    hs_idmap_free(&map);
    hs_stack *u = NULL;
    if (nu < v->n_stacks) {
        u = malloc((nu + 1) * sizeof *u);
        if (!u) {
            free(rep);
            return -1;
        }
        size_t k = 0;
        for (size_t i = 0; i < v->n_stacks; i++) {
            const hs_stack *st = &v->stacks[i];
            if (rep[i] == UINT32_MAX)
                continue;
            if (rep[i] == i) { /* first of its kind: rep[i] becomes its index in u */
                u[k] = *st;
                rep[i] = (uint32_t)k++;
                continue;
            }
            hs_stack *o = &u[rep[rep[i]]];
            o->value += st->value;
            o->base += st->base;
            o->div += st->div;
            o->n_samples += st->n_samples;
        }
    }
    free(rep);
    pv->ustacks = u;
    pv->n_ustacks = nu;
    pv->ustacks_done = true;
    *out = u ? u : v->stacks;
    *n = nu;
    return 0;
}

/* ---- views derived from another (call tree, reversed stacks) ---- */

/* A copy of src's header with room for its stacks and their node lists
 * (pv->arena, inl_arena, stacks), to be filled by the caller. */
static hs_view *derived_view_new(const hs_view *src, char *err, size_t errlen)
{
    view_full *vf = calloc(1, sizeof *vf);
    if (!vf) {
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    hs_view *v = &vf->pub;
    struct hs_view_private *pv = &vf->priv;
    *v = *src;
    v->priv = pv;
    v->warnings = "";
    vf->obj_names = ((const view_full *)src)->obj_names;
    size_t total = 0;
    for (size_t i = 0; i < src->n_stacks; i++)
        total += src->stacks[i].n;
    pv->arena = malloc((total + 1) * sizeof *pv->arena);
    pv->inl_arena = calloc(total + 1, 1);
    pv->stacks = malloc((src->n_stacks + 1) * sizeof *pv->stacks);
    if (!pv->arena || !pv->inl_arena || !pv->stacks) {
        hs_view_free(v);
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    return v;
}

/* ---- the view as a call tree (pprof's -call_tree, graph.newTree) ---- */

hs_view *hs_view_call_tree(const hs_view *src, char *err, size_t errlen)
{
    hs_view *v = derived_view_new(src, err, errlen);
    if (!v)
        return NULL;
    struct hs_view_private *pv = v->priv;
    /* parent tree node -> children keyed by (parent, view node) */
    uint32_t *parent_of = NULL, *orig_of = NULL;
    size_t cap = 0;
    if (hs_idmap_init(&pv->node_map, 1024) < 0)
        goto oom;
    size_t w = 0;
    for (size_t i = 0; i < src->n_stacks; i++) {
        const hs_stack *st = &src->stacks[i];
        hs_stack *ns = &pv->stacks[pv->n_stacks++];
        *ns = *st;
        ns->nodes = pv->arena + w;
        ns->inl = pv->inl_arena + w;
        uint32_t parent = UINT32_MAX;
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t orig = st->nodes[k];
            uint64_t h = hs_mix64(((uint64_t)parent << 32) ^ orig);
            size_t slot = (size_t)-1;
            uint32_t id;
            while ((id = hs_idmap_next(&pv->node_map, h, &slot)) != UINT32_MAX)
                if (parent_of[id] == parent && orig_of[id] == orig)
                    break;
            if (id == UINT32_MAX) {
                if (pv->n_nodes == cap) {
                    cap = cap ? cap * 2 : 1024;
                    hs_node *nn = realloc(pv->nodes, cap * sizeof *nn);
                    if (!nn)
                        goto oom;
                    pv->nodes = nn;
                    uint32_t *np = realloc(parent_of, cap * sizeof *np);
                    if (!np)
                        goto oom;
                    parent_of = np;
                    uint32_t *no = realloc(orig_of, cap * sizeof *no);
                    if (!no)
                        goto oom;
                    orig_of = no;
                }
                id = (uint32_t)pv->n_nodes++;
                pv->nodes[id] = src->nodes[orig]; /* strings borrowed from src */
                parent_of[id] = parent;
                orig_of[id] = orig;
                if (hs_idmap_put(&pv->node_map, h, id) < 0)
                    goto oom;
            }
            pv->arena[w] = id;
            pv->inl_arena[w] = st->inl[k];
            w++;
            parent = id;
        }
    }
    free(parent_of);
    free(orig_of);
    v->nodes = pv->nodes;
    v->n_nodes = pv->n_nodes;
    v->stacks = pv->stacks;
    v->n_stacks = pv->n_stacks;
    return v;
oom:
    free(parent_of);
    free(orig_of);
    hs_view_free(v);
    hs_err(err, errlen, "out of memory");
    return NULL;
}

/* ---- the view with every stack reversed (flame --reverse) ---- */

hs_view *hs_view_reversed(const hs_view *src, char *err, size_t errlen)
{
    hs_view *v = derived_view_new(src, err, errlen);
    if (!v)
        return NULL;
    struct hs_view_private *pv = v->priv;
    size_t w = 0;
    for (size_t i = 0; i < src->n_stacks; i++) {
        const hs_stack *st = &src->stacks[i];
        hs_stack *ns = &pv->stacks[i];
        *ns = *st;
        ns->nodes = pv->arena + w;
        ns->inl = pv->inl_arena + w;
        /* leaf first; inl[k] says nodes[k] was inlined into nodes[k-1]:
         * reversed, the caller nodes[k-1] follows the callee, so the mark
         * moves to the callee's successor */
        for (uint32_t k = 0; k < st->n; k++) {
            pv->arena[w + k] = st->nodes[st->n - 1 - k];
            if (k > 0)
                pv->inl_arena[w + k] = st->inl[st->n - k];
        }
        w += st->n;
    }
    pv->n_stacks = src->n_stacks;
    v->stacks = pv->stacks;
    v->n_stacks = pv->n_stacks;
    return v;
}

/* ---- the same view at another sample index (convert --to speedscope) ---- */

/* Whether a view at index si would group ps's samples as src does: it
 * would unless a value at either index is negative (stacks then split by
 * sign) or an option makes totals depend on more than the values summed. */
static bool same_stacks_at(const view_full *src, hs_profile *const *ps, size_t n,
                           const hs_analysis_options *o, int si)
{
    int s0 = src->pub.sample_index;
    if (src->pub.diff || src->has_diff || o->mean || o->relative || o->tagshow || o->taghide)
        return false;
    for (size_t i = 0; i < n; i++)
        for (size_t s = 0; s < ps[i]->n_samples; s++) {
            const int64_t *val = ps[i]->samples[s].values;
            if ((val[s0] | val[si]) < 0)
                return false;
        }
    return true;
}

/* a stack class of the decoder: the location id array of its first kept
 * stack, which stack that is */
typedef struct {
    const uint64_t *ids;
    uint32_t n, stack;
} class_stack;

/* out[i].value += index si of the samples of p (src's stacks first..end)
 * merged into stack i; *total += |value| over all of p's samples. */
static int sum_at(const view_full *src, const hs_profile *p, size_t first, size_t end, int si,
                  hs_stack *out, int64_t *total)
{
    const hs_stack *stacks = src->pub.stacks;
    size_t n_classes = 0;
    (void)hs_profile_sample_stack(p, 0, &n_classes);
    class_stack *cls = n_classes ? hs_table_calloc(n_classes, sizeof *cls) : NULL;
    hs_hmap seen = {0}; /* sample_hash -> stack index, stacks not found by class */
    int rc = -1;
    if (n_classes && !cls)
        return -1;
    for (size_t i = first; i < end; i++) {
        const hs_sample *S = stacks[i].sample;
        uint32_t k = S->n_labels || S->n_locations >= UINT32_MAX
                         ? UINT32_MAX
                         : hs_profile_sample_stack(p, (size_t)(S - p->samples), NULL);
        if (k < n_classes && !cls[k].ids)
            cls[k] = (class_stack){S->location_ids, (uint32_t)S->n_locations, (uint32_t)i};
        else if (hs_hmap_add(&seen, hs_an_sample_hash(S), i) < 0)
            goto out;
    }
    for (size_t s = 0; s < p->n_samples; s++) {
        const hs_sample *S = &p->samples[s];
        int64_t v = S->values[si];
        *total += v; /* not negative (same_stacks_at) */
        uint32_t k = S->n_labels ? UINT32_MAX : hs_profile_sample_stack(p, s, NULL);
        if (k < n_classes && cls[k].ids == S->location_ids && cls[k].n == S->n_locations) {
            out[cls[k].stack].value += v;
            continue;
        }
        uint64_t h = hs_an_sample_hash(S), idx;
        for (size_t it = HS_HMAP_START; hs_hmap_next(&seen, h, &it, &idx);)
            if (hs_an_same_sample(stacks[idx].sample, S)) {
                out[idx].value += v;
                break;
            }
        /* else dropped by the filters */
    }
    rc = 0;
out:
    hs_hmap_free(&seen);
    free(cls);
    return rc;
}

hs_view *hs_view_at_index(const hs_view *src, hs_profile *const *ps, size_t n,
                          const hs_analysis_options *o, int si, char *err, size_t errlen)
{
    const view_full *sf = (const view_full *)src;
    if (si < 0 || (size_t)si >= src->profile->n_sample_types) {
        hs_err(err, errlen, "sample index %d not found", si);
        return NULL;
    }
    if (!same_stacks_at(sf, ps, n, o, si)) {
        hs_analysis_options at = *o;
        char idx[24];
        snprintf(idx, sizeof idx, "%d", si);
        at.sample_index = idx;
        return hs_view_build(ps, n, NULL, 0, &at, err, errlen);
    }
    /* src's stacks summed: when nothing was (all distinct, none zero), the
     * result's are too unless a value at si is zero, and need not be
     * looked at again (hs_an_view_unique) */
    const hs_stack *us;
    size_t nu;
    if (hs_an_view_unique(src, &us, &nu) < 0) {
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    view_full *vf = calloc(1, sizeof *vf);
    hs_stack *stacks = malloc((src->n_stacks + 1) * sizeof *stacks);
    if (!vf || !stacks) {
        free(vf);
        free(stacks);
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    hs_view *v = &vf->pub;
    struct hs_view_private *pv = &vf->priv;
    *v = *src; /* nodes and warnings borrowed */
    v->priv = pv;
    vf->obj_names = sf->obj_names;
    vf->each_sample = sf->each_sample;
    v->sample_index = si;
    v->sample_type = hs_profile_string(src->profile, src->profile->sample_types[si].type);
    v->unit = hs_profile_string(src->profile, src->profile->sample_types[si].unit);
    v->total = v->kept_total = 0;
    pv->stacks = stacks;
    pv->n_stacks = src->n_stacks;
    v->stacks = stacks;
    for (size_t i = 0; i < src->n_stacks; i++) {
        stacks[i] = src->stacks[i];
        stacks[i].value = 0;
    }
    size_t first = 0;
    for (size_t i = 0; i < n; i++) {
        size_t end = first;
        while (end < src->n_stacks && src->stacks[end].profile == ps[i])
            end++;
        if (sf->each_sample) { /* a stack per kept sample */
            for (size_t s = 0; s < ps[i]->n_samples; s++)
                v->total += ps[i]->samples[s].values[si];
            for (size_t k = first; k < end; k++)
                stacks[k].value = src->stacks[k].sample->values[si];
        } else if (sum_at(sf, ps[i], first, end, si, stacks, &v->total) < 0) {
            hs_view_free(v);
            hs_err(err, errlen, "out of memory");
            return NULL;
        }
        first = end;
    }
    bool distinct = us == src->stacks && nu == src->n_stacks;
    for (size_t i = 0; i < src->n_stacks; i++) {
        v->kept_total += stacks[i].value;
        distinct &= stacks[i].value != 0;
    }
    if (distinct) {
        pv->n_ustacks = pv->n_stacks;
        pv->ustacks_done = true;
    }
    return v;
}

/* ---- a view from another stack source's parts ---- */

hs_view *hs_view_from_parts(hs_view_parts *parts)
{
    view_full *vf = calloc(1, sizeof *vf);
    if (!vf) {
        hs_strtab_free(&parts->strs);
        free(parts->nodes);
        free(parts->stacks);
        free(parts->arena);
        free(parts->inl_arena);
        memset(parts, 0, sizeof *parts);
        return NULL;
    }
    hs_view *v = &vf->pub;
    struct hs_view_private *pv = &vf->priv;
    v->priv = pv;
    pv->strs = parts->strs;
    pv->nodes = parts->nodes;
    pv->n_nodes = pv->cap_nodes = parts->n_nodes;
    pv->stacks = parts->stacks;
    pv->n_stacks = pv->cap_stacks = parts->n_stacks;
    pv->arena = parts->arena;
    pv->inl_arena = parts->inl_arena;
    v->sample_type = parts->sample_type;
    v->unit = parts->unit;
    v->sample_index = parts->sample_index;
    v->granularity = parts->granularity;
    v->nodes = pv->nodes;
    v->n_nodes = pv->n_nodes;
    v->stacks = pv->stacks;
    v->n_stacks = pv->n_stacks;
    v->total = parts->total;
    v->base_total = parts->base_total;
    v->kept_total = parts->kept_total;
    v->kept_base = parts->kept_base;
    v->diff = parts->diff;
    v->warnings = "";
    memset(parts, 0, sizeof *parts);
    return v;
}
