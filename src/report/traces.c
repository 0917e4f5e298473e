/* traces.c — `traces` (pprof's printTraces): every kept sample, its string
 * labels and numeric labels (sorted), its value and its stack, leaf first,
 * one frame per line, between separator lines. */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/text_reports.h"

typedef struct {
    char *s;
} line;

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const line *)a)->s, ((const line *)b)->s);
}

/* Label lines of one sample: "%10s:  v1 v2\n" per key, sorted. */
static int print_labels(FILE *out, const hs_view *v, const hs_profile *p, const hs_sample *s,
                        bool numeric)
{
    size_t n = 0;
    line *lines = calloc(s->n_labels + 1, sizeof *lines);
    char **vals = NULL;
    if (!lines)
        return -1;
    int rc = -1;
    for (size_t i = 0; i < s->n_labels; i++) {
        const hs_label *l = &s->labels[i];
        if ((l->str != 0) == numeric)
            continue;
        /* group by key: skip keys seen before */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = s->labels[j].key == l->key && (s->labels[j].str != 0) == !numeric;
        if (seen || !hs_view_label_shown(v, hs_profile_string(p, l->key)))
            continue;
        size_t cap = 256, len = 0;
        char *buf = malloc(cap);
        if (!buf)
            goto out;
        buf[0] = 0;
        for (size_t j = i; j < s->n_labels; j++) {
            const hs_label *m = &s->labels[j];
            if (m->key != l->key || (m->str != 0) == numeric)
                continue;
            char vb[128];
            const char *vs;
            if (numeric) {
                const char *u = hs_profile_string(p, m->num_unit);
                if (!*u) {
                    const char *k = hs_profile_string(p, m->key);
                    u = (!strcmp(k, "alignment") || !strcmp(k, "request")) ? "bytes" : k;
                }
                vs = hs_format_value(vb, sizeof vb, m->num, u);
            } else {
                vs = hs_profile_string(p, m->str);
            }
            size_t need = len + strlen(vs) + 2;
            if (need > cap) {
                cap = need * 2;
                char *nb = realloc(buf, cap);
                if (!nb) {
                    free(buf);
                    goto out;
                }
                buf = nb;
            }
            len += (size_t)sprintf(buf + len, "%s%s", len ? " " : "", vs);
        }
        const char *key = hs_profile_string(p, l->key);
        size_t tl = strlen(key) + len + 32;
        lines[n].s = malloc(tl);
        if (!lines[n].s) {
            free(buf);
            goto out;
        }
        snprintf(lines[n].s, tl, "%10s:  %s\n", key, buf);
        free(buf);
        n++;
    }
    qsort(lines, n, sizeof *lines, cmp_line);
    for (size_t i = 0; i < n; i++)
        fputs(lines[i].s, out);
    rc = 0;
out:
    for (size_t i = 0; i < n; i++)
        free(lines[i].s);
    free(lines);
    free(vals);
    return rc;
}

int hs_report_traces(FILE *out, const hs_view *v, const hs_analysis_options *o, char *err,
                     size_t errlen)
{
    static const char sep[] = "-----------+-------------------------------------------------------";
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, NULL, o);
    if (hs_text_profile_labels(out, &c) < 0)
        return hs_text_written(out, err, errlen);
    for (size_t i = 0; i < v->n_stacks; i++) {
        const hs_stack *st = &v->stacks[i];
        if (st->n == 0)
            continue;
        fprintf(out, "%s\n", sep);
        if (print_labels(out, v, st->profile, st->sample, false) < 0 ||
            print_labels(out, v, st->profile, st->sample, true) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        char vb[64];
        int64_t val = st->value - st->base;
        if (st->div != 0) /* --mean */
            val /= st->div;
        for (uint32_t k = st->n; k-- > 0;)
            fprintf(out, "%10s   %s%s\n",
                    k == st->n - 1 ? hs_text_value(&c, vb, sizeof vb, val) : "",
                    v->nodes[st->nodes[k]].name, st->inl[k] ? " (inline)" : "");
    }
    fprintf(out, "%s\n", sep);
    return hs_text_written(out, err, errlen);
}
