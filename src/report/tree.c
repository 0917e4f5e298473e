/* tree.c — `tree` and `peek RE` (pprof's printTree): for each node of the
 * trimmed graph (only those whose name matches RE for peek), its callers
 * with the edge weight and share of the node's cum, the node's own flat and
 * cum, then its callees — KCachegrind's callers/callees panes as text. The
 * numbers come from hs_peek_compute (peek.c), as /api/v1/peek's do; this
 * file only prints them. */
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"

static bool rx_match(const char *name, void *arg)
{
    return hs_regex_match(arg, name);
}

int hs_report_tree(FILE *out, const hs_view *v, const hs_graph *g, const hs_analysis_options *o,
                   const hs_regex *rx, const char *rx_text, char *err, size_t errlen)
{
    static const char sep[] = "----------------------------------------------------------+-------------";
    static const char legend[] =
        "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t ";
    hs_peek pk;
    if (hs_peek_compute(v, g, rx ? rx_match : NULL, (void *)rx, &pk) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rx && pk.n == 0) { /* no match: only the error, no report header (as list does) */
        hs_peek_free(&pk);
        snprintf(err, errlen, "no matches found for regexp: %s", rx_text ? rx_text : "");
        return -1;
    }
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, g, o);
    if (hs_text_report_labels(out, &c) < 0) {
        hs_peek_free(&pk);
        return hs_text_written(out, err, errlen);
    }
    fprintf(out, "%s\n%s\n", sep, legend);
    int64_t flat_sum = 0;
    char a[64], b[64], p1[32], p2[32], p3[32];
    for (size_t i = 0; i < pk.n; i++) {
        const hs_peek_entry *en = &pk.entries[i];
        fprintf(out, "%s\n", sep);
        for (size_t k = 0; k < en->n_callers; k++) {
            const hs_peek_edge *e = &en->callers[k];
            fprintf(out, "%50s %s |   %s%s\n", hs_text_value(&c, a, sizeof a, e->weight),
                    hs_format_percent(p1, sizeof p1, e->weight, en->cum), v->nodes[e->node].name,
                    e->inline_call ? " (inline)" : "");
        }
        flat_sum += en->flat;
        fprintf(out, "%10s %s %s %10s %s                | %s\n", hs_text_value(&c, a, sizeof a, en->flat),
                hs_format_percent(p1, sizeof p1, en->flat, v->total),
                hs_format_percent(p2, sizeof p2, flat_sum, v->total),
                hs_text_value(&c, b, sizeof b, en->cum), hs_format_percent(p3, sizeof p3, en->cum, v->total),
                v->nodes[en->node].name);
        for (size_t k = 0; k < en->n_callees; k++) {
            const hs_peek_edge *e = &en->callees[k];
            fprintf(out, "%50s %s |   %s%s\n", hs_text_value(&c, a, sizeof a, e->weight),
                    hs_format_percent(p1, sizeof p1, e->weight, en->cum), v->nodes[e->node].name,
                    e->inline_call ? " (inline)" : "");
        }
    }
    if (g->n_order > 0)
        fprintf(out, "%s\n", sep);
    hs_peek_free(&pk);
    return hs_text_written(out, err, errlen);
}
