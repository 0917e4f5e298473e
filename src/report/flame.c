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

/* A tiny buffered writer for millions of numbers (fprintf is slow). */
typedef struct {
    FILE *out;
    char buf[1 << 16];
    size_t n;
} hs_wbuf;

static void hs_wflush(hs_wbuf *w)
{
    if (w->n)
        fwrite(w->buf, 1, w->n, w->out);
    w->n = 0;
}

static void hs_wint(hs_wbuf *w, int64_t v)
{
    char tmp[24];
    size_t k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[k++] = '-';
    if (w->n + k + 2 > sizeof w->buf)
        hs_wflush(w);
    while (k)
        w->buf[w->n++] = tmp[--k];
}

static void hs_wchar(hs_wbuf *w, char c)
{
    if (w->n + 1 > sizeof w->buf)
        hs_wflush(w);
    w->buf[w->n++] = c;
}

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

static int64_t hs_abs64(int64_t v)
{
    return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

/* Is node i big enough to keep at threshold thr? */
static int hs_flame_keep(const hs_tree_node *t, uint32_t i, int64_t thr)
{
    return hs_abs64(t[i].total) >= thr || hs_abs64(t[i].base_total) >= thr;
}

/* Smallest power-of-ten-ish threshold that keeps at most max nodes. */
static int64_t hs_flame_threshold(const hs_calltree *ct, size_t max)
{
    if (ct->n <= max)
        return 0;
    int64_t root = hs_abs64(ct->t[0].total);
    if (hs_abs64(ct->t[0].base_total) > root)
        root = hs_abs64(ct->t[0].base_total);
    for (double f = 1e-7; f < 1; f *= 4) {
        int64_t thr = (int64_t)((double)root * f) + 1;
        size_t kept = 0;
        for (size_t i = 0; i < ct->n; i++)
            kept += hs_flame_keep(ct->t, (uint32_t)i, thr);
        if (kept <= max)
            return thr;
    }
    return INT64_MAX;
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
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int hs_flame_write(const hs_view *v, const char *title, const char *palette, bool diff,
                          FILE *out, char *err, size_t errlen)
{
    hs_calltree ct = {0};
    uint32_t *stack = NULL, *name_ix = NULL, *name_order = NULL;
    hs_wbuf *w = NULL;
    int rc = -1;
    const char *tpl = (const char *)hs_flame_html;
    const char *mark = memmem(tpl, hs_flame_html_len, HS_FLAME_MARKER, strlen(HS_FLAME_MARKER));
    if (!mark) {
        snprintf(err, errlen, "flame graph template has no data marker");
        return -1;
    }
    if (hs_calltree_build(v, &ct, err, errlen) != 0)
        return -1;
    if (ct.n <= 1 || (ct.t[0].total == 0 && ct.t[0].base_total == 0)) {
        hs_calltree_free(&ct);
        return hs_flame_empty(v, title, out, err, errlen);
    }
    w = malloc(sizeof *w);
    stack = malloc((ct.n + 1) * sizeof *stack);
    name_ix = calloc(v->n_nodes + 1, sizeof *name_ix);
    name_order = malloc((v->n_nodes + 1) * sizeof *name_order);
    if (!w || !stack || !name_ix || !name_order) {
        snprintf(err, errlen, "out of memory writing the flame graph");
        goto done;
    }
    w->out = out;
    w->n = 0;
    int64_t thr = hs_flame_threshold(&ct, HS_FLAME_MAX_NODES);

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
    uint32_t n_names = 1;
    for (size_t i = 1; i < ct.n; i++) {
        uint32_t id = ct.t[i].node;
        if (id < v->n_nodes && !name_ix[id]) {
            name_ix[id] = n_names;
            name_order[n_names++] = id;
        }
    }
    fputs(",\"names\":[\"all\"", out);
    for (uint32_t k = 1; k < n_names; k++) {
        putc(',', out);
        if (k % 64 == 0)
            putc('\n', out);
        const char *nm = v->nodes[name_order[k]].name;
        hs_json_string(out, nm ? nm : "");
    }
    fputs(",\"[tiny frames]\"]", out);
    uint32_t tiny_name = n_names;

    /* nodes, pre-order, with an explicit stack (stacks can be deep) */
    fputs(",\"nodes\":[\n", out);
    size_t sp = 0, emitted = 0, merged = 0;
    int stride_diff = diff;
    stack[sp++] = 0;
    while (sp) {
        uint32_t i = stack[--sp];
        const hs_tree_node *nd = &ct.t[i];
        if (emitted++)
            hs_wchar(w, ',');
        if (emitted % 16 == 0)
            hs_wchar(w, '\n');
        hs_wint(w, i == 0 || nd->node >= v->n_nodes ? 0 : name_ix[nd->node]);
        hs_wchar(w, ',');
        hs_wint(w, nd->depth);
        hs_wchar(w, ',');
        hs_wint(w, nd->total);
        if (stride_diff) {
            hs_wchar(w, ',');
            hs_wint(w, nd->base_total);
        }
        /* children: merge the too-small ones first, then push the kept ones
         * in reverse so they pop in order */
        int64_t small = 0, small_base = 0;
        size_t n_small = 0, first = sp;
        for (uint32_t c = nd->first_child; c; c = ct.t[c].next_sibling) {
            if (thr && !hs_flame_keep(ct.t, c, thr)) {
                small = hs_sat_add(small, ct.t[c].total);
                small_base = hs_sat_add(small_base, ct.t[c].base_total);
                n_small++;
                continue;
            }
            stack[sp++] = c;
        }
        for (size_t a = first, b = sp; a + 1 < b; a++, b--) {
            uint32_t tmp = stack[a];
            stack[a] = stack[b - 1];
            stack[b - 1] = tmp;
        }
        if (n_small) {
            merged += n_small;
            hs_wchar(w, ',');
            hs_wint(w, tiny_name);
            hs_wchar(w, ',');
            hs_wint(w, nd->depth + 1);
            hs_wchar(w, ',');
            hs_wint(w, small);
            if (stride_diff) {
                hs_wchar(w, ',');
                hs_wint(w, small_base);
            }
        }
    }
    hs_wflush(w);
    fprintf(out, "],\"merged\":%zu}", merged);
    const char *rest = mark + strlen(HS_FLAME_MARKER);
    fwrite(rest, 1, hs_flame_html_len - (size_t)(rest - tpl), out);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(w);
    free(stack);
    free(name_ix);
    free(name_order);
    hs_calltree_free(&ct);
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
