/* top.c — the `top` report (`hotspur top`, and the server's answer to
 * `hotspur top URL`): pprof's -top over the trimmed graph of an analysis
 * view (analysis/view.c builds the view with every filter, analysis/graph.c
 * trims and orders the nodes). One row per kept node in the graph's order:
 * flat, flat%, sum%, cum, cum%, and "(inline)" / "(partial-inline)" when
 * the node is reached by inline calls only / by both kinds, as pprof marks
 * them. */
#include "report/report.h"
#include "report/text_reports.h"

int hs_report_top_view(FILE *out, const hs_view *v, const hs_graph *g,
                       const hs_analysis_options *o, char *err, size_t errlen)
{
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, g, o);
    if (hs_text_report_labels(out, &c) < 0)
        return hs_text_written(out, err, errlen);
    fprintf(out, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
    int64_t sum = 0;
    for (size_t i = 0; i < g->n_order; i++) {
        uint32_t id = g->order[i];
        const hs_graph_node *n = &g->nodes[id];
        bool inl = false, noinl = false;
        for (size_t k = 0; k < n->n_in; k++) {
            if (g->edges[n->in[k]].inline_call)
                inl = true;
            else
                noinl = true;
        }
        int64_t flat = hs_graph_flat(n), cum = hs_graph_cum(n);
        sum += flat;
        char fb[64], cb[64], fp[32], sp[32], cp[32];
        fprintf(out, "%10s %s %s %10s %s  %s%s\n", hs_text_value(&c, fb, sizeof fb, flat),
                hs_format_percent(fp, sizeof fp, flat, v->total),
                hs_format_percent(sp, sizeof sp, sum, v->total),
                hs_text_value(&c, cb, sizeof cb, cum),
                hs_format_percent(cp, sizeof cp, cum, v->total), v->nodes[id].name,
                inl ? (noinl ? " (partial-inline)" : " (inline)") : "");
    }
    return hs_text_written(out, err, errlen);
}
