/* list.c — `list RE` (pprof's printSource, callgrind_annotate's per-line
 * view): for every function whose name matches RE, each of its source files
 * with flat and cum per line, from 5 lines before the first sampled line
 * (or the function's start line) to 5 after the last. The view must be
 * built at --lines granularity. The ROUTINE header's cum counts each sample
 * once even when the function recurses (pprof sums its lines instead, which
 * can exceed 100%). Sources are looked up as recorded, then under
 * --source-path DIR (the recorded path with leading directories removed one
 * by one); when none is found a clear note says so. hs_list_compute is the
 * compute step (also behind the server's /api/v1/source); hs_report_list
 * prints it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
#include "report/text_reports.h"
#include "base/vec.h"

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
        if (HS_VEC_RESERVE(s->lines, cap, s->n + 1))
            break;
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

static int cmp_line(const void *a, const void *b)
{
    const hs_list_line *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

int hs_list_compute(const hs_view *v, hs_list_match match, void *arg, hs_list *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    hs_graph g;
    if (hs_graph_build(v, &no, &g, err, errlen) < 0)
        return -1;
    uint32_t *ids = malloc((v->n_nodes + 1) * sizeof *ids);
    uint32_t *stamp = malloc((v->n_nodes + 1) * sizeof *stamp);
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
        if (match(v->nodes[i].function, arg))
            ids[n++] = (uint32_t)i;
    }
    rc = 0;
    if (n == 0)
        goto out;
    rc = -1;
    lsort ls = {v};
    qsort_r(ids, n, sizeof *ids, cmp_ids_by_fn, &ls);
    /* group (function, file) ids; cum of each group once per sample, in one
     * pass over the stacks */
    for (size_t i = 0; i < v->n_nodes; i++)
        stamp[i] = UINT32_MAX;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (strcmp(v->nodes[ids[i]].function, v->nodes[ids[i - 1]].function) != 0 ||
                      strcmp(v->nodes[ids[i]].file, v->nodes[ids[i - 1]].file) != 0))
            ng++;
        stamp[ids[i]] = (uint32_t)ng;
    }
    ng++;
    out->groups = calloc(ng, sizeof *out->groups);
    out->lines = calloc(n, sizeof *out->lines);
    gseen = malloc(ng * sizeof *gseen);
    if (!out->groups || !out->lines || !gseen) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    out->n = ng;
    for (size_t i = 0; i < ng; i++)
        gseen[i] = SIZE_MAX;
    for (size_t s = 0; s < v->n_stacks; s++) {
        const hs_stack *st = &v->stacks[s];
        for (uint32_t k = 0; k < st->n; k++) {
            uint32_t gi = stamp[st->nodes[k]];
            if (gi != UINT32_MAX && gseen[gi] != s) {
                gseen[gi] = s;
                out->groups[gi].cum += st->value - st->base;
            }
        }
    }
    hs_list_line *ln = out->lines;
    for (size_t j = 0, gi = 0; j < n; gi++) {
        hs_list_group *gr = &out->groups[gi];
        size_t end = j;
        while (end < n && stamp[ids[end]] == gi)
            end++;
        gr->function = v->nodes[ids[j]].function;
        gr->file = v->nodes[ids[j]].file;
        /* the line range, as pprof's getSourceFromFile (in node order) */
        const int64_t margin = 5;
        const hs_node *f0 = &v->nodes[ids[j]];
        gr->start = f0->start_line ? f0->start_line : f0->line - margin;
        gr->stop = f0->line + margin;
        hs_list_line *gl = ln;
        gr->lines = gl;
        for (size_t k = j; k < end; k++) {
            const hs_node *nd = &v->nodes[ids[k]];
            const hs_graph_node *gn = &g.nodes[ids[k]];
            int64_t ns = nd->start_line ? nd->start_line : nd->line - margin;
            int64_t ne = nd->line + margin;
            if (ns < gr->start)
                gr->start = ns;
            else if (ne > gr->stop)
                gr->stop = ne;
            gr->flat += gn->flat - gn->base_flat;
            gl[gr->n_lines++] = (hs_list_line){nd->line, gn->flat - gn->base_flat, gn->cum - gn->base_cum};
        }
        if (gr->start < 1)
            gr->start = 1;
        qsort(gl, gr->n_lines, sizeof *gl, cmp_line);
        size_t m = 0; /* merge the nodes of one line */
        for (size_t k = 0; k < gr->n_lines; k++) {
            if (m && gl[m - 1].line == gl[k].line) {
                gl[m - 1].flat += gl[k].flat;
                gl[m - 1].cum += gl[k].cum;
            } else
                gl[m++] = gl[k];
        }
        gr->n_lines = m;
        ln += end - j;
        j = end;
    }
    rc = 0;
out:
    if (rc < 0)
        hs_list_free(out);
    free(ids);
    free(stamp);
    free(gseen);
    hs_graph_free(&g);
    return rc;
}

void hs_list_free(hs_list *l)
{
    free(l->groups);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

static bool rx_match(const char *name, void *arg)
{
    return hs_regex_match(arg, name);
}

int hs_report_list(FILE *out, const hs_view *v, const hs_analysis_options *o, const hs_regex *rx,
                   const char *rx_text, char *err, size_t errlen)
{
    hs_list l;
    if (hs_list_compute(v, rx_match, (void *)rx, &l, err, errlen) < 0)
        return -1;
    if (l.n == 0) {
        snprintf(err, errlen, "no matches found for regexp: %s", rx_text ? rx_text : "");
        return -1;
    }
    hs_text_ctx c;
    hs_text_ctx_init(&c, v, NULL, o);
    char a[64], b[64], pct[32];
    fprintf(out, "Total: %s\n", hs_text_value(&c, a, sizeof a, v->total));
    for (size_t i = 0; i < l.n;) {
        const char *fn = l.groups[i].function;
        size_t fend = i;
        while (fend < l.n && strcmp(l.groups[fend].function, fn) == 0)
            fend++;
        bool any_file = false;
        for (size_t j = i; j < fend; j++) {
            const hs_list_group *gr = &l.groups[j];
            if (!*gr->file)
                continue;
            any_file = true;
            fprintf(out, "ROUTINE ======================== %s in %s\n", fn, gr->file);
            fprintf(out, "%10s %10s (flat, cum) %s of Total\n", hs_text_value(&c, a, sizeof a, gr->flat),
                    hs_text_value(&c, b, sizeof b, gr->cum),
                    hs_format_percent(pct, sizeof pct, gr->cum, v->total));
            src_file sf;
            if (src_find(&sf, gr->file, o->source_path) < 0) {
                fprintf(out, " Source not found: %s%s%s%s\n", gr->file,
                        o->source_path ? " (also looked under " : " (use --source-path DIR to look elsewhere",
                        o->source_path ? o->source_path : "", ")");
                /* still show the per-line numbers we have, by line */
                for (size_t k = 0; k < gr->n_lines; k++) {
                    const hs_list_line *x = &gr->lines[k];
                    fprintf(out, "%10s %10s %6lld:?\n", x->flat ? hs_text_value(&c, a, sizeof a, x->flat) : ".",
                            x->cum ? hs_text_value(&c, b, sizeof b, x->cum) : ".", (long long)x->line);
                }
                continue;
            }
            size_t k = 0;
            for (int64_t ln = gr->start; ln <= gr->stop && (size_t)ln < sf.n; ln++) {
                while (k < gr->n_lines && gr->lines[k].line < ln)
                    k++;
                int64_t fl = 0, cu = 0;
                if (k < gr->n_lines && gr->lines[k].line == ln) {
                    fl = gr->lines[k].flat;
                    cu = gr->lines[k].cum;
                }
                fprintf(out, "%10s %10s %6lld:%s\n", fl ? hs_text_value(&c, a, sizeof a, fl) : ".",
                        cu ? hs_text_value(&c, b, sizeof b, cu) : ".", (long long)ln, sf.lines[ln]);
            }
            src_free(&sf);
        }
        if (!any_file)
            fprintf(out, "No source information for %s\n", fn);
        i = fend;
    }
    hs_list_free(&l);
    return hs_text_written(out, err, errlen);
}
