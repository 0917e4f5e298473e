/* graph.c — `hotspur graph`: the trimmed call graph of a view (built by
 * analysis/hs_graph_build with pprof's node/edge fractions and node count)
 * written as Graphviz DOT, styled like pprof's: one box per function whose
 * font grows with its flat value and whose colour deepens with its cum
 * value; edges thicker and redder with their weight, dashed when they stand
 * for a path through trimmed nodes, marked "(inline)" for inlined calls. A
 * legend box says what was shown and what was dropped. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "report/report.h"
#include "report/stacks.h"

/* Text for a DOT double-quoted string: escape quotes and backslashes, turn
 * control characters into spaces. */
static void hs_dot_str(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putc('\\', out);
        putc((unsigned char)*s < 0x20 ? ' ' : *s, out);
    }
}

/* Colour between a light grey (score 0) and a strong red (score 1). */
static void hs_dot_colour(char *buf, size_t len, double score, bool fill)
{
    if (!(score > 0))
        score = 0;
    if (score > 1)
        score = 1;
    score = sqrt(score);
    double r0 = fill ? 240 : 178, g0 = fill ? 240 : 178, b0 = fill ? 240 : 178;
    double r1 = fill ? 250 : 178, g1 = fill ? 200 : 34, b1 = fill ? 190 : 34;
    snprintf(buf, len, "#%02x%02x%02x", (int)(r0 + (r1 - r0) * score),
             (int)(g0 + (g1 - g0) * score), (int)(b0 + (b1 - b0) * score));
}

static char *hs_pct(char *buf, size_t len, int64_t v, int64_t total)
{
    if (total == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f%%", 100.0 * (double)v / (double)total);
    return buf;
}

int hs_report_graph(const hs_view *v, const hs_analysis_options *o, const char *title, FILE *out,
                    char *err, size_t errlen)
{
    hs_graph g;
    if (hs_graph_build(v, o, &g, err, errlen) != 0)
        return -1;
    const char *unit = v->unit ? v->unit : "";
    int64_t total = v->total;
    char a[64], b[64], c[64], d[64];

    /* Scales: biggest flat for font size, biggest edge for pen width. */
    int64_t max_flat = 1, max_edge = 1, shown = 0;
    for (size_t k = 0; k < g.n_order; k++) {
        const hs_graph_node *n = &g.nodes[g.order[k]];
        int64_t f = n->flat < 0 ? -n->flat : n->flat;
        if (f > max_flat)
            max_flat = f;
        shown = hs_sat_add(shown, n->flat);
    }
    for (size_t e = 0; e < g.n_edges; e++) {
        int64_t w = g.edges[e].weight < 0 ? -g.edges[e].weight : g.edges[e].weight;
        if (w > max_edge)
            max_edge = w;
    }

    fputs("digraph \"hotspur\" {\n", out);
    fputs("node [style=filled fillcolor=\"#f8f8f8\"]\n", out);
    /* legend */
    fputs("subgraph cluster_L { \"legend\" [shape=box fontsize=16 label=\"", out);
    if (!o->compact_labels) { /* --compact-labels: only what was shown, as pprof */
        if (title && *title) {
            hs_dot_str(out, title);
            fputs("\\l", out);
        }
        fputs("Type: ", out);
        hs_dot_str(out, v->sample_type ? v->sample_type : "");
        fputs("\\l", out);
    }
    fprintf(out, "Showing nodes accounting for %s, %s of %s total\\l",
            hs_format_value(a, sizeof a, shown, unit), hs_pct(b, sizeof b, shown, total),
            hs_format_value(c, sizeof c, total, unit));
    if (g.dropped_nodes)
        fprintf(out, "Dropped %zu nodes (cum <= %s)\\l", g.dropped_nodes,
                hs_format_value(d, sizeof d, g.node_cutoff, unit));
    if (g.dropped_edges)
        fprintf(out, "Dropped %zu edges (freq <= %s)\\l", g.dropped_edges,
                hs_format_value(d, sizeof d, g.edge_cutoff, unit));
    if (g.n_order < g.orig_count)
        fprintf(out, "Showing top %zu nodes out of %zu\\l", g.n_order, g.orig_count);
    fputs("\" tooltip=\"hotspur\"] }\n", out);

    /* nodes: "N<id>" with name, flat and cum */
    for (size_t k = 0; k < g.n_order; k++) {
        uint32_t id = g.order[k];
        const hs_graph_node *n = &g.nodes[id];
        const char *name = v->nodes[id].name ? v->nodes[id].name : "";
        double fr = (double)(n->flat < 0 ? -n->flat : n->flat) / (double)max_flat;
        int fontsize = (int)(8.0 + 24.0 * sqrt(fr));
        char fill[16], border[16];
        double score = total ? (double)n->cum / (double)total : 0;
        hs_dot_colour(fill, sizeof fill, score, true);
        hs_dot_colour(border, sizeof border, score, false);
        fprintf(out, "N%" PRIu32 " [label=\"", id);
        hs_dot_str(out, name);
        fprintf(out, "\\n%s (%s)", hs_format_value(a, sizeof a, n->flat, unit),
                hs_pct(b, sizeof b, n->flat, total));
        if (n->cum != n->flat)
            fprintf(out, "\\nof %s (%s)", hs_format_value(c, sizeof c, n->cum, unit),
                    hs_pct(d, sizeof d, n->cum, total));
        fprintf(out, "\" id=\"node%" PRIu32 "\" fontsize=%d shape=box tooltip=\"", id, fontsize);
        hs_dot_str(out, name);
        fprintf(out, " (%s)\" color=\"%s\" fillcolor=\"%s\"]\n",
                hs_format_value(c, sizeof c, n->cum, unit), border, fill);
    }

    /* edges, heaviest first as the graph lists them */
    for (size_t e = 0; e < g.n_edges; e++) {
        const hs_graph_edge *ed = &g.edges[e];
        double wr = (double)(ed->weight < 0 ? -ed->weight : ed->weight) / (double)max_edge;
        char colour[16];
        hs_dot_colour(colour, sizeof colour, total ? (double)ed->weight / (double)total : 0,
                      false);
        int weight = total ? 1 + (int)(100.0 * (double)(ed->weight < 0 ? -ed->weight : ed->weight) /
                                       (double)(total < 0 ? -total : total))
                           : 1;
        fprintf(out, "N%" PRIu32 " -> N%" PRIu32 " [label=\" %s%s\" weight=%d penwidth=%.2f color=\"%s\"",
                ed->src, ed->dst, hs_format_value(a, sizeof a, ed->weight, unit),
                ed->inline_call ? "\\n (inline)" : "", weight, 1.0 + 5.0 * wr, colour);
        if (ed->residual)
            fputs(" style=\"dotted\"", out);
        fputs(" tooltip=\"", out);
        hs_dot_str(out, v->nodes[ed->src].name ? v->nodes[ed->src].name : "");
        fputs(" -> ", out);
        hs_dot_str(out, v->nodes[ed->dst].name ? v->nodes[ed->dst].name : "");
        fprintf(out, " (%s)\" labeltooltip=\"", a);
        hs_dot_str(out, v->nodes[ed->src].name ? v->nodes[ed->src].name : "");
        fputs(" -> ", out);
        hs_dot_str(out, v->nodes[ed->dst].name ? v->nodes[ed->dst].name : "");
        fprintf(out, " (%s)\"]\n", a);
    }
    fputs("}\n", out);
    hs_graph_free(&g);
    return hs_out_finish(out, err, errlen);
}
