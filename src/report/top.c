/* top.c — the `top` report: pprof's text report at function granularity.
 *
 * How it works (mirrors pprof's graph.newGraph + report.newTrimmedGraph):
 *  1. Every location is expanded once into frames (one per line, innermost
 *     first), each frame a node id; a node is a function name, or
 *     "[binary]" / "<unknown>" for frames without one.
 *  2. One pass over the samples adds each sample's value to the cum of every
 *     node on its stack (once per sample, via a per-node stamp, so recursion
 *     is not double counted) and to the flat of its leaf node. Call edges
 *     into nodes that are ever inlined are recorded, to label rows
 *     "(inline)" / "(partial-inline)" like pprof.
 *  3. Nodes with |cum| below node_fraction of the total are dropped, the
 *     rest sorted by flat (or cum), name, then the other value; node_count
 *     keeps the first N. When nodes are removed, the pass is repeated with
 *     the kept set (only if it can change an inline label), as pprof does.
 */
#include "report/report.h"
#include "profile/hashmap.h"

#include <stdlib.h>
#include <string.h>

/* ---- per-report state ---- */

typedef struct {
    const hs_profile *p;
    int si;
    size_t n_nodes, cap_nodes;
    const char **names;
    bool *maybe_inline; /* node is a non-outermost line of some location */
    size_t *loc_off;    /* frames of location i: frames[loc_off[i] .. loc_off[i+1]) */
    uint32_t *frames;
    uint32_t *fn_node;  /* per function index: node + 1, 0 = not yet */
    uint32_t *map_node; /* per mapping index: node + 1 */
    uint32_t unknown_node; /* node + 1 */
    hs_hmap by_name;    /* name hash -> candidate nodes */
    int64_t *flat, *cum;
    uint32_t *seen;
    hs_hmap edges;      /* (parent << 32 | child) -> 2: an inline occurrence, 4: an ordinary one */
    bool *in_inline, *in_noinline;
    char **owned;
    size_t n_owned;
} hs_top_ctx;

static uint64_t hs_top_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* The node named `name` (created if new); UINT32_MAX on out of memory. */
static uint32_t hs_top_node(hs_top_ctx *c, const char *name)
{
    uint64_t h = hs_top_hash_str(name), v;
    size_t it = HS_HMAP_START;
    while (hs_hmap_next(&c->by_name, h, &it, &v))
        if (strcmp(c->names[v], name) == 0)
            return (uint32_t)v;
    if (c->n_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 256;
        const char **n = realloc(c->names, cap * sizeof *n);
        if (!n)
            return UINT32_MAX;
        c->names = n;
        c->cap_nodes = cap;
    }
    if (hs_hmap_add(&c->by_name, h, c->n_nodes) != 0)
        return UINT32_MAX;
    c->names[c->n_nodes] = name;
    return (uint32_t)c->n_nodes++;
}

static uint32_t hs_top_owned_node(hs_top_ctx *c, char *name)
{
    if (!name)
        return UINT32_MAX;
    char **o = realloc(c->owned, (c->n_owned + 1) * sizeof *o);
    if (!o) {
        free(name);
        return UINT32_MAX;
    }
    c->owned = o;
    c->owned[c->n_owned++] = name;
    return hs_top_node(c, name);
}

static const char *hs_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* "[binary]" for a frame without a function name, or "<unknown>". */
static uint32_t hs_top_object_node(hs_top_ctx *c, const hs_location *l)
{
    const hs_mapping *m = l->mapping_id ? hs_profile_mapping(c->p, l->mapping_id) : NULL;
    const char *file = m ? hs_profile_string(c->p, m->filename) : "";
    if (!*file) {
        if (!c->unknown_node)
            c->unknown_node = hs_top_node(c, "<unknown>") + 1;
        return c->unknown_node - 1;
    }
    size_t mi = (size_t)(m - c->p->mappings);
    if (!c->map_node[mi]) {
        size_t n = strlen(hs_base_name(file)) + 3;
        char *name = malloc(n);
        if (name)
            snprintf(name, n, "[%s]", hs_base_name(file));
        c->map_node[mi] = hs_top_owned_node(c, name) + 1;
    }
    return c->map_node[mi] - 1;
}

static uint32_t hs_top_line_node(hs_top_ctx *c, const hs_location *l, const hs_line *line)
{
    const hs_function *f = hs_profile_function(c->p, line->function_id);
    const char *name = f ? hs_profile_string(c->p, f->name) : "";
    if (!*name)
        return hs_top_object_node(c, l);
    size_t fi = (size_t)(f - c->p->functions);
    if (!c->fn_node[fi])
        c->fn_node[fi] = hs_top_node(c, name) + 1;
    return c->fn_node[fi] - 1;
}

static int hs_top_build_frames(hs_top_ctx *c, char *err, size_t errlen)
{
    const hs_profile *p = c->p;
    size_t total = 0;
    c->loc_off = malloc((p->n_locations + 1) * sizeof *c->loc_off);
    c->fn_node = calloc(p->n_functions + 1, sizeof *c->fn_node);
    c->map_node = calloc(p->n_mappings + 1, sizeof *c->map_node);
    if (!c->loc_off || !c->fn_node || !c->map_node)
        goto oom;
    for (size_t i = 0; i < p->n_locations; i++) {
        c->loc_off[i] = total;
        total += p->locations[i].n_lines ? p->locations[i].n_lines : 1;
    }
    c->loc_off[p->n_locations] = total;
    c->frames = malloc((total + 1) * sizeof *c->frames);
    if (!c->frames)
        goto oom;
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        uint32_t *fr = c->frames + c->loc_off[i];
        if (!l->n_lines)
            fr[0] = hs_top_object_node(c, l);
        for (size_t j = 0; j < l->n_lines; j++)
            fr[j] = hs_top_line_node(c, l, &l->lines[j]);
        for (size_t j = 0; j < c->loc_off[i + 1] - c->loc_off[i]; j++)
            if (fr[j] == UINT32_MAX)
                goto oom;
    }
    size_t n = c->n_nodes + 1;
    c->maybe_inline = calloc(n, sizeof *c->maybe_inline);
    c->flat = calloc(n, sizeof *c->flat);
    c->cum = calloc(n, sizeof *c->cum);
    c->seen = calloc(n, sizeof *c->seen);
    c->in_inline = calloc(n, sizeof *c->in_inline);
    c->in_noinline = calloc(n, sizeof *c->in_noinline);
    if (!c->maybe_inline || !c->flat || !c->cum || !c->seen || !c->in_inline || !c->in_noinline)
        goto oom;
    for (size_t i = 0; i < p->n_locations; i++)
        for (size_t j = c->loc_off[i]; j + 1 < c->loc_off[i + 1]; j++)
            c->maybe_inline[c->frames[j]] = true;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int hs_top_add_edge(hs_top_ctx *c, uint32_t parent, uint32_t child, bool inl)
{
    uint64_t *v = hs_hmap_slot(&c->edges, (uint64_t)parent << 32 | child, NULL);
    if (!v)
        return -1;
    *v |= inl ? 2 : 4;
    return 0;
}

/* One walk of one sample's stack, root to leaf; kept == NULL keeps all. */
static int hs_top_walk_sample(hs_top_ctx *c, const hs_sample *s, int64_t v, uint32_t stamp,
                              const bool *kept)
{
    uint32_t parent = UINT32_MAX;
    bool residual = false;
    for (size_t i = s->n_locations; i-- > 0;) {
        const hs_location *l = hs_profile_location(c->p, s->location_ids[i]);
        if (!l)
            continue;
        size_t li = (size_t)(l - c->p->locations), lo = c->loc_off[li], hi = c->loc_off[li + 1];
        for (size_t j = hi; j-- > lo;) {
            uint32_t n = c->frames[j];
            if (kept && !kept[n]) {
                residual = true;
                continue;
            }
            if (c->seen[n] != stamp) {
                c->seen[n] = stamp;
                c->cum[n] += v;
            }
            if (parent != UINT32_MAX && n != parent && c->maybe_inline[n] &&
                hs_top_add_edge(c, parent, n, j != hi - 1) != 0)
                return -1;
            parent = n;
            residual = false;
        }
    }
    if (parent != UINT32_MAX && !residual)
        c->flat[parent] += v;
    return 0;
}

static int hs_top_pass(hs_top_ctx *c, const bool *kept, char *err, size_t errlen)
{
    size_t n = c->n_nodes + 1;
    memset(c->flat, 0, n * sizeof *c->flat);
    memset(c->cum, 0, n * sizeof *c->cum);
    memset(c->seen, 0, n * sizeof *c->seen);
    memset(c->in_inline, 0, n * sizeof *c->in_inline);
    memset(c->in_noinline, 0, n * sizeof *c->in_noinline);
    hs_hmap_clear(&c->edges);
    uint32_t stamp = 0;
    for (size_t i = 0; i < c->p->n_samples; i++) {
        const hs_sample *s = &c->p->samples[i];
        int64_t v = s->values[c->si];
        if (v == 0)
            continue;
        if (++stamp == 0) {
            memset(c->seen, 0, n * sizeof *c->seen);
            stamp = 1;
        }
        if (hs_top_walk_sample(c, s, v, stamp, kept) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    /* An edge is inline only if every occurrence of it was (pprof's Edge.Inline). */
    uint64_t key, v;
    for (size_t it = HS_HMAP_START; hs_hmap_each(&c->edges, &it, &key, &v);) {
        uint32_t child = (uint32_t)key;
        if ((v & 2) && !(v & 4))
            c->in_inline[child] = true;
        else
            c->in_noinline[child] = true;
    }
    return 0;
}

static int64_t hs_abs64(int64_t v) { return v < 0 ? -v : v; }

static int hs_row_cmp_flat(const void *a, const void *b)
{
    const hs_top_row *l = a, *r = b;
    if (hs_abs64(l->flat) != hs_abs64(r->flat))
        return hs_abs64(l->flat) > hs_abs64(r->flat) ? -1 : 1;
    int c = strcmp(l->name, r->name);
    if (c)
        return c;
    if (hs_abs64(l->cum) != hs_abs64(r->cum))
        return hs_abs64(l->cum) > hs_abs64(r->cum) ? -1 : 1;
    return 0;
}

static int hs_row_cmp_cum(const void *a, const void *b)
{
    const hs_top_row *l = a, *r = b;
    if (hs_abs64(l->cum) != hs_abs64(r->cum))
        return hs_abs64(l->cum) > hs_abs64(r->cum) ? -1 : 1;
    int c = strcmp(l->name, r->name);
    if (c)
        return c;
    if (hs_abs64(l->flat) != hs_abs64(r->flat))
        return hs_abs64(l->flat) > hs_abs64(r->flat) ? -1 : 1;
    return 0;
}

/* Rows for the nodes in `kept` (or all nodes with a value), sorted. */
static int hs_top_collect(hs_top_ctx *c, const bool *kept, bool cum_sort, hs_top *t)
{
    free(t->rows);
    t->rows = malloc((c->n_nodes + 1) * sizeof *t->rows);
    if (!t->rows)
        return -1;
    t->n_rows = 0;
    for (size_t n = 0; n < c->n_nodes; n++) {
        if ((kept && !kept[n]) || (c->flat[n] == 0 && c->cum[n] == 0))
            continue;
        t->rows[t->n_rows++] = (hs_top_row){c->names[n], c->flat[n], c->cum[n],
                                            c->in_inline[n], c->in_noinline[n]};
    }
    qsort(t->rows, t->n_rows, sizeof *t->rows, cum_sort ? hs_row_cmp_cum : hs_row_cmp_flat);
    return 0;
}

/* Node ids by name, for building kept sets from rows. */
static bool *hs_top_kept_from_rows(hs_top_ctx *c, const hs_top_row *rows, size_t n_rows,
                                   bool *any_inline)
{
    bool *kept = calloc(c->n_nodes + 1, sizeof *kept);
    if (!kept)
        return NULL;
    *any_inline = false;
    for (size_t i = 0; i < n_rows; i++) {
        uint32_t n = hs_top_node(c, rows[i].name); /* existing: never allocates a node */
        if (n == UINT32_MAX) {
            free(kept);
            return NULL;
        }
        kept[n] = true;
        *any_inline |= c->maybe_inline[n];
    }
    return kept;
}

/* Re-run with only `rows` kept, when that can change an inline label. */
static int hs_top_refine(hs_top_ctx *c, const hs_top_options *o, hs_top *t, size_t n_rows,
                         char *err, size_t errlen)
{
    bool any_inline;
    bool *kept = hs_top_kept_from_rows(c, t->rows, n_rows, &any_inline);
    int rc = kept ? 0 : -1;
    if (rc == 0 && any_inline)
        rc = hs_top_pass(c, kept, err, errlen);
    if (rc == 0)
        rc = hs_top_collect(c, kept, o->cum_sort, t);
    if (rc != 0 && !*err)
        snprintf(err, errlen, "out of memory");
    free(kept);
    return rc;
}

static void hs_top_ctx_free(hs_top_ctx *c)
{
    free(c->names);
    free(c->maybe_inline);
    free(c->loc_off);
    free(c->frames);
    free(c->fn_node);
    free(c->map_node);
    hs_hmap_free(&c->by_name);
    free(c->flat);
    free(c->cum);
    free(c->seen);
    hs_hmap_free(&c->edges);
    free(c->in_inline);
    free(c->in_noinline);
}

void hs_top_options_init(hs_top_options *o)
{
    memset(o, 0, sizeof *o);
    o->node_fraction = 0.005;
}

static int64_t hs_top_total(const hs_profile *p, int si)
{
    int64_t total = 0;
    for (size_t i = 0; i < p->n_samples; i++)
        total += hs_abs64(p->samples[i].values[si]);
    return total;
}

/* Drop nodes below the node_fraction cut; refine if anything was dropped. */
static int hs_top_trim(hs_top_ctx *c, const hs_top_options *o, hs_top *t, char *err,
                       size_t errlen)
{
    int64_t flat_total = 0;
    for (size_t i = 0; i < t->n_rows; i++)
        flat_total += t->rows[i].flat;
    int64_t cutoff = hs_abs64((int64_t)((double)flat_total * o->node_fraction));
    size_t kept = 0;
    for (size_t i = 0; i < t->n_rows; i++)
        if (hs_abs64(t->rows[i].cum) >= cutoff)
            t->rows[kept++] = t->rows[i];
    t->dropped_nodes = t->n_rows - kept;
    if (t->dropped_nodes && hs_top_refine(c, o, t, kept, err, errlen) != 0)
        return -1;
    t->orig_count = t->n_rows;
    if (o->node_count && o->node_count < t->n_rows &&
        hs_top_refine(c, o, t, o->node_count, err, errlen) != 0)
        return -1;
    return 0;
}

static void hs_top_finish(hs_top *t, const hs_profile *p, int si)
{
    int64_t min = 0;
    t->flat_sum = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        int64_t m = hs_abs64(t->rows[i].flat) ? hs_abs64(t->rows[i].flat) : hs_abs64(t->rows[i].cum);
        if (m > 0 && (min == 0 || m < min))
            min = m;
        t->flat_sum += t->rows[i].flat;
    }
    t->sample_unit = hs_profile_string(p, p->sample_types[si].unit);
    t->unit = hs_output_unit(min, t->total, t->sample_unit);
}

int hs_top_compute(const hs_profile *p, const hs_top_options *o, hs_top *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (o->sample_index < 0 || (size_t)o->sample_index >= p->n_sample_types) {
        snprintf(err, errlen, "sample index %d out of range (profile has %zu sample types)",
                 o->sample_index, p->n_sample_types);
        return -1;
    }
    if (err && errlen)
        err[0] = 0;
    hs_top_ctx c = {.p = p, .si = o->sample_index};
    int rc = hs_top_build_frames(&c, err, errlen);
    if (rc == 0)
        rc = hs_top_pass(&c, NULL, err, errlen);
    if (rc == 0 && (rc = hs_top_collect(&c, NULL, o->cum_sort, out)) != 0)
        snprintf(err, errlen, "out of memory");
    out->total = o->total_override ? o->total_override : hs_top_total(p, o->sample_index);
    if (rc == 0)
        rc = hs_top_trim(&c, o, out, err, errlen);
    if (rc == 0)
        hs_top_finish(out, p, o->sample_index);
    out->owned = c.owned;
    out->n_owned = c.n_owned;
    hs_top_ctx_free(&c);
    if (rc != 0)
        hs_top_free(out);
    return rc;
}

void hs_top_free(hs_top *t)
{
    free(t->rows);
    for (size_t i = 0; i < t->n_owned; i++)
        free(t->owned[i]);
    free(t->owned);
    memset(t, 0, sizeof *t);
}

/* ---- printing ---- */

static char *hs_top_fmt(char *buf, size_t len, const hs_top *t, int64_t v)
{
    return hs_format_scaled(buf, len, v, t->sample_unit, t->unit);
}

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

int hs_report_print_header(FILE *out, const hs_profile *p, int si, int64_t total, const char *unit)
{
    return hs_report_print_header_ex(out, p, si, total, unit, 1, false);
}

int hs_report_print_header_ex(FILE *out, const hs_profile *p, int si, int64_t total,
                              const char *unit, double ratio, bool mean)
{
    if (p->n_mappings > 0) {
        const char *file = hs_profile_string(p, p->mappings[0].filename);
        const char *bid = hs_profile_string(p, p->mappings[0].build_id);
        if (*file)
            fprintf(out, "File: %s\n", hs_base_name(file));
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

static void hs_top_print_labels(FILE *out, const hs_top_options *o, const hs_top *t)
{
    char a[64], b[64], pct[32];
    if (o->n_active_filters) {
        fprintf(out, "Active filters:\n");
        for (size_t i = 0; i < o->n_active_filters; i++)
            fprintf(out, "   %s\n", o->active_filters[i]);
    }
    const char *ps = hs_format_percent(pct, sizeof pct, t->flat_sum, t->total);
    while (*ps == ' ')
        ps++;
    fprintf(out, "Showing nodes accounting for %s, %s of %s total\n",
            hs_top_fmt(a, sizeof a, t, t->flat_sum), ps, hs_top_fmt(b, sizeof b, t, t->total));
    if (t->total == 0)
        return;
    if (t->dropped_nodes)
        fprintf(out, "Dropped %zu node%s (cum <= %s)\n", t->dropped_nodes,
                t->dropped_nodes > 1 ? "s" : "",
                hs_top_fmt(a, sizeof a, t,
                           hs_abs64((int64_t)((double)t->total * o->node_fraction))));
    if (t->n_rows > 0 && t->n_rows < t->orig_count)
        fprintf(out, "Showing top %zu nodes out of %zu\n", t->n_rows, t->orig_count);
}

int hs_top_print(FILE *out, const hs_profile *p, const hs_top_options *o, const hs_top *t)
{
    if (hs_report_print_header(out, p, o->sample_index, t->total, t->unit) != 0)
        return -1;
    hs_top_print_labels(out, o, t);
    fprintf(out, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
    int64_t sum = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        const hs_top_row *r = &t->rows[i];
        char flat[64], cum[64], fp[32], sp[32], cp[32];
        sum += r->flat;
        const char *inl = r->inline_in ? (r->noinline_in ? " (partial-inline)" : " (inline)") : "";
        fprintf(out, "%10s %s %s %10s %s  %s%s\n", hs_top_fmt(flat, sizeof flat, t, r->flat),
                hs_format_percent(fp, sizeof fp, r->flat, t->total),
                hs_format_percent(sp, sizeof sp, sum, t->total),
                hs_top_fmt(cum, sizeof cum, t, r->cum),
                hs_format_percent(cp, sizeof cp, r->cum, t->total), r->name, inl);
    }
    return ferror(out) ? -1 : 0;
}

int hs_report_top(FILE *out, const hs_profile *p, const hs_top_options *o, char *err,
                  size_t errlen)
{
    hs_top t;
    if (hs_top_compute(p, o, &t, err, errlen) != 0)
        return -1;
    int rc = hs_top_print(out, p, o, &t);
    if (rc != 0)
        snprintf(err, errlen, "write error");
    hs_top_free(&t);
    return rc;
}
