/* list.c — `list RE` (pprof's printSource, callgrind_annotate's per-line
 * view): for every function whose name matches RE, each of its source files
 * with flat and cum per line, from 5 lines before the first sampled line
 * (or the function's start line) to 5 after the last. The view must be
 * built at --lines granularity. The ROUTINE header's cum counts each sample
 * once even when the function recurses (pprof sums its lines instead, which
 * can exceed 100%). Sources are looked up as recorded, then under
 * --source-path DIR (the recorded path with leading directories removed one
 * by one); when none is found a clear note says so. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
#include "report/text_reports.h"

typedef struct {
    char **lines; /* 1-based */
    size_t n;
    bool ok;
    char *path; /* where it was found */
} src_file;

static void src_free(src_file *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i]);
    free(s->lines);
    free(s->path);
    memset(s, 0, sizeof *s);
}

static int src_load(src_file *s, const char *path)
{
    memset(s, 0, sizeof *s);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t cap = 256;
    s->lines = malloc(cap * sizeof *s->lines);
    if (!s->lines) {
        fclose(f);
        return -1;
    }
    s->lines[0] = NULL;
    s->n = 1;
    char *buf = NULL;
    size_t bcap = 0;
    ssize_t len;
    while ((len = getline(&buf, &bcap, f)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = 0;
        if (s->n == cap) {
            cap *= 2;
            char **nl = realloc(s->lines, cap * sizeof *nl);
            if (!nl)
                break;
            s->lines = nl;
        }
        s->lines[s->n] = strdup(buf);
        if (!s->lines[s->n])
            break;
        s->n++;
    }
    free(buf);
    fclose(f);
    s->path = strdup(path);
    s->ok = s->path != NULL;
    return s->ok ? 0 : -1;
}

/* Find the source of `file`: as recorded, then under dir with leading path
 * components dropped one at a time. */
static int src_find(src_file *s, const char *file, const char *dir)
{
    if (src_load(s, file) == 0)
        return 0;
    if (!dir || !*dir)
        return -1;
    for (const char *p = file; p && *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t n = strlen(dir) + strlen(p) + 2;
        char *cand = malloc(n);
        if (!cand)
            return -1;
        snprintf(cand, n, "%s/%s", dir, p);
        int rc = src_load(s, cand);
        free(cand);
        if (rc == 0)
            return 0;
        p = strchr(p, '/');
    }
    return -1;
}

typedef struct {
    const hs_view *v;
} lsort;

static int cmp_ids_by_fn(const void *a, const void *b, void *arg)
{
    const lsort *c = arg;
    const hs_node *x = &c->v->nodes[*(const uint32_t *)a], *y = &c->v->nodes[*(const uint32_t *)b];
    int r = strcmp(x->function, y->function);
    if (r)
        return r;
    r = strcmp(x->file, y->file);
    if (r)
        return r;
    /* creation order within a (function, file) group */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int hs_report_list(FILE *out, const hs_view *v, const hs_analysis_options *o, const hs_regex *rx,
                   const char *rx_text, char *err, size_t errlen)
{
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    hs_graph g;
    if (hs_graph_build(v, &no, &g, err, errlen) < 0)
        return -1;
    uint32_t *ids = malloc((v->n_nodes + 1) * sizeof *ids);
    uint32_t *stamp = malloc((v->n_nodes + 1) * sizeof *stamp);
    int64_t *gcum = NULL;
    size_t *gseen = NULL;
    int rc = -1;
    if (!ids || !stamp) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_graph_node *gn = &g.nodes[i];
        if (!(gn->flat || gn->cum || gn->base_flat || gn->base_cum))
            continue;
        if (hs_regex_match(rx, v->nodes[i].function))
            ids[n++] = (uint32_t)i;
    }
    if (n == 0) {
        snprintf(err, errlen, "no matches found for regexp: %s", rx_text ? rx_text : "");
        goto out;
    }
    lsort ls = {v};
    qsort_r(ids, n, sizeof *ids, cmp_ids_by_fn, &ls);
    /* group (function, file) ids; cum of each group once per sample, in one
     * pass over the stacks */
    for (size_t i = 0; i < v->n_nodes; i++)
        stamp[i] = UINT32_MAX;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (v->nodes[ids[i]].function != v->nodes[ids[i - 1]].function ||
                      v->nodes[ids[i]].file != v->nodes[ids[i - 1]].file))
            ng++;
        stamp[ids[i]] = (uint32_t)ng;
    }
    ng++;
    gcum = calloc(ng, sizeof *gcum);
    gseen = malloc(ng * sizeof *gseen);
    if (!gcum || !gseen) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ng; i++)
        gseen[i] = SIZE_MAX;
    for (size_t s = 0; s < v->n_stacks; s++) {
        const hs_stack *st = &v->stacks[s];
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t gi = stamp[st->nodes[k]];
            if (gi != UINT32_MAX && gseen[gi] != s) {
                gseen[gi] = s;
                gcum[gi] += st->value - st->base;
            }
        }
    }
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, NULL, o);
    char a[64], b[64], pct[32];
    fprintf(out, "Total: %s\n", hs_text_value(&c, a, sizeof a, v->total));
    for (size_t i = 0; i < n;) {
        const char *fn = v->nodes[ids[i]].function;
        size_t fend = i;
        while (fend < n && strcmp(v->nodes[ids[fend]].function, fn) == 0)
            fend++;
        bool any_file = false;
        for (size_t j = i; j < fend;) {
            const char *file = v->nodes[ids[j]].file;
            size_t end = j;
            while (end < fend && strcmp(v->nodes[ids[end]].file, file) == 0)
                end++;
            if (!*file) {
                j = end;
                continue;
            }
            any_file = true;
            int64_t flat = 0, cum = gcum[stamp[ids[j]]];
            for (size_t k = j; k < end; k++)
                flat += g.nodes[ids[k]].flat - g.nodes[ids[k]].base_flat;
            fprintf(out, "ROUTINE ======================== %s in %s\n", fn, file);
            fprintf(out, "%10s %10s (flat, cum) %s of Total\n", hs_text_value(&c, a, sizeof a, flat),
                    hs_text_value(&c, b, sizeof b, cum), hs_format_percent(pct, sizeof pct, cum, v->total));
            src_file sf;
            if (src_find(&sf, file, o->source_path) < 0) {
                fprintf(out, " Source not found: %s%s%s%s\n", file,
                        o->source_path ? " (also looked under " : " (use --source-path DIR to look elsewhere",
                        o->source_path ? o->source_path : "", ")");
                /* still show the per-line numbers we have, by line */
                int64_t last = INT64_MIN;
                for (;;) {
                    int64_t ln = INT64_MAX;
                    for (size_t k = j; k < end; k++)
                        if (v->nodes[ids[k]].line > last && v->nodes[ids[k]].line < ln)
                            ln = v->nodes[ids[k]].line;
                    if (ln == INT64_MAX)
                        break;
                    int64_t fl = 0, cu = 0;
                    for (size_t k = j; k < end; k++)
                        if (v->nodes[ids[k]].line == ln) {
                            fl += g.nodes[ids[k]].flat - g.nodes[ids[k]].base_flat;
                            cu += g.nodes[ids[k]].cum - g.nodes[ids[k]].base_cum;
                        }
                    fprintf(out, "%10s %10s %6lld:?\n", fl ? hs_text_value(&c, a, sizeof a, fl) : ".",
                            cu ? hs_text_value(&c, b, sizeof b, cu) : ".", (long long)ln);
                    last = ln;
                }
                j = end;
                continue;
            }
            /* the line range, as pprof's getSourceFromFile */
            const int64_t margin = 5;
            const hs_node *f0 = &v->nodes[ids[j]];
            int64_t start = f0->start_line ? f0->start_line : f0->line - margin;
            int64_t stop = f0->line + margin;
            for (size_t k = j; k < end; k++) {
                const hs_node *nd = &v->nodes[ids[k]];
                int64_t ns = nd->start_line ? nd->start_line : nd->line - margin;
                int64_t ne = nd->line + margin;
                if (ns < start)
                    start = ns;
                else if (ne > stop)
                    stop = ne;
            }
            if (start < 1)
                start = 1;
            for (int64_t ln = start; ln <= stop && (size_t)ln < sf.n; ln++) {
                int64_t fl = 0, cu = 0;
                for (size_t k = j; k < end; k++) {
                    if (v->nodes[ids[k]].line != ln)
                        continue;
                    fl += g.nodes[ids[k]].flat - g.nodes[ids[k]].base_flat;
                    cu += g.nodes[ids[k]].cum - g.nodes[ids[k]].base_cum;
                }
                fprintf(out, "%10s %10s %6lld:%s\n", fl ? hs_text_value(&c, a, sizeof a, fl) : ".",
                        cu ? hs_text_value(&c, b, sizeof b, cu) : ".", (long long)ln,
                        sf.lines[ln]);
            }
            src_free(&sf);
            j = end;
        }
        if (!any_file)
            fprintf(out, "No source information for %s\n", fn);
        i = fend;
    }
    if (hs_text_written(out, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    free(ids);
    free(stamp);
    free(gcum);
    free(gseen);
    hs_graph_free(&g);
    return rc;
}
