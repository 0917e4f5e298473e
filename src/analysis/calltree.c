/* calltree.c — the call tree (a trie of stacks, root first) that flame
 * graphs draw: one tree node per distinct path, self and total for NEW and
 * BASE. Children are found in a short list, or for a node with many
 * through one hash table keyed by (parent, node), so building is linear in
 * the number of frames; children lists are sorted by
 * total descending, then name, for a stable layout. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

/* The (parent, node) -> child table: open addressing, linear probing,
 * with the key stored in the slot so a probe touches one cache line (a
 * 100 000-stack profile has a million frames; the separate key and value
 * arrays of hs_an_map and the tree node to compare were three misses). */
typedef struct {
    uint32_t parent, node, id; /* id UINT32_MAX: empty */
} child_slot;

typedef struct {
    child_slot *s;
    size_t cap, n; /* cap a power of two, n <= cap / 2 */
} child_tab;

static size_t child_hash(uint32_t parent, uint32_t node)
{
    return (size_t)hs_an_mix(((uint64_t)parent << 32) ^ node ^ 0x9e3779b97f4a7c15ULL);
}

static int child_init(child_tab *c, size_t hint)
{
    c->cap = 1024;
    while (c->cap < hint * 2)
        c->cap <<= 1;
    c->n = 0;
    c->s = malloc(c->cap * sizeof *c->s);
    if (!c->s)
        return -1;
    memset(c->s, 0xff, c->cap * sizeof *c->s);
    return 0;
}

static int child_grow(child_tab *c)
{
    child_tab g;
    if (child_init(&g, c->cap) < 0) /* doubles */
        return -1;
    size_t mask = g.cap - 1;
    for (size_t i = 0; i < c->cap; i++) {
        if (c->s[i].id == UINT32_MAX)
            continue;
        size_t j = child_hash(c->s[i].parent, c->s[i].node) & mask;
        while (g.s[j].id != UINT32_MAX)
            j = (j + 1) & mask;
        g.s[j] = c->s[i];
    }
    g.n = c->n;
    free(c->s);
    *c = g;
    return 0;
}

/* The slot of (parent, node): its child, or the empty slot to fill. */
static child_slot *child_find(const child_tab *c, uint32_t parent, uint32_t node)
{
    size_t mask = c->cap - 1;
    size_t i = child_hash(parent, node) & mask;
    for (;;) {
        child_slot *e = &c->s[i];
        if (e->id == UINT32_MAX || (e->parent == parent && e->node == node))
            return e;
        i = (i + 1) & mask;
    }
}

/* Insert (parent, node) -> id, known to be absent. */
static int child_add(child_tab *c, uint32_t parent, uint32_t node, uint32_t id)
{
    *child_find(c, parent, node) = (child_slot){parent, node, id};
    if (++c->n * 2 > c->cap && child_grow(c) < 0)
        return -1;
    return 0;
}

/* A node's children are found by walking its list (first_child and
 * next_sibling, scratch until they are linked sorted below) while it has
 * at most LIST_MAX, through the table beyond: the nodes of a new path (most
 * nodes of a deep profile) are appended without touching the table. */
#define LIST_MAX 4

typedef struct {
    const hs_node *nodes;
    const hs_tree_node *t;
} csort;

static int cmp_child(const void *pa, const void *pb, void *arg)
{
    const csort *c = arg;
    const hs_tree_node *a = &c->t[*(const uint32_t *)pa], *b = &c->t[*(const uint32_t *)pb];
    int64_t ta = a->total + a->base_total, tb = b->total + b->base_total;
    if (ta != tb)
        return ta > tb ? -1 : 1;
    return strcmp(c->nodes[a->node].name, c->nodes[b->node].name);
}

int hs_calltree_build(const hs_view *v, hs_calltree *out, char *err, size_t errlen)
{
    const hs_stack *stacks;
    size_t n_stacks;
    if (hs_an_view_unique(v, &stacks, &n_stacks) < 0) {
        memset(out, 0, sizeof *out);
        hs_an_err(err, errlen, "out of memory");
        return -1;
    }
    return hs_calltree_build_stacks(stacks, n_stacks, v->nodes, out, err, errlen);
}

int hs_calltree_build_stacks(const hs_stack *stacks, size_t n_stacks, const hs_node *nodes, hs_calltree *out,
                             char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    child_tab tab = {0};
    uint32_t *kids = NULL;
    uint8_t *nkids = NULL; /* children so far, up to LIST_MAX + 1 */
    /* at most one node per frame, plus the root: sized once (pages never
     * written are never touched), trimmed at the end */
    size_t frames = 1;
    for (size_t s = 0; s < n_stacks; s++)
        frames += stacks[s].n;
    if (frames > UINT32_MAX - 1)
        goto oom;
    out->t = malloc(frames * sizeof *out->t);
    nkids = calloc(frames, sizeof *nkids);
    if (!out->t || !nkids || child_init(&tab, n_stacks) < 0)
        goto oom;
    memset(&out->t[0], 0, sizeof out->t[0]);
    out->t[0].node = HS_NODE_NONE;
    out->n = 1;
    for (size_t s = 0; s < n_stacks; s++) {
        const hs_stack *st = &stacks[s];
        if (st->value == 0 && st->base == 0)
            continue;
        uint32_t cur = 0;
        out->t[0].total += st->value;
        out->t[0].base_total += st->base;
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t node = st->nodes[k], id = UINT32_MAX;
            child_slot *e = NULL;
            if (nkids[cur] <= LIST_MAX) {
                for (uint32_t c = out->t[cur].first_child; c; c = out->t[c].next_sibling)
                    if (out->t[c].node == node) {
                        id = c;
                        break;
                    }
            } else {
                e = child_find(&tab, cur, node);
                id = e->id;
            }
            if (id == UINT32_MAX) {
                id = (uint32_t)out->n++;
                hs_tree_node *tn = &out->t[id];
                memset(tn, 0, sizeof *tn);
                tn->node = node;
                tn->parent = cur;
                tn->depth = out->t[cur].depth + 1;
                if (nkids[cur] <= LIST_MAX) {
                    tn->next_sibling = out->t[cur].first_child;
                    out->t[cur].first_child = id;
                }
                if (nkids[cur] < LIST_MAX) {
                    nkids[cur]++;
                } else if (nkids[cur] == LIST_MAX) { /* the list, this one included, into the table */
                    for (uint32_t c = out->t[cur].first_child; c; c = out->t[c].next_sibling)
                        if (child_add(&tab, cur, out->t[c].node, c) < 0)
                            goto oom;
                    nkids[cur]++;
                } else {
                    *e = (child_slot){cur, node, id};
                    if (++tab.n * 2 > tab.cap && child_grow(&tab) < 0)
                        goto oom;
                }
            }
            out->t[id].total += st->value;
            out->t[id].base_total += st->base;
            cur = id;
        }
        out->t[cur].self += st->value;
        out->t[cur].base_self += st->base;
    }
    free(tab.s);
    tab.s = NULL;
    free(nkids);
    nkids = NULL;
    hs_tree_node *trim = realloc(out->t, out->n * sizeof *out->t);
    if (trim)
        out->t = trim;
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
    csort c = {nodes, out->t};
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
    free(tab.s);
    free(nkids);
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
