/* calltree.c — the call tree (a trie of stacks, root first) that flame
 * graphs draw: one tree node per distinct path, self and total for NEW and
 * BASE. Children are found in a short list, or for a node with many
 * through one hash table keyed by (parent, node), so building is linear in
 * the number of frames; children lists are sorted by
 * total descending, then name, for a stable layout.
 * hs_calltree_walk visits the same nodes in the same order without building
 * the tree (flame graphs, collapsed stacks, speedscope), in memory
 * proportional to the distinct stacks instead of the tree nodes;
 * hs_calltree_walk_split walks it in pieces on two threads, each piece's
 * output joined in order. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"
#include "base/vec.h"

/* a + b as two's complement wraps (hostile profiles overflow; the sum is
 * the same in any order, which the tree and the walk rely on) */
static inline int64_t hs_wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* The (parent, node) -> child table: open addressing, linear probing,
 * with the key stored in the slot so a probe touches one cache line (a
 * 100 000-stack profile has a million frames; the separate key and value
 * arrays of hs_idmap and the tree node to compare were three misses). */
typedef struct {
    uint32_t parent, node, id; /* id UINT32_MAX: empty */
} child_slot;

typedef struct {
    child_slot *s;
    size_t cap, n; /* cap a power of two, n <= cap / 2 */
} child_tab;

static size_t child_hash(uint32_t parent, uint32_t node)
{
    return (size_t)hs_mix64(((uint64_t)parent << 32) ^ node ^ 0x9e3779b97f4a7c15ULL);
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
    /* Summing identical stacks first only matters when values can cancel:
     * with none negative, the tree (its nodes, their order and values) is
     * the same built from the view's own stacks, and the hashing pass is
     * saved. */
    bool negative = false;
    for (size_t i = 0; i < v->n_stacks && !negative; i++)
        negative = v->stacks[i].value < 0 || v->stacks[i].base < 0;
    if (!negative)
        return hs_calltree_build_stacks(v->stacks, v->n_stacks, v->nodes, out, err, errlen);
    const hs_stack *stacks;
    size_t n_stacks;
    if (hs_an_view_unique(v, &stacks, &n_stacks) < 0) {
        memset(out, 0, sizeof *out);
        hs_err(err, errlen, "out of memory");
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
    hs_err(err, errlen, "out of memory");
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

/* One walker's state: ws and tmp are shared by the walkers of a split
 * walk (each works on its own ranges of them), the rest is its own. */
typedef struct {
    const hs_view *v;
    int64_t min_keep;
    hs_walk_fn fn;
    hs_tally_fn tally;
    wstack *ws, *tmp;
    uint32_t *group_of; /* view node -> index in kids, UINT32_MAX: none */
    wgroup *pend, *kids;
    hs_walk_node *kn;
    size_t np, pend_cap, kids_cap, kn_cap;
    char *err;
    size_t errlen;
} walker;

static int walker_init(walker *s, const hs_view *v, int64_t min_keep, hs_walk_fn fn, hs_tally_fn tally,
                       char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->v = v;
    s->min_keep = min_keep;
    s->fn = fn;
    s->tally = tally;
    s->err = err;
    s->errlen = errlen;
    s->group_of = malloc((v->n_nodes + 1) * sizeof *s->group_of);
    if (!s->group_of || HS_VEC_RESERVE(s->pend, s->pend_cap, 16) < 0)
        return -1;
    memset(s->group_of, 0xff, (v->n_nodes + 1) * sizeof *s->group_of);
    return 0;
}

static void walker_free(walker *s)
{
    free(s->group_of);
    free(s->pend);
    free(s->kids);
    free(s->kn);
}

/* The stacks to walk into ws (tmp: as large) and the root group: 0, or -1
 * (out of memory). */
static int walk_stacks(const hs_view *v, wstack **ws, wstack **tmp, wgroup *root)
{
    const hs_stack *us;
    size_t nu, n = 0;
    *ws = *tmp = NULL;
    if (hs_an_view_unique(v, &us, &nu) < 0 || nu >= UINT32_MAX)
        return -1;
    *ws = malloc((nu + 1) * sizeof **ws);
    *tmp = malloc((nu + 1) * sizeof **tmp);
    if (!*ws || !*tmp)
        return -1;
    memset(root, 0, sizeof *root);
    root->nd.node = HS_NODE_NONE;
    for (size_t i = 0; i < nu; i++) {
        const hs_stack *st = &us[i];
        if (st->value == 0 && st->base == 0)
            continue;
        (*ws)[n++] = (wstack){st->nodes, st->n, (uint32_t)i, st->value, st->base};
        root->nd.total = hs_wrap_add(root->nd.total, st->value);
        root->nd.base_total = hs_wrap_add(root->nd.base_total, st->base);
        if (st->n == 0) {
            root->nd.self = hs_wrap_add(root->nd.self, st->value);
            root->nd.base_self = hs_wrap_add(root->nd.base_self, st->base);
        }
    }
    root->hi = (uint32_t)n;
    return 0;
}

/* Visit group g (fn with ctx, or tally) and push its children that are
 * entered onto s->pend: 0, fn's non-zero return, or -1 with a message. */
static int walk_group(walker *s, wgroup g, void *ctx)
{
    const hs_view *v = s->v;
    wstack *ws = s->ws, *tmp = s->tmp;
    uint32_t *group_of = s->group_of;
    hs_walk_fn fn = s->fn;
    hs_tally_fn tally = s->tally;
    hs_walk_node cur = g.nd;
    uint32_t lo = g.lo, hi = g.hi, d = cur.depth;
    int rc;
    if (tally)
        tally(ctx, &cur, 1);
    if (lo == hi) /* only the root of a view without stacks */
        return fn ? fn(ctx, &cur, NULL, 0) : 0;
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
                return rc;
            entered = hs_walk_keep(&kid, s->min_keep);
            cur = kid;
        }
        if (!entered)
            return 0;
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
            for (size_t gi = 0; gi < nk; gi++)
                group_of[s->kids[gi].nd.node] = UINT32_MAX;
            hs_err(s->err, s->errlen, "stack frame names node %" PRIu32 " of %zu", key, v->n_nodes);
            return -1;
        }
        uint32_t gi = group_of[key];
        if (gi == UINT32_MAX) {
            if (HS_VEC_RESERVE(s->kids, s->kids_cap, nk + 1) < 0) {
                for (size_t gj = 0; gj < nk; gj++)
                    group_of[s->kids[gj].nd.node] = UINT32_MAX;
                goto oom;
            }
            gi = group_of[key] = (uint32_t)nk++;
            s->kids[gi] = (wgroup){{key, c + 1, 0, 0, 0, 0}, 0, 0, w->orig};
        }
        wgroup *k = &s->kids[gi];
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
    wgroup *kids = s->kids;
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
    if (HS_VEC_RESERVE(s->kn, s->kn_cap, nk + 1) < 0 ||
        HS_VEC_RESERVE(s->pend, s->pend_cap, s->np + nk + 1) < 0)
        goto oom;
    if (fn) {
        for (size_t gi = 0; gi < nk; gi++)
            s->kn[gi] = kids[gi].nd;
        if ((rc = fn(ctx, &cur, s->kn, nk)) != 0)
            return rc;
    }
    for (size_t gi = nk; gi-- > 0;) /* pushed last first: popped in order */
        if (hs_walk_keep(&kids[gi].nd, s->min_keep))
            s->pend[s->np++] = kids[gi];
    return 0;
oom:
    hs_err(s->err, s->errlen, "out of memory");
    return -1;
}

/* Walk g's subtree: 0, fn's non-zero return, or -1 with a message. */
static int walk_subtree(walker *s, wgroup g, void *ctx)
{
    size_t floor = s->np;
    int rc = walk_group(s, g, ctx);
    while (rc == 0 && s->np > floor)
        rc = walk_group(s, s->pend[--s->np], ctx);
    s->np = floor;
    return rc;
}

/* The walk (fn), or the tally (tally: every node, unordered, chains in
 * one call). */
static int walk(const hs_view *v, int64_t min_keep, hs_walk_fn fn, hs_tally_fn tally, void *ctx,
                char *err, size_t errlen)
{
    walker s;
    wgroup root;
    int rc = -1;
    if (walker_init(&s, v, min_keep, fn, tally, err, errlen) < 0 ||
        walk_stacks(v, &s.ws, &s.tmp, &root) < 0)
        hs_err(err, errlen, "out of memory");
    else
        rc = walk_subtree(&s, root, ctx);
    free(s.ws);
    free(s.tmp);
    walker_free(&s);
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

/* ---- the walk in pieces, on threads ----
 * The calling thread walks the nodes through which more than a piece's
 * share of the stacks go; the subtrees below them (consecutive ones
 * together, up to that share) are pieces that the walkers take in order,
 * each with a context forked where the serial walk would have reached
 * it. The pieces of the serial part between them get contexts of their
 * own, so that every piece's output is joined in walk order. */

typedef struct {
    void *ctx;      /* from fork; NULL once dropped */
    wgroup *g;      /* the subtrees to walk, in order; none: done in the serial part */
    size_t ng, g_cap, stacks;
    int rc;
    bool done;
    char err[256];
} wpiece;

typedef struct {
    const hs_walk_split *sp;
    wpiece *p;
    size_t n, next, joined, ahead; /* next to take; joined so far; taken at most ahead past joined */
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} wpool;

/* Take and walk pieces until none is left (or the walk stops). */
static void pool_work(wpool *pl, walker *s)
{
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->stop && pl->next < pl->n && pl->p[pl->next].done)
            pl->next++;
        if (pl->stop || pl->next >= pl->n)
            break;
        if (pl->next >= pl->joined && pl->next - pl->joined >= pl->ahead) {
            pthread_cond_wait(&pl->cv, &pl->mu);
            continue;
        }
        wpiece *p = &pl->p[pl->next++];
        pthread_mutex_unlock(&pl->mu);
        s->err = p->err;
        s->errlen = sizeof p->err;
        int rc = 0;
        for (size_t i = 0; i < p->ng && rc == 0; i++)
            rc = walk_subtree(s, p->g[i], p->ctx);
        pthread_mutex_lock(&pl->mu);
        p->rc = rc;
        p->done = true;
        pthread_cond_broadcast(&pl->cv);
    }
    pthread_mutex_unlock(&pl->mu);
}

typedef struct {
    wpool *pl;
    walker s;
    pthread_t tid;
} wthread;

static void *pool_thread(void *arg)
{
    wthread *t = arg;
    pool_work(t->pl, &t->s);
    return NULL;
}

/* The serial part: the pieces into pl->p, each forked from the walk's
 * context where it starts. 0, or as hs_calltree_walk (err set). */
static int split_serial(wpool *pl, walker *s, wgroup root, void *ctx, uint32_t share)
{
    size_t cap = 0;
    void *cur = NULL;    /* the context of the serial piece being walked */
    size_t task = SIZE_MAX; /* the last piece, when it is one of subtrees */
    s->pend[s->np++] = root;
    while (s->np) {
        wgroup g = s->pend[--s->np];
        uint32_t size = g.hi - g.lo;
        bool small = g.nd.depth > 0 && size <= share;
        if (small && task != SIZE_MAX && pl->p[task].stacks + size <= share) { /* with the subtrees before */
            wpiece *t = &pl->p[task];
            if (HS_VEC_RESERVE(t->g, t->g_cap, t->ng + 1) < 0)
                goto oom;
            t->g[t->ng++] = g;
            t->stacks += size;
            continue;
        }
        if (small || !cur || task != SIZE_MAX) { /* a new piece */
            if (HS_VEC_RESERVE(pl->p, cap, pl->n + 1) < 0)
                goto oom;
            wpiece *p = &pl->p[pl->n];
            memset(p, 0, sizeof *p);
            if (!(p->ctx = pl->sp->fork(cur ? cur : ctx)))
                goto oom;
            pl->n++;
            if (small) {
                task = pl->n - 1;
                if (HS_VEC_RESERVE(p->g, p->g_cap, 1) < 0)
                    goto oom;
                p->g[p->ng++] = g;
                p->stacks = size;
                continue;
            }
            task = SIZE_MAX;
            p->done = true;
            cur = p->ctx;
        }
        int rc = walk_group(s, g, cur);
        if (rc != 0)
            return rc;
    }
    return 0;
oom:
    hs_err(s->err, s->errlen, "out of memory");
    return -1;
}

int hs_calltree_walk_split(const hs_view *v, int64_t min_keep, const hs_walk_split *sp, void *ctx,
                           int threads, char *err, size_t errlen)
{
    walker s;
    wgroup root;
    /* pieces walked ahead of the one being joined: enough for two walkers,
     * their output in memory meanwhile (peak RSS) */
    wpool pl = {.sp = sp, .ahead = 3};
    wthread th[2];
    size_t nth = 0;
    int rc = -1;
    if (walker_init(&s, v, min_keep, sp->fn, NULL, err, errlen) < 0 ||
        walk_stacks(v, &s.ws, &s.tmp, &root) < 0) {
        hs_err(err, errlen, "out of memory");
        goto done;
    }
    if (threads < 2 || root.hi < HS_WALK_SPLIT_MIN) { /* not worth a thread */
        rc = walk_subtree(&s, root, ctx);
        goto done;
    }
    if ((rc = split_serial(&pl, &s, root, ctx, root.hi / HS_WALK_SPLIT_PIECES + 1)) != 0)
        goto done;
    if (pthread_mutex_init(&pl.mu, NULL) != 0) {
        hs_err(err, errlen, "out of memory");
        rc = -1;
        goto done;
    }
    if (pthread_cond_init(&pl.cv, NULL) != 0) {
        pthread_mutex_destroy(&pl.mu);
        hs_err(err, errlen, "out of memory");
        rc = -1;
        goto done;
    }
    for (int i = 0; i < threads && i < 2; i++) {
        wthread *t = &th[nth];
        t->pl = &pl;
        if (walker_init(&t->s, v, min_keep, sp->fn, NULL, err, errlen) < 0) {
            walker_free(&t->s);
            break;
        }
        t->s.ws = s.ws;
        t->s.tmp = s.tmp;
        if (pthread_create(&t->tid, NULL, pool_thread, t) != 0) {
            walker_free(&t->s);
            break;
        }
        nth++;
    }
    if (!nth) { /* no thread: this one walks every piece first */
        pl.ahead = SIZE_MAX;
        pool_work(&pl, &s);
    }
    /* join the pieces in order as they are done */
    rc = 0;
    pthread_mutex_lock(&pl.mu);
    while (pl.joined < pl.n) {
        wpiece *p = &pl.p[pl.joined];
        if (!p->done) {
            pthread_cond_wait(&pl.cv, &pl.mu);
            continue;
        }
        pthread_mutex_unlock(&pl.mu);
        int r = p->rc;
        if (r < 0)
            hs_err(err, errlen, "%s", p->err);
        else if (r == 0)
            r = sp->join(ctx, p->ctx);
        sp->drop(p->ctx);
        p->ctx = NULL;
        pthread_mutex_lock(&pl.mu);
        pl.joined++;
        pthread_cond_broadcast(&pl.cv);
        if (r != 0) {
            rc = r;
            break;
        }
    }
    pl.stop = true;
    pthread_cond_broadcast(&pl.cv);
    pthread_mutex_unlock(&pl.mu);
    for (size_t i = 0; i < nth; i++) {
        pthread_join(th[i].tid, NULL);
        walker_free(&th[i].s);
    }
    pthread_cond_destroy(&pl.cv);
    pthread_mutex_destroy(&pl.mu);
done:
    for (size_t i = 0; i < pl.n; i++) {
        if (pl.p[i].ctx)
            sp->drop(pl.p[i].ctx);
        free(pl.p[i].g);
    }
    free(pl.p);
    free(s.ws);
    free(s.tmp);
    walker_free(&s);
    return rc;
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
    hs_err(err, errlen, "out of memory");
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
