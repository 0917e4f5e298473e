/* calltree.c — the call tree (a trie of stacks, root first) that flame
 * graphs draw: one tree node per distinct path, self and total for NEW and
 * BASE. Children are found through one hash map keyed by (parent, node), so
 * building is linear in the number of frames; children lists are sorted by
 * total descending, then name, for a stable layout. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

static int grow(hs_calltree *t, size_t *cap)
{
    if (t->n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 1024;
    hs_tree_node *nt = realloc(t->t, nc * sizeof *nt);
    if (!nt)
        return -1;
    t->t = nt;
    *cap = nc;
    return 0;
}

typedef struct {
    const hs_view *v;
    const hs_tree_node *t;
} csort;

static int cmp_child(const void *pa, const void *pb, void *arg)
{
    const csort *c = arg;
    const hs_tree_node *a = &c->t[*(const uint32_t *)pa], *b = &c->t[*(const uint32_t *)pb];
    int64_t ta = a->total + a->base_total, tb = b->total + b->base_total;
    if (ta != tb)
        return ta > tb ? -1 : 1;
    return strcmp(c->v->nodes[a->node].name, c->v->nodes[b->node].name);
}

int hs_calltree_build(const hs_view *v, hs_calltree *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    hs_an_map map;
    uint32_t *kids = NULL;
    if (hs_an_map_init(&map, 4096) < 0)
        goto oom;
    if (grow(out, &cap) < 0)
        goto oom;
    memset(&out->t[0], 0, sizeof out->t[0]);
    out->t[0].node = HS_NODE_NONE;
    out->n = 1;
    const hs_stack *stacks;
    size_t n_stacks;
    if (hs_an_view_unique(v, &stacks, &n_stacks) < 0)
        goto oom;
    for (size_t s = 0; s < n_stacks; s++) {
        const hs_stack *st = &stacks[s];
        if (st->value == 0 && st->base == 0)
            continue;
        uint32_t cur = 0;
        out->t[0].total += st->value;
        out->t[0].base_total += st->base;
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t node = st->nodes[k];
            uint64_t key = hs_an_mix(((uint64_t)cur << 32) ^ node ^ 0x9e3779b97f4a7c15ULL);
            size_t slot = (size_t)-1;
            uint32_t id;
            while ((id = hs_an_map_next(&map, key, &slot)) != UINT32_MAX)
                if (out->t[id].parent == cur && out->t[id].node == node)
                    break;
            if (id == UINT32_MAX) {
                if (out->n >= UINT32_MAX - 1 || grow(out, &cap) < 0)
                    goto oom;
                id = (uint32_t)out->n++;
                hs_tree_node *tn = &out->t[id];
                memset(tn, 0, sizeof *tn);
                tn->node = node;
                tn->parent = cur;
                tn->depth = out->t[cur].depth + 1;
                if (hs_an_map_put(&map, key, id) < 0)
                    goto oom;
            }
            out->t[id].total += st->value;
            out->t[id].base_total += st->base;
            cur = id;
        }
        out->t[cur].self += st->value;
        out->t[cur].base_self += st->base;
    }
    hs_an_map_free(&map);
    /* link children, sorted */
    size_t *count = calloc(out->n + 1, sizeof *count);
    kids = malloc((out->n + 1) * sizeof *kids);
    if (!count || !kids) {
        free(count);
        goto oom;
    }
    /* counting sort by parent: start offsets */
    for (size_t i = 1; i < out->n; i++)
        count[out->t[i].parent + 1]++;
    for (size_t i = 1; i <= out->n; i++)
        count[i] += count[i - 1];
    for (size_t i = 1; i < out->n; i++)
        kids[count[out->t[i].parent]++] = (uint32_t)i;
    /* count[p] is now the end of p's range; the start is the previous end */
    csort c = {v, out->t};
    size_t start = 0;
    for (size_t p = 0; p < out->n; p++) {
        size_t end = count[p];
        size_t nk = end - start;
        if (nk > 1)
            qsort_r(kids + start, nk, sizeof *kids, cmp_child, &c);
        out->t[p].first_child = nk ? kids[start] : 0;
        for (size_t k = start; k < end; k++)
            out->t[kids[k]].next_sibling = k + 1 < end ? kids[k + 1] : 0;
        start = end;
    }
    free(count);
    free(kids);
    return 0;
oom:
    hs_an_map_free(&map);
    free(kids);
    hs_calltree_free(out);
    hs_an_err(err, errlen, "out of memory");
    return -1;
}

void hs_calltree_free(hs_calltree *t)
{
    if (!t)
        return;
    free(t->t);
    t->t = NULL;
    t->n = 0;
}
