/* tags.c — `tags` (pprof's -tags, report.printTags): for every label key of
 * the kept samples, the total value and each label value's share, values
 * sorted by weight then name, keys by name, laid out as Go's tabwriter
 * (AlignRight, padding 1) lays out pprof's lines. Numeric labels are shown
 * scaled in their unit (--unit applies). */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"
#include "base/vec.h"

typedef struct {
    const char *key;
    char *val;
    int64_t w;
} tag_item;

static int cmp_key_val(const void *a, const void *b)
{
    const tag_item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->val, y->val);
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

static int cmp_weight(const void *a, const void *b)
{
    const tag_item *x = a, *y = b;
    if (x->w != y->w)
        return abs64(x->w) > abs64(y->w) ? -1 : abs64(x->w) < abs64(y->w) ? 1 : 0;
    return strcmp(x->val, y->val);
}

/* numeric label unit as pprof's NumLabelUnits infers it */
static const char *num_unit(const hs_profile *p, const hs_label *l)
{
    const char *u = hs_profile_string(p, l->num_unit);
    if (*u)
        return u;
    const char *k = hs_profile_string(p, l->key);
    return (!strcmp(k, "alignment") || !strcmp(k, "request")) ? "bytes" : k;
}

/* "%.1f%s" of pprof's measurement.Scale */
static void scaled1(char *buf, size_t len, int64_t v, const char *from, const char *to)
{
    const char *u;
    double f = hs_scale(v, from, to, &u);
    snprintf(buf, len, "%.1f%s", f, u);
}

int hs_report_tags(FILE *out, const hs_view *v, const hs_analysis_options *o, char *err,
                   size_t errlen)
{
    const char *ounit = o->unit ? o->unit : "minimum";
    size_t n = 0, cap = 0;
    tag_item *it = NULL;
    int rc = -1;
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        const hs_profile *p = st->profile;
        for (size_t l = 0; l < st->sample->n_labels; l++) {
            const hs_label *lb = &st->sample->labels[l];
            const char *key = hs_profile_string(p, lb->key);
            if (!hs_view_label_shown(v, key))
                continue;
            if (HS_VEC_RESERVE(it, cap, n + 1))
                goto oom;
            char vb[128];
            const char *val = lb->str ? hs_profile_string(p, lb->str)
                                      : hs_format_scaled(vb, sizeof vb, lb->num, num_unit(p, lb), ounit);
            it[n].key = key;
            it[n].w = st->value - st->base;
            if (!(it[n].val = strdup(val)))
                goto oom;
            n++;
        }
    }
    if (n)
        qsort(it, n, sizeof *it, cmp_key_val);
    /* sum runs of equal (key, value) into their first item */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(it[m - 1].key, it[i].key) && !strcmp(it[m - 1].val, it[i].val)) {
            it[m - 1].w += it[i].w;
            free(it[i].val);
            continue;
        }
        it[m++] = it[i];
    }
    n = m;
    for (size_t k = 0; k < n;) {
        size_t e = k;
        int64_t total = 0;
        while (e < n && !strcmp(it[e].key, it[k].key))
            total += it[e++].w;
        qsort(it + k, e - k, sizeof *it, cmp_weight);
        /* tabwriter: column 0 holds "key:" and " ", column 1 the values */
        char tb[96];
        size_t w0 = strlen(it[k].key) + 1, w1 = 0;
        char (*cells)[160] = malloc((e - k) * sizeof *cells);
        if (!cells)
            goto oom;
        for (size_t i = k; i < e; i++) {
            char fb[96], pb[32];
            scaled1(fb, sizeof fb, it[i].w, v->unit, ounit);
            if (total > 0)
                snprintf(cells[i - k], sizeof cells[0], "%s (%s):", fb,
                         hs_format_percent(pb, sizeof pb, it[i].w, total));
            else
                snprintf(cells[i - k], sizeof cells[0], "%s:", fb);
            if (strlen(cells[i - k]) > w1)
                w1 = strlen(cells[i - k]);
        }
        if (w0 < 1)
            w0 = 1;
        scaled1(tb, sizeof tb, total, v->unit, ounit);
        fprintf(out, "%*s%s: Total %s\n", (int)(w0 + 1 - strlen(it[k].key) - 1), "", it[k].key, tb);
        for (size_t i = k; i < e; i++)
            fprintf(out, "%*s%*s %s\n", (int)(w0 + 1), " ", (int)(w1 + 1), cells[i - k], it[i].val);
        fputc('\n', out);
        free(cells);
        k = e;
    }
    rc = hs_text_written(out, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    for (size_t i = 0; i < n; i++)
        free(it[i].val);
    free(it);
    return rc;
}
