/* calltree.c — the call tree (a trie of stacks, root first) that flame
 * graphs draw: one tree node per distinct path, self and total for NEW and
 * BASE. Children are found in a short list, or for a node with many
 * through one hash table keyed by (parent, node), so building is linear in
 * the number of frames; children lists are sorted by
 * total descending, then name, for a stable layout.
 * hs_calltree_walk visits the same nodes in the same order without building
 * the tree (flame graphs, collapsed stacks, speedscope), in memory
 * proportional to the distinct stacks instead of the tree nodes. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"
#include "profile/vec.h"

/* a + b as two's complement wraps (hostile profiles overflow; the sum is
 * the same in any order, which the tree and the walk rely on) */
static inline int64_t hs_wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

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
    int64_t ta = hs_wrap_add(a->total, a->base_total), tb = hs_wrap_add(b->total, b->base_total);
    if (ta != tb)
        return ta > tb ? -1 : 1;
    int r = strcmp(c->nodes[a->node].name, c->nodes[b->node].name);
    if (r)
        return r;
    /* then creation order (the first stack through the node), as
     * hs_calltree_walk orders them */
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    return ia < ib ? -1 : ia > ib;
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
        out->t[0].total = hs_wrap_add(out->t[0].total, st->value);
        out->t[0].base_total = hs_wrap_add(out->t[0].base_total, st->base);
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
            out->t[id].total = hs_wrap_add(out->t[id].total, st->value);
            out->t[id].base_total = hs_wrap_add(out->t[id].base_total, st->base);
            cur = id;
        }
        out->t[cur].self = hs_wrap_add(out->t[cur].self, st->value);
        out->t[cur].base_self = hs_wrap_add(out->t[cur].base_self, st->base);
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

/* ---- the same tree walked without building it ----
 * The stacks through a tree node at depth d share its path and sit in one
 * range of ws[]: those of length d end there (its self), the others are
 * grouped in place by their frame d into its children (a counting sort,
 * with a group number per view node). Chains of nodes with one child and
 * no self (most of a deep tree) are found by comparing the range's stacks
 * with its first, without grouping. Each frame of each stack is looked at
 * a bounded number of times, so a walk is linear in the frames. */

typedef struct {
    const uint32_t *nodes;
    uint32_t n;
    uint32_t orig; /* index among the distinct stacks: tree creation order */
    int64_t value, base;
} wstack;

typedef struct {
    hs_walk_node nd;
    uint32_t lo, hi; /* its stacks: ws[lo, hi) */
    uint32_t first;  /* the smallest orig of those: its creation order */
} wgroup;

static int cmp_group(const void *pa, const void *pb, void *arg)
{
    const wgroup *a = pa, *b = pb;
    const hs_node *nodes = arg;
    int64_t ta = hs_wrap_add(a->nd.total, a->nd.base_total);
    int64_t tb = hs_wrap_add(b->nd.total, b->nd.base_total);
    if (ta != tb)
        return ta > tb ? -1 : 1;
    int r = strcmp(nodes[a->nd.node].name, nodes[b->nd.node].name);
    if (r)
        return r;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* The walk (fn), or the tally (tally: every node, unordered, chains in
 * one call). */
static int walk(const hs_view *v, int64_t min_keep, hs_walk_fn fn, hs_tally_fn tally, void *ctx,
                char *err, size_t errlen)
{
    const hs_stack *us;
    size_t nu, n = 0, pend_cap = 0, kids_cap = 0, kn_cap = 0, np = 0;
    wstack *ws = NULL, *tmp = NULL;
    uint32_t *group_of = NULL; /* view node -> index in kids, UINT32_MAX: none */
    wgroup *pend = NULL, *kids = NULL;
    hs_walk_node *kn = NULL;
    int rc = -1;
    if (hs_an_view_unique(v, &us, &nu) < 0 || nu >= UINT32_MAX)
        goto oom;
    ws = malloc((nu + 1) * sizeof *ws);
    tmp = malloc((nu + 1) * sizeof *tmp);
    group_of = malloc((v->n_nodes + 1) * sizeof *group_of);
    if (!ws || !tmp || !group_of || HS_VEC_RESERVE(pend, pend_cap, 16) < 0)
        goto oom;
    memset(group_of, 0xff, (v->n_nodes + 1) * sizeof *group_of);
    wgroup *root = &pend[np++];
    memset(root, 0, sizeof *root);
    root->nd.node = HS_NODE_NONE;
    for (size_t i = 0; i < nu; i++) {
        const hs_stack *st = &us[i];
        if (st->value == 0 && st->base == 0)
            continue;
        ws[n++] = (wstack){st->nodes, st->n, (uint32_t)i, st->value, st->base};
        root->nd.total = hs_wrap_add(root->nd.total, st->value);
        root->nd.base_total = hs_wrap_add(root->nd.base_total, st->base);
        if (st->n == 0) {
            root->nd.self = hs_wrap_add(root->nd.self, st->value);
            root->nd.base_self = hs_wrap_add(root->nd.base_self, st->base);
        }
    }
    root->hi = (uint32_t)n;
    while (np) {
        wgroup g = pend[--np];
        hs_walk_node cur = g.nd;
        uint32_t lo = g.lo, hi = g.hi, d = cur.depth;
        if (tally)
            tally(ctx, &cur, 1);
        if (lo == hi) { /* only the root of a view without stacks */
            if (fn && (rc = fn(ctx, &cur, NULL, 0)) != 0)
                goto done;
            continue;
        }
        /* the path all of the range shares: c frames */
        const uint32_t *f = ws[lo].nodes;
        uint32_t c = ws[lo].n;
        for (uint32_t i = lo + 1; i < hi && c > d; i++) {
            const uint32_t *a = ws[i].nodes;
            uint32_t lim = ws[i].n < c ? ws[i].n : c, m = d;
            while (m < lim && a[m] == f[m])
                m++;
            c = m;
        }
        if (c > d) { /* a chain down to depth c, one child each */
            int64_t cs = 0, cbs = 0;
            for (uint32_t i = lo; i < hi; i++)
                if (ws[i].n == c) {
                    cs = hs_wrap_add(cs, ws[i].value);
                    cbs = hs_wrap_add(cbs, ws[i].base);
                }
            if (tally) { /* c - d nodes of cur's totals; self at the last */
                hs_walk_node run = {f[d], d + 1, 0, cur.total, 0, cur.base_total};
                if (c - d > 1)
                    tally(ctx, &run, c - d - 1);
                cur = (hs_walk_node){f[c - 1], c, cs, cur.total, cbs, cur.base_total};
                tally(ctx, &cur, 1);
            }
            bool entered = true;
            for (uint32_t k = d; k < c && entered && fn; k++) {
                hs_walk_node kid = {f[k], k + 1, k + 1 == c ? cs : 0, cur.total,
                                    k + 1 == c ? cbs : 0, cur.base_total};
                if ((rc = fn(ctx, &cur, &kid, 1)) != 0)
                    goto done;
                entered = hs_walk_keep(&kid, min_keep);
                cur = kid;
            }
            if (!entered)
                continue;
        }
        /* children of cur (depth c): group the range by frame c */
        size_t nk = 0;
        uint32_t nself = 0;
        for (uint32_t i = lo; i < hi; i++) {
            const wstack *w = &ws[i];
            if (w->n == c) {
                nself++;
                continue;
            }
            uint32_t key = w->nodes[c];
            if (key >= v->n_nodes) {
                hs_an_err(err, errlen, "stack frame names node %" PRIu32 " of %zu", key, v->n_nodes);
                rc = -1;
                goto done;
            }
            uint32_t gi = group_of[key];
            if (gi == UINT32_MAX) {
                if (HS_VEC_RESERVE(kids, kids_cap, nk + 1) < 0)
                    goto oom;
                gi = group_of[key] = (uint32_t)nk++;
                kids[gi] = (wgroup){{key, c + 1, 0, 0, 0, 0}, 0, 0, w->orig};
            }
            wgroup *k = &kids[gi];
            k->hi++; /* a count until placed */
            k->nd.total = hs_wrap_add(k->nd.total, w->value);
            k->nd.base_total = hs_wrap_add(k->nd.base_total, w->base);
            if (w->n == c + 1) {
                k->nd.self = hs_wrap_add(k->nd.self, w->value);
                k->nd.base_self = hs_wrap_add(k->nd.base_self, w->base);
            }
            if (w->orig < k->first)
                k->first = w->orig;
        }
        /* place: self stacks first, then each group's */
        uint32_t pos = lo + nself, sp = lo;
        for (size_t gi = 0; gi < nk; gi++) {
            uint32_t cnt = kids[gi].hi;
            kids[gi].lo = kids[gi].hi = pos; /* hi: fill point */
            pos += cnt;
        }
        for (uint32_t i = lo; i < hi; i++) {
            const wstack *w = &ws[i];
            tmp[w->n == c ? sp++ : kids[group_of[w->nodes[c]]].hi++] = *w;
        }
        memcpy(ws + lo, tmp + lo, (size_t)(hi - lo) * sizeof *ws);
        for (size_t gi = 0; gi < nk; gi++)
            group_of[kids[gi].nd.node] = UINT32_MAX;
        if (nk > 16 && fn) {
            qsort_r(kids, nk, sizeof *kids, cmp_group, (void *)v->nodes);
        } else if (nk > 1 && fn) { /* most nodes have a few children */
            for (size_t a = 1; a < nk; a++) {
                wgroup x = kids[a];
                size_t b = a;
                for (; b > 0 && cmp_group(&x, &kids[b - 1], (void *)v->nodes) < 0; b--)
                    kids[b] = kids[b - 1];
                kids[b] = x;
            }
        }
        if (HS_VEC_RESERVE(kn, kn_cap, nk + 1) < 0 || HS_VEC_RESERVE(pend, pend_cap, np + nk + 1) < 0)
            goto oom;
        if (fn) {
            for (size_t gi = 0; gi < nk; gi++)
                kn[gi] = kids[gi].nd;
            if ((rc = fn(ctx, &cur, kn, nk)) != 0)
                goto done;
        }
        for (size_t gi = nk; gi-- > 0;) /* pushed last first: popped in order */
            if (hs_walk_keep(&kids[gi].nd, min_keep))
                pend[np++] = kids[gi];
    }
    rc = 0;
    goto done;
oom:
    hs_an_err(err, errlen, "out of memory");
    rc = -1;
done:
    free(ws);
    free(tmp);
    free(group_of);
    free(pend);
    free(kids);
    free(kn);
    return rc;
}

int hs_calltree_walk(const hs_view *v, int64_t min_keep, hs_walk_fn fn, void *ctx, char *err,
                     size_t errlen)
{
    return walk(v, min_keep, fn, NULL, ctx, err, errlen);
}

int hs_calltree_tally(const hs_view *v, hs_tally_fn fn, void *ctx, char *err, size_t errlen)
{
    return walk(v, 0, NULL, fn, ctx, err, errlen);
}

int hs_calltree_first_use(const hs_view *v, uint32_t **order, size_t *n, char *err,
                          size_t errlen)
{
    const hs_stack *us;
    size_t nu;
    uint8_t *seen = NULL;
    *n = 0;
    *order = NULL;
    if (hs_an_view_unique(v, &us, &nu) < 0)
        goto oom;
    seen = calloc(v->n_nodes + 1, 1);
    *order = malloc((v->n_nodes + 1) * sizeof **order);
    if (!seen || !*order)
        goto oom;
    for (size_t i = 0; i < nu; i++) {
        const hs_stack *st = &us[i];
        if (st->value == 0 && st->base == 0)
            continue;
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t id = st->nodes[k];
            if (id < v->n_nodes && !seen[id]) {
                seen[id] = 1;
                (*order)[(*n)++] = id;
            }
        }
    }
    free(seen);
    return 0;
oom:
    free(seen);
    free(*order);
    *order = NULL;
    *n = 0;
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
