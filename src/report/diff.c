/* diff.c — `diff BASE NEW`: a top table comparing two profiles node by node
 * (function, file, line or address per granularity): base, new, delta and
 * delta% of flat (or cum with --cum), sorted by |delta|. With --normalize
 * NEW was scaled to BASE's total when the view was built, so the table
 * compares shapes. delta% is of the base value; "new" / "gone" mark nodes
 * present on one side only. With p-values (diff --significance) a p column,
 * "*" marking p < 0.05, as the web UI's significant column does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"

static int64_t abs64(int64_t x)
{
    return x < 0 ? -x : x;
}

static const char *delta_pct(char *buf, size_t len, int64_t base, int64_t now)
{
    if (base == 0 && now == 0)
        snprintf(buf, len, "0%%");
    else if (base == 0)
        snprintf(buf, len, "new");
    else if (now == 0)
        snprintf(buf, len, "gone");
    else {
        double d = 100.0 * (double)(now - base) / (double)abs64(base);
        snprintf(buf, len, "%+.2f%%", d);
        if (strcmp(buf, "+0.00%") == 0 || strcmp(buf, "-0.00%") == 0)
            snprintf(buf, len, "0%%");
    }
    return buf;
}

static const char *signed_value(const hs_text_ctx *c, char *buf, size_t len, int64_t v)
{
    char tmp[48]; /* shorter than callers' buffers, so "+value" always fits */
    hs_text_value(c, tmp, sizeof tmp, v);
    if (v > 0)
        snprintf(buf, len, "+%s", tmp);
    else
        snprintf(buf, len, "%s", tmp);
    return buf;
}

/* The significance level of the "*" mark (web/app.js's SIG_P). */
#define HS_DIFF_SIG_P 0.05

static const char *p_text(char *buf, size_t len, double p)
{
    if (isnan(p))
        snprintf(buf, len, "-");
    else if (p < 0.001)
        snprintf(buf, len, "<0.001*");
    else
        snprintf(buf, len, "%.3f%s", p, p < HS_DIFF_SIG_P ? "*" : "");
    return buf;
}

/* The smallest two-sided p the exact test can give with m and n windows:
 * 2 / C(m + n, m) (as web/app.js's minP). */
static double min_p(size_t m, size_t n)
{
    double c = 1;
    for (size_t k = 1; k <= (m < n ? m : n); k++)
        c = c * (double)(m + n - k + 1) / (double)k;
    return 2 / c;
}

int hs_report_diff(FILE *out, const hs_view *v, const hs_graph *g, const hs_analysis_options *o,
                   const hs_diff_pvalues *s, char *err, size_t errlen)
{
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, NULL, o);
    /* unit from the smallest nonzero value shown and the larger total */
    int64_t min = 0, max = v->total > v->base_total ? v->total : v->base_total;
    for (size_t i = 0; i < g->n_order; i++) {
        const hs_graph_node *n = &g->nodes[g->order[i]];
        int64_t vals[2] = {o->cum_sort ? n->cum : n->flat, o->cum_sort ? n->base_cum : n->base_flat};
        for (int k = 0; k < 2; k++) {
            int64_t m = abs64(vals[k]);
            if (m > 0 && (min == 0 || m < min))
                min = m;
        }
    }
    c.unit = hs_output_unit(min, max, v->unit);
    char a[64], b[64], d[64], p[32];
    const char *type = v->sample_type;
    fprintf(out, "Type: %s\n", type);
    fprintf(out, "Base total: %s, new total: %s%s, delta: %s (%s)\n",
            hs_text_value(&c, a, sizeof a, v->base_total), hs_text_value(&c, b, sizeof b, v->total),
            o->normalize ? " (normalized to base)" : "",
            signed_value(&c, d, sizeof d, v->total - v->base_total),
            delta_pct(p, sizeof p, v->base_total, v->total));
    if (g->n_order < g->orig_count)
        fprintf(out, "Showing top %zu nodes out of %zu\n", g->n_order, g->orig_count);
    const char *bh = o->cum_sort ? "base cum" : "base", *nh = o->cum_sort ? "new cum" : "new";
    if (s) {
        fprintf(out, "p: Mann-Whitney U test of each node's share of the %zu BASE windows against the %zu NEW"
                     " ones, * p < %g%s\n",
                s->base_windows, s->new_windows, HS_DIFF_SIG_P,
                min_p(s->base_windows, s->new_windows) < HS_DIFF_SIG_P
                    ? ""
                    : " (too few windows: no p can be below it; 4 a side are needed)");
        fprintf(out, "%10s %10s %10s %8s %7s  %s\n", bh, nh, "delta", "delta%", "p", "name");
    } else
        fprintf(out, "%10s %10s %10s %8s  %s\n", bh, nh, "delta", "delta%", "name");
    for (size_t i = 0; i < g->n_order; i++) {
        uint32_t id = g->order[i];
        const hs_graph_node *n = &g->nodes[id];
        int64_t bv = o->cum_sort ? n->base_cum : n->base_flat;
        int64_t nv = o->cum_sort ? n->cum : n->flat;
        char pv[16];
        if (s)
            fprintf(out, "%10s %10s %10s %8s %7s  %s\n", hs_text_value(&c, a, sizeof a, bv),
                    hs_text_value(&c, b, sizeof b, nv), signed_value(&c, d, sizeof d, nv - bv),
                    delta_pct(p, sizeof p, bv, nv), p_text(pv, sizeof pv, s->p[id]), v->nodes[id].name);
        else
            fprintf(out, "%10s %10s %10s %8s  %s\n", hs_text_value(&c, a, sizeof a, bv),
                    hs_text_value(&c, b, sizeof b, nv), signed_value(&c, d, sizeof d, nv - bv),
                    delta_pct(p, sizeof p, bv, nv), v->nodes[id].name);
    }
    if (hs_text_written(out, err, errlen) < 0)
        return -1;
    return 0;
}
