/* text_common.c — what every graph-based text report shares: choosing the
 * output unit like pprof's selectOutputUnit and the header lines (profile
 * labels as pprof prints them, active filters, "Showing nodes ..."). */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"

static int64_t abs64(int64_t x)
{
    return x < 0 ? -x : x;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* "[binary]" for a frame without a function name, or "<unknown>". */
static void hs_print_duration(FILE *out, const hs_profile *p, int64_t total, const char *su,
                              const char *unit, double ratio)
{
    int64_t shown = ratio > 0 && ratio != 1 ? (int64_t)((double)total * ratio) : total;
    char dur[64], tot[64], pct[32], ratio_s[40] = "";
    const char *tunit;
    double ns = hs_scale(total, su, "nanoseconds", &tunit);
    if (strcmp(tunit, "ns") == 0 && (int64_t)ns != 0)
        snprintf(ratio_s, sizeof ratio_s, "(%s)",
                 hs_format_percent(pct, sizeof pct, (int64_t)ns, p->duration_nanos));
    fprintf(out, "Duration: %s, Total samples = %s %s\n",
            hs_format_value(dur, sizeof dur, p->duration_nanos, "nanoseconds"),
            hs_format_scaled(tot, sizeof tot, shown, su, unit), ratio_s);
}

/* pprof's profile header lines (File/Build ID/comments/Type/Time/Duration),
 * with -divide_by's ratio applied to the total and the type printed as
 * "mean_TYPE" under -mean. */
static int print_profile_header(FILE *out, const hs_profile *p, int si, int64_t total,
                              const char *unit, double ratio, bool mean)
{
    if (p->n_mappings > 0) {
        const char *file = hs_profile_string(p, p->mappings[0].filename);
        const char *bid = hs_profile_string(p, p->mappings[0].build_id);
        if (*file)
            fprintf(out, "File: %s\n", base_name(file));
        if (*bid)
            fprintf(out, "Build ID: %s\n", bid);
    }
    for (size_t i = 0; i < p->n_comments; i++) {
        const char *c = hs_profile_string(p, p->comments[i]);
        if (c[0] != '#')
            fprintf(out, "%s\n", c);
    }
    const char *type = hs_profile_string(p, p->sample_types[si].type);
    if (*type)
        fprintf(out, "Type: %s%s\n", mean ? "mean_" : "", type);
    if (p->time_nanos) {
        char tbuf[96];
        fprintf(out, "Time: %s\n", hs_format_time(tbuf, sizeof tbuf, p->time_nanos));
    }
    if (p->duration_nanos)
        hs_print_duration(out, p, total, hs_profile_string(p, p->sample_types[si].unit), unit,
                          ratio);
    return ferror(out) ? -1 : 0;
}

void hs_text_ctx_init(hs_text_ctx *c, const hs_view *v, const hs_graph *g,
                      const hs_analysis_options *o)
{
    c->v = v;
    c->g = g;
    c->o = o;
    c->sample_unit = v->unit;
    c->unit = "minimum";
    c->ratio = o && o->divide_by != 0 ? 1 / o->divide_by : 1;
    if (o && o->unit && strcmp(o->unit, "minimum") != 0) {
        c->unit = o->unit; /* pprof's -unit: selectOutputUnit does nothing */
        return;
    }
    if (!g || g->n_order == 0)
        return;
    int64_t min = 0;
    for (size_t i = 0; i < g->n_order; i++) {
        const hs_graph_node *n = &g->nodes[g->order[i]];
        int64_t m = abs64(hs_graph_flat(n));
        if (m == 0)
            m = abs64(hs_graph_cum(n));
        if (m > 0 && (min == 0 || m < min))
            min = m;
    }
    int64_t max = v->total;
    if (min == 0)
        min = max;
    if (c->ratio > 0 && c->ratio != 1) {
        min = (int64_t)((double)min * c->ratio);
        max = (int64_t)((double)max * c->ratio);
    }
    c->unit = hs_output_unit(min, max, v->unit);
}

char *hs_text_value(const hs_text_ctx *c, char *buf, size_t len, int64_t v)
{
    if (c->ratio > 0 && c->ratio != 1)
        v = (int64_t)((double)v * c->ratio); /* pprof's -divide_by, truncated as Go's int64() */
    return hs_format_scaled(buf, len, v, c->sample_unit, c->unit);
}

int hs_text_profile_labels(FILE *out, const hs_text_ctx *c)
{
    return print_profile_header(out, c->v->profile, c->v->sample_index, c->v->total,
                                     c->unit, c->ratio, c->v->mean);
}

static void print_active_filters(FILE *out, const hs_analysis_options *o)
{
    const struct {
        const char *k;
        const char *v;
    } f[] = {{"focus", o->focus},         {"ignore", o->ignore},     {"hide", o->hide},
             {"show", o->show},           {"show_from", o->show_from},
             {"tagfocus", o->tagfocus},   {"tagignore", o->tagignore},
             {"tagshow", o->tagshow},     {"taghide", o->taghide}};
    bool any = false;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!f[i].v || !*f[i].v)
            continue;
        if (!any)
            fprintf(out, "Active filters:\n");
        any = true;
        size_t len = strlen(f[i].k) + 1 + strlen(f[i].v);
        if (len > 80) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s=%s", f[i].k, f[i].v);
            buf[80] = 0;
            fprintf(out, "   %s\xe2\x80\xa6\n", buf);
        } else {
            fprintf(out, "   %s=%s\n", f[i].k, f[i].v);
        }
    }
}

int hs_text_report_labels(FILE *out, const hs_text_ctx *c)
{
    const hs_view *v = c->v;
    const hs_graph *g = c->g;
    if (hs_text_profile_labels(out, c) < 0)
        return -1;
    print_active_filters(out, c->o);
    int64_t flat_sum = 0;
    for (size_t i = 0; i < g->n_order; i++) {
        const hs_graph_node *n = &g->nodes[g->order[i]];
        flat_sum += hs_graph_flat(n);
    }
    char a[64], b[64], pct[32];
    const char *ps = hs_format_percent(pct, sizeof pct, flat_sum, v->total);
    while (*ps == ' ')
        ps++;
    fprintf(out, "Showing nodes accounting for %s, %s of %s total\n",
            hs_text_value(c, a, sizeof a, flat_sum), ps, hs_text_value(c, b, sizeof b, v->total));
    if (v->total != 0) {
        if (g->dropped_nodes > 0)
            fprintf(out, "Dropped %zu node%s (cum <= %s)\n", g->dropped_nodes,
                    g->dropped_nodes > 1 ? "s" : "",
                    hs_text_value(c, a, sizeof a,
                                  abs64((int64_t)((double)v->total * c->o->nodefraction))));
        /* pprof's text reports never mention dropped edges (its graph does) */
        if (g->n_order > 0 && g->n_order < g->orig_count)
            fprintf(out, "Showing top %zu nodes out of %zu\n", g->n_order, g->orig_count);
    }
    return ferror(out) ? -1 : 0;
}

int hs_text_written(FILE *out, char *err, size_t errlen)
{
    if (!ferror(out))
        return 0;
    snprintf(err, errlen, "error writing output");
    return -1;
}
