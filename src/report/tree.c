/* tree.c — `tree` and `peek RE` (pprof's printTree): for each node of the
 * trimmed graph (only those whose name matches RE for peek), its callers
 * with the edge weight and share of the node's cum, the node's own flat and
 * cum, then its callees — KCachegrind's callers/callees panes as text. */
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"

int hs_report_tree(FILE *out, const hs_view *v, const hs_graph *g, const hs_analysis_options *o,
                   const hs_regex *rx, const char *rx_text, char *err, size_t errlen)
{
    static const char sep[] = "----------------------------------------------------------+-------------";
    static const char legend[] =
        "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t ";
    if (rx) { /* no match: only the error, no report header (as list does) */
        size_t i = 0;
        while (i < g->n_order && !hs_regex_match(rx, v->nodes[g->order[i]].name))
            i++;
        if (i == g->n_order) {
            snprintf(err, errlen, "no matches found for regexp: %s", rx_text ? rx_text : "");
            return -1;
        }
    }
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, g, o);
    if (hs_text_report_labels(out, &c) < 0)
        return hs_text_written(out, err, errlen);
    fprintf(out, "%s\n%s\n", sep, legend);
    int64_t flat_sum = 0;
    char a[64], b[64], p1[32], p2[32], p3[32];
    for (size_t i = 0; i < g->n_order; i++) {
        uint32_t id = g->order[i];
        const hs_graph_node *n = &g->nodes[id];
        const char *name = v->nodes[id].name;
        if (rx && !hs_regex_match(rx, name))
            continue;
        int64_t flat = hs_graph_flat(n), cum = hs_graph_cum(n);
        fprintf(out, "%s\n", sep);
        for (size_t k = 0; k < n->n_in; k++) {
            const hs_graph_edge *e = &g->edges[n->in[k]];
            int64_t w = e->weight - e->base_weight;
            fprintf(out, "%50s %s |   %s%s\n", hs_text_value(&c, a, sizeof a, w),
                    hs_format_percent(p1, sizeof p1, w, cum), v->nodes[e->src].name,
                    e->inline_call ? " (inline)" : "");
        }
        flat_sum += flat;
        fprintf(out, "%10s %s %s %10s %s                | %s\n", hs_text_value(&c, a, sizeof a, flat),
                hs_format_percent(p1, sizeof p1, flat, v->total),
                hs_format_percent(p2, sizeof p2, flat_sum, v->total),
                hs_text_value(&c, b, sizeof b, cum), hs_format_percent(p3, sizeof p3, cum, v->total),
                name);
        for (size_t k = 0; k < n->n_out; k++) {
            const hs_graph_edge *e = &g->edges[n->out[k]];
            int64_t w = e->weight - e->base_weight;
            fprintf(out, "%50s %s |   %s%s\n", hs_text_value(&c, a, sizeof a, w),
                    hs_format_percent(p1, sizeof p1, w, cum), v->nodes[e->dst].name,
                    e->inline_call ? " (inline)" : "");
        }
    }
    if (g->n_order > 0)
        fprintf(out, "%s\n", sep);
    return hs_text_written(out, err, errlen);
}
