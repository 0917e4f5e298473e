/* graph.c — the call graph of a view (pprof's graph.New + report's
 * newTrimmedGraph): flat and cum per node, weight per caller->callee edge,
 * each node and edge counted once per sample (recursion), then trimmed by
 * nodefraction, nodecount and edgefraction, rebuilding from the stacks after
 * each cut so that values stay exact (edges over dropped nodes become
 * residual). In a diff, NEW and BASE are accumulated side by side and the
 * trimming metric is NEW - BASE, as pprof's negated-base merge does. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"
#include "base/vec.h"

typedef struct {
    const hs_view *v;
    hs_graph_node *nodes;
    uint32_t *nstamp;
    hs_graph_edge *edges;
    uint32_t *estamp;
    size_t n_edges, cap_edges;
    hs_idmap emap;
    bool drop_negative;               /* --drop-negative */
} gbuild;

static inline int64_t abs64(int64_t x)
{
    return x < 0 ? -x : x;
}

/* Room for one more edge: two arrays, one capacity. Out of line: the
 * edge lookup it sits in is the graph's hot loop. */
static __attribute__((noinline)) int edges_grow(gbuild *b)
{
    size_t nc = hs_vec_grown(b->cap_edges, b->n_edges + 1, sizeof *b->edges);
    if (!nc || HS_VEC_RESIZE(b->edges, nc) != 0 || HS_VEC_RESIZE(b->estamp, nc) != 0)
        return -1;
    b->cap_edges = nc;
    return 0;
}

static uint32_t edge_get(gbuild *b, uint32_t src, uint32_t dst)
{
    uint64_t key = hs_mix64(((uint64_t)src << 32) | dst);
    size_t slot = (size_t)-1;
    uint32_t id;
    while ((id = hs_idmap_next(&b->emap, key, &slot)) != UINT32_MAX)
        if (b->edges[id].src == src && b->edges[id].dst == dst)
            return id;
    if (b->n_edges == b->cap_edges && edges_grow(b) != 0)
        return UINT32_MAX;
    id = (uint32_t)b->n_edges;
    if (hs_idmap_put(&b->emap, key, id) < 0)
        return UINT32_MAX;
    hs_graph_edge *e = &b->edges[id];
    memset(e, 0, sizeof *e);
    e->src = src;
    e->dst = dst;
    e->inline_call = true;
    b->estamp[id] = UINT32_MAX;
    b->n_edges++;
    return id;
}

/* One pass over the stacks; kept == NULL keeps every node. Without
 * `with_edges` only the nodes' values are computed (the first pass, whose
 * edges are thrown away whenever nodes are then trimmed: on a large profile
 * they were most of the time and memory). */
static int build_pass(gbuild *b, const uint8_t *kept, bool with_edges)
{
    const hs_view *v = b->v;
    const hs_stack *stacks;
    size_t n_stacks;
    if (hs_an_view_unique(v, &stacks, &n_stacks) < 0)
        return -1;
    memset(b->nodes, 0, v->n_nodes * sizeof *b->nodes);
    for (size_t i = 0; i < v->n_nodes; i++)
        b->nstamp[i] = UINT32_MAX;
    hs_idmap_free(&b->emap);
    if (with_edges && hs_idmap_init(&b->emap, 1024) < 0)
        return -1;
    b->n_edges = 0;
    for (size_t s = 0; s < n_stacks; s++) {
        const hs_stack *st = &stacks[s];
        /* A stack summing to 0 (samples that cancel, e.g. under --base) still
         * makes its edges, as in pprof, where they show with weight 0. */
        int64_t w = st->value, bw = st->base;
        uint32_t stamp = (uint32_t)s;
        uint32_t parent = HS_NODE_NONE;
        bool residual = false;
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t n = st->nodes[k];
            if (kept && !kept[n]) {
                residual = true;
                continue;
            }
            if (b->nstamp[n] != stamp) {
                b->nstamp[n] = stamp;
                b->nodes[n].cum += w;
                b->nodes[n].base_cum += bw;
                b->nodes[n].cum_div += st->div;
            }
            if (with_edges && parent != HS_NODE_NONE && parent != n) {
                uint32_t e = edge_get(b, parent, n);
                if (e == UINT32_MAX)
                    return -1;
                if (b->estamp[e] != stamp) {
                    b->estamp[e] = stamp;
                    hs_graph_edge *E = &b->edges[e];
                    E->weight += w;
                    E->base_weight += bw;
                    if (residual)
                        E->residual = true;
                    /* as pprof: inline by the frame's position in its location */
                    if (!st->inl[k])
                        E->inline_call = false;
                }
            }
            parent = n;
            residual = false;
        }
        if (parent != HS_NODE_NONE && !residual) {
            b->nodes[parent].flat += w;
            b->nodes[parent].base_flat += bw;
            b->nodes[parent].flat_div += st->div;
        }
    }
    return 0;
}

/* pprof's selectNodesForGraph: nodes with a value, without the negative
 * ones under --drop-negative (isNegative: flat < 0, or flat 0 and cum < 0). */
static bool node_present(const hs_graph_node *n, bool drop_negative)
{
    if (!(n->flat || n->cum || n->base_flat || n->base_cum))
        return false;
    int64_t flat = n->flat - n->base_flat, cum = n->cum - n->base_cum;
    return !(drop_negative && (flat < 0 || (flat == 0 && cum < 0)));
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* deterministic tie break (pprof: fmt.Sprint of NodeInfo) */
static int cmp_info(const hs_node *a, const hs_node *b)
{
    int c;
    if ((c = cmp_str(a->function, b->function)))
        return c;
    if (a->address != b->address)
        return a->address < b->address ? -1 : 1;
    if ((c = cmp_str(a->file, b->file)))
        return c;
    if (a->start_line != b->start_line)
        return a->start_line < b->start_line ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return cmp_str(a->objfile, b->objfile);
}

typedef struct {
    const hs_view *v;
    const hs_graph_node *g;
    bool cum;
} sort_ctx;

static int cmp_order(const void *pa, const void *pb, void *arg)
{
    const sort_ctx *c = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_graph_node *A = &c->g[a], *B = &c->g[b];
    int64_t fa = abs64(A->flat - A->base_flat), fb = abs64(B->flat - B->base_flat);
    int64_t ca = abs64(A->cum - A->base_cum), cb = abs64(B->cum - B->base_cum);
    if (c->cum) {
        if (ca != cb)
            return ca > cb ? -1 : 1;
    } else if (fa != fb) {
        return fa > fb ? -1 : 1;
    }
    int s = strcmp(c->v->nodes[a].name, c->v->nodes[b].name);
    if (s)
        return s;
    if (c->cum) {
        if (fa != fb)
            return fa > fb ? -1 : 1;
    } else if (ca != cb) {
        return ca > cb ? -1 : 1;
    }
    return cmp_info(&c->v->nodes[a], &c->v->nodes[b]);
}

typedef struct {
    const hs_view *v;
    const hs_graph_edge *e;
    bool by_src;
} esort_ctx;

static int cmp_edge(const void *pa, const void *pb, void *arg)
{
    const esort_ctx *c = arg;
    const hs_graph_edge *A = &c->e[*(const uint32_t *)pa], *B = &c->e[*(const uint32_t *)pb];
    int64_t wa = A->weight - A->base_weight, wb = B->weight - B->base_weight;
    if (wa != wb && abs64(wa) != abs64(wb))
        return abs64(wa) > abs64(wb) ? -1 : 1;
    int s = strcmp(c->v->nodes[A->src].name, c->v->nodes[B->src].name);
    if (s)
        return s;
    return strcmp(c->v->nodes[A->dst].name, c->v->nodes[B->dst].name);
}

/* collect present nodes into order[] and sort them */
static size_t collect_sorted(const hs_view *v, const hs_graph_node *g, bool cum, bool drop_negative,
                             uint32_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n_nodes; i++)
        if (node_present(&g[i], drop_negative))
            order[n++] = (uint32_t)i;
    sort_ctx c = {v, g, cum};
    qsort_r(order, n, sizeof *order, cmp_order, &c);
    return n;
}

void hs_graph_free(hs_graph *g)
{
    if (!g)
        return;
    if (g->nodes) {
        for (size_t i = 0; i < g->n_nodes; i++) {
            free(g->nodes[i].in);
            free(g->nodes[i].out);
        }
    }
    free(g->nodes);
    free(g->edges);
    free(g->order);
    memset(g, 0, sizeof *g);
}

/* pprof's TrimLowFrequencyEdges visits the in-edges of the graph's nodes
 * only: an edge into a node that is not in the graph (value 0, e.g. a
 * zero-valued sample counted under --mean) is never trimmed. */
static bool edge_trimmed(const gbuild *b, size_t e, int64_t cut)
{
    const hs_graph_edge *E = &b->edges[e];
    return node_present(&b->nodes[E->dst], b->drop_negative) &&
           abs64(E->weight - E->base_weight) < cut;
}

int hs_graph_build(const hs_view *v, const hs_analysis_options *o, hs_graph *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    gbuild b;
    memset(&b, 0, sizeof b);
    b.v = v;
    b.drop_negative = o->drop_negative;
    size_t nn = v->n_nodes ? v->n_nodes : 1;
    b.nodes = calloc(nn, sizeof *b.nodes);
    b.nstamp = malloc(nn * sizeof *b.nstamp);
    uint32_t *order = malloc(nn * sizeof *order);
    uint8_t *kept = calloc(nn, 1);
    uint8_t *edge_dead = NULL;
    if (!b.nodes || !b.nstamp || !order || !kept || hs_idmap_init(&b.emap, 16) < 0)
        goto oom;
    if (build_pass(&b, NULL, false) < 0)
        goto oom;
    int64_t total = 0;
    size_t present = 0;
    for (size_t i = 0; i < v->n_nodes; i++) {
        if (!node_present(&b.nodes[i], b.drop_negative))
            continue;
        present++;
        total += b.nodes[i].flat - b.nodes[i].base_flat;
    }
    out->nodes_total = total;
    double nf = o->nodefraction > 0 ? o->nodefraction : 0;
    double ef = o->edgefraction > 0 ? o->edgefraction : 0;
    int64_t node_cut = abs64((int64_t)((double)total * nf));
    int64_t edge_cut = abs64((int64_t)((double)total * ef));
    out->node_cutoff = node_cut;
    out->edge_cutoff = edge_cut;
    bool filtered = false;
    if (node_cut > 0) {
        size_t nk = 0;
        for (size_t i = 0; i < v->n_nodes; i++) {
            const hs_graph_node *n = &b.nodes[i];
            kept[i] = node_present(n, b.drop_negative) && abs64(n->cum - n->base_cum) >= node_cut;
            nk += kept[i];
        }
        if (nk != present) {
            out->dropped_nodes = present - nk;
            if (build_pass(&b, kept, true) < 0)
                goto oom;
            filtered = true;
        }
    }
    if (!filtered && build_pass(&b, NULL, true) < 0) /* nothing trimmed: every edge */
        goto oom;
    size_t n_order = collect_sorted(v, b.nodes, o->cum_sort, b.drop_negative, order);
    out->orig_count = n_order;
    edge_dead = calloc(b.n_edges + 1, 1);
    if (!edge_dead)
        goto oom;
    if (o->nodecount > 0) {
        /* edges below the cutoff go before selection; not counted */
        for (size_t e = 0; e < b.n_edges; e++)
            if (edge_trimmed(&b, e, edge_cut))
                edge_dead[e] = 1;
        if ((size_t)o->nodecount < n_order) {
            memset(kept, 0, nn);
            for (size_t i = 0; i < (size_t)o->nodecount; i++)
                kept[order[i]] = 1;
            if (build_pass(&b, kept, true) < 0)
                goto oom;
            filtered = true;
            n_order = collect_sorted(v, b.nodes, o->cum_sort, b.drop_negative, order);
            free(edge_dead);
            edge_dead = calloc(b.n_edges + 1, 1);
            if (!edge_dead)
                goto oom;
        }
    }
    for (size_t e = 0; e < b.n_edges; e++) {
        if (!edge_dead[e] && edge_trimmed(&b, e, edge_cut)) {
            edge_dead[e] = 1;
            out->dropped_edges++;
        }
    }
    /* compact edges and attach them to nodes */
    size_t ne = 0;
    for (size_t e = 0; e < b.n_edges; e++)
        if (!edge_dead[e])
            b.edges[ne++] = b.edges[e];
    b.n_edges = ne;
    for (size_t e = 0; e < ne; e++) {
        b.nodes[b.edges[e].src].n_out++;
        b.nodes[b.edges[e].dst].n_in++;
    }
    for (size_t i = 0; i < v->n_nodes; i++) {
        hs_graph_node *n = &b.nodes[i];
        if (n->n_in && !(n->in = malloc(n->n_in * sizeof *n->in)))
            goto oom_nodes;
        if (n->n_out && !(n->out = malloc(n->n_out * sizeof *n->out)))
            goto oom_nodes;
        n->n_in = n->n_out = 0;
    }
    for (size_t e = 0; e < ne; e++) {
        hs_graph_node *s = &b.nodes[b.edges[e].src], *d = &b.nodes[b.edges[e].dst];
        s->out[s->n_out++] = (uint32_t)e;
        d->in[d->n_in++] = (uint32_t)e;
    }
    for (size_t i = 0; i < v->n_nodes; i++) {
        hs_graph_node *n = &b.nodes[i];
        esort_ctx c = {v, b.edges, true};
        if (n->n_in > 1)
            qsort_r(n->in, n->n_in, sizeof *n->in, cmp_edge, &c);
        if (n->n_out > 1)
            qsort_r(n->out, n->n_out, sizeof *n->out, cmp_edge, &c);
    }
    out->nodes = b.nodes;
    out->n_nodes = v->n_nodes;
    out->edges = b.edges;
    out->n_edges = ne;
    out->order = order;
    out->n_order = n_order;
    free(b.nstamp);
    free(b.estamp);
    free(kept);
    free(edge_dead);
    hs_idmap_free(&b.emap);
    return 0;
oom_nodes:
    out->nodes = b.nodes;
    out->n_nodes = v->n_nodes;
    b.nodes = NULL;
    hs_graph_free(out);
oom:
    free(b.nodes);
    free(b.nstamp);
    free(b.edges);
    free(b.estamp);
    free(order);
    free(kept);
    free(edge_dead);
    hs_idmap_free(&b.emap);
    hs_err(err, errlen, "out of memory");
    return -1;
}
