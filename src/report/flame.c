/* flame.c — `hotspur flame` and `hotspur diff --flame`: write the embedded
 * HTML template (flame.html, compiled in as hs_flame_html) with the call
 * tree of a view spliced in as compact JSON: a table of names and a flat
 * pre-order array of [name, depth, total(, base)] per tree node.
 *
 * Trees larger than HS_FLAME_MAX_NODES are thinned: siblings too small to
 * ever be seen (below a threshold raised until the tree fits) are merged
 * into one "[N tiny frames]" node per parent, so totals stay exact. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "report/stacks.h"

extern const unsigned char hs_flame_html[];
extern const size_t hs_flame_html_len;

#define HS_FLAME_MARKER "/*@HS_DATA@*/"
#define HS_FLAME_MAX_NODES 1500000

/* Text for HTML element content. */
static void hs_html_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else
            putc(*s, out);
    }
}

/* Thinning thresholds, as tried in order: root * 1e-7 * 4^k + 1 while
 * the factor is below 1. */
#define HS_FLAME_STEPS 16

/* The tally: how many tree nodes, and how many each threshold keeps. */
typedef struct {
    size_t n, kept[HS_FLAME_STEPS];
    int64_t thr[HS_FLAME_STEPS];
    size_t n_thr;
    int64_t root_total, root_base;
} hs_flame_count;

static int64_t hs_abs64(int64_t v)
{
    return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

static void hs_flame_count_nodes(void *ctx, const hs_walk_node *n, size_t count)
{
    hs_flame_count *c = ctx;
    int64_t m = hs_abs64(n->total);
    if (hs_abs64(n->base_total) > m)
        m = hs_abs64(n->base_total);
    if (c->n == 0) { /* the root, first: the thresholds scale with it */
        c->root_total = n->total;
        c->root_base = n->base_total;
        for (double f = 1e-7; f < 1 && c->n_thr < HS_FLAME_STEPS; f *= 4)
            c->thr[c->n_thr++] = (int64_t)((double)m * f) + 1;
    }
    c->n += count;
    /* kept by threshold k (hs_walk_keep) while m >= thr[k]; they grow */
    for (size_t k = 0; k < c->n_thr && m >= c->thr[k]; k++)
        c->kept[k] += count;
}

/* Smallest power-of-ten-ish threshold that keeps at most max nodes. */
static int64_t hs_flame_threshold(const hs_flame_count *c, size_t max)
{
    if (c->n <= max)
        return 0;
    for (size_t k = 0; k < c->n_thr; k++)
        if (c->kept[k] <= max)
            return c->thr[k];
    return INT64_MAX;
}

/* The second walk: one [name, depth, total(, base)] per node entered, and
 * one for its children too small to enter, merged. */
typedef struct {
    hs_wbuf *w;
    const uint32_t *name_ix;
    size_t n_nodes;
    uint32_t tiny_name;
    int64_t thr;
    bool diff;
    size_t emitted, merged;
} hs_flame_emit;

static int hs_flame_emit_node(void *ctx, const hs_walk_node *nd, const hs_walk_node *kids,
                              size_t n_kids)
{
    hs_flame_emit *e = ctx;
    hs_wbuf *w = e->w;
    if (e->emitted++)
        hs_wchar(w, ',');
    if (e->emitted % 16 == 0)
        hs_wchar(w, '\n');
    hs_wint(w, nd->node >= e->n_nodes ? 0 : e->name_ix[nd->node]);
    hs_wchar(w, ',');
    hs_wint(w, nd->depth);
    hs_wchar(w, ',');
    hs_wint(w, nd->total);
    if (e->diff) {
        hs_wchar(w, ',');
        hs_wint(w, nd->base_total);
    }
    int64_t small = 0, small_base = 0;
    size_t n_small = 0;
    for (size_t k = 0; e->thr && k < n_kids; k++)
        if (!hs_walk_keep(&kids[k], e->thr)) {
            small = hs_sat_add(small, kids[k].total);
            small_base = hs_sat_add(small_base, kids[k].base_total);
            n_small++;
        }
    if (n_small) {
        e->merged += n_small;
        hs_wchar(w, ',');
        hs_wint(w, e->tiny_name);
        hs_wchar(w, ',');
        hs_wint(w, nd->depth + 1);
        hs_wchar(w, ',');
        hs_wint(w, small);
        if (e->diff) {
            hs_wchar(w, ',');
            hs_wint(w, small_base);
        }
    }
    return 0;
}

/* An explicit page for a view without samples (empty profile, or filters
 * that matched nothing), instead of a blank canvas. */
static int hs_flame_empty(const hs_view *v, const char *title, FILE *out, char *err, size_t errlen)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", out);
    hs_html_text(out, title && *title ? title : "flame graph");
    fputs(" — no samples</title></head>\n<body style=\"font: 14px sans-serif; margin: 2em\">\n<h1>", out);
    hs_html_text(out, title && *title ? title : "flame graph");
    fputs("</h1>\n<p id=\"no-samples\"><strong>No samples.</strong> ", out);
    if (v->profile && v->profile->n_samples)
        fputs("The profile has samples, but none passed the filters (or all their values "
              "are 0 for this sample type)", out);
    else
        fputs("The profile holds no samples: the program may have run too briefly for the "
              "sampling rate, or the profile type saw no events", out);
    fputs(". Sample type: ", out);
    hs_html_text(out, v->sample_type ? v->sample_type : "");
    fputs(".</p>\n</body></html>\n", out);
    return hs_out_finish(out, err, errlen);
}

static int hs_flame_write(const hs_view *v, const char *title, const char *palette, bool diff,
                          FILE *out, char *err, size_t errlen)
{
    uint32_t *name_ix = NULL, *name_order = NULL;
    size_t n_used = 0;
    hs_wbuf *w = NULL;
    int rc = -1;
    const char *tpl = (const char *)hs_flame_html;
    const char *mark = memmem(tpl, hs_flame_html_len, HS_FLAME_MARKER, strlen(HS_FLAME_MARKER));
    if (!mark) {
        snprintf(err, errlen, "flame graph template has no data marker");
        return -1;
    }
    hs_flame_count cnt = {0};
    if (hs_calltree_tally(v, hs_flame_count_nodes, &cnt, err, errlen) != 0)
        return -1;
    if (cnt.n <= 1 || (cnt.root_total == 0 && cnt.root_base == 0))
        return hs_flame_empty(v, title, out, err, errlen);
    if (hs_calltree_first_use(v, &name_order, &n_used, err, errlen) != 0)
        return -1;
    w = malloc(sizeof *w);
    name_ix = calloc(v->n_nodes + 1, sizeof *name_ix);
    if (!w || !name_ix) {
        snprintf(err, errlen, "out of memory writing the flame graph");
        goto done;
    }
    hs_wbuf_init(w, out);
    int64_t thr = hs_flame_threshold(&cnt, HS_FLAME_MAX_NODES);

    fwrite(tpl, 1, (size_t)(mark - tpl), out);
    fputs("{\"title\":", out);
    hs_json_string(out, title ? title : "");
    fputs(",\"type\":", out);
    hs_json_string(out, v->sample_type ? v->sample_type : "");
    fputs(",\"unit\":", out);
    hs_json_string(out, v->unit ? v->unit : "");
    fprintf(out, ",\"total\":%" PRId64 ",\"base_total\":%" PRId64 ",\"diff\":%s", v->total,
            v->base_total, diff ? "true" : "false");
    fputs(",\"palette\":", out);
    hs_json_string(out, palette ? palette : "hot");
    /* names: only those the tree uses, numbered by first use (0 is the
     * root's "all"), then one more for merged tiny frames */
    fputs(",\"names\":[\"all\"", out);
    for (size_t k = 0; k < n_used; k++) {
        name_ix[name_order[k]] = (uint32_t)k + 1;
        putc(',', out);
        if ((k + 1) % 64 == 0)
            putc('\n', out);
        const char *nm = v->nodes[name_order[k]].name;
        hs_json_string(out, nm ? nm : "");
    }
    fputs(",\"[tiny frames]\"]", out);

    /* nodes, pre-order */
    fputs(",\"nodes\":[\n", out);
    hs_flame_emit e = {w, name_ix, v->n_nodes, (uint32_t)n_used + 1, thr, diff, 0, 0};
    if (hs_calltree_walk(v, thr, hs_flame_emit_node, &e, err, errlen) != 0)
        goto done;
    hs_wflush(w);
    fprintf(out, "],\"merged\":%zu}", e.merged);
    const char *rest = mark + strlen(HS_FLAME_MARKER);
    fwrite(rest, 1, hs_flame_html_len - (size_t)(rest - tpl), out);
    rc = hs_out_finish(out, err, errlen);
done:
    free(w);
    free(name_ix);
    free(name_order);
    return rc;
}

int hs_report_flame(const hs_view *v, const char *title, FILE *out, char *err, size_t errlen)
{
    return hs_flame_write(v, title, "hot", false, out, err, errlen);
}

int hs_report_flame_ex(const hs_view *v, const char *title, const char *palette, FILE *out,
                       char *err, size_t errlen)
{
    return hs_flame_write(v, title, palette, false, out, err, errlen);
}

int hs_report_flame_diff(const hs_view *v, const char *title, FILE *out, char *err,
                         size_t errlen)
{
    if (!v->diff) {
        snprintf(err, errlen, "differential flame graph needs a view with a base profile");
        return -1;
    }
    return hs_flame_write(v, title, "hot", true, out, err, errlen);
}
