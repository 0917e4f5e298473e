/* peek.c — the compute step of `peek RE` and `tree` (report/tree.c prints
 * it) and of the server's /api/v1/peek: for each node of a call graph in
 * the graph's order whose name matches, its flat and cum and the edges in
 * (callers) and out (callees) with their weights, net of a base. */
#include <stdlib.h>
#include <string.h>

#include "report/text_reports.h"

int hs_peek_compute(const hs_view *v, const hs_graph *g, hs_peek_match match, void *arg, hs_peek *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0, ne = 0;
    for (size_t i = 0; i < g->n_order; i++) {
        const hs_graph_node *gn = &g->nodes[g->order[i]];
        if (match && !match(v->nodes[g->order[i]].name, arg))
            continue;
        n++;
        ne += gn->n_in + gn->n_out;
    }
    out->entries = calloc(n + 1, sizeof *out->entries);
    out->edges = calloc(ne + 1, sizeof *out->edges);
    if (!out->entries || !out->edges) {
        hs_peek_free(out);
        return -1;
    }
    hs_peek_edge *e = out->edges;
    for (size_t i = 0; i < g->n_order; i++) {
        uint32_t id = g->order[i];
        const hs_graph_node *gn = &g->nodes[id];
        if (match && !match(v->nodes[id].name, arg))
            continue;
        hs_peek_entry *en = &out->entries[out->n++];
        en->node = id;
        en->flat = hs_graph_flat(gn);
        en->cum = hs_graph_cum(gn);
        en->callers = e;
        for (size_t k = 0; k < gn->n_in; k++, e++) {
            const hs_graph_edge *ge = &g->edges[gn->in[k]];
            *e = (hs_peek_edge){ge->src, ge->weight - ge->base_weight, ge->inline_call};
        }
        en->n_callers = gn->n_in;
        en->callees = e;
        for (size_t k = 0; k < gn->n_out; k++, e++) {
            const hs_graph_edge *ge = &g->edges[gn->out[k]];
            *e = (hs_peek_edge){ge->dst, ge->weight - ge->base_weight, ge->inline_call};
        }
        en->n_callees = gn->n_out;
    }
    return 0;
}

void hs_peek_free(hs_peek *p)
{
    free(p->entries);
    free(p->edges);
    memset(p, 0, sizeof *p);
}
