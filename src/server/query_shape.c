/* query_shape.c — the answers of the query API built on the analysis layer
 * (the same hs_view, call tree and call graph as the CLI's reports):
 *
 *   flamegraph  the call tree as compact preorder nodes; beyond max_nodes,
 *               the smallest nodes are folded into one "other" child per
 *               parent (Pyroscope's truncation): the max_nodes largest by
 *               total are kept (a parent is never smaller than its child,
 *               so every kept node's parent is kept);
 *   functions   flat ("self") and cum ("total") per node of the call graph,
 *               untrimmed: the numbers `hotspur top` prints;
 *   diff        both, for a base and a new selection;
 *   source      per-line self/total of one function, with the lines of its
 *               file when that file is found under a --source-path
 *               directory (resolved with realpath and refused unless it
 *               lies inside one: nothing else is ever read).
 *
 * Every answer reads the view of the selection that query_view.c builds
 * straight from the stored stack rows.
 *
 * Totals: "total" is the selection's total before filters (the base of
 * percentages, as in pprof), "matched" what the filters kept (the root of
 * the tree); with filters "unfiltered" repeats the total. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/sandwich.h"
#include "base/strtab.h"
#include "base/vec.h"
#include "harness/stats.h"
#include "report/stacks.h"
#include "report/text_reports.h"
#include "server/query_cache.h"
#include "server/query_internal.h"

/* ---- names: string -> index, in first-use order (base/strtab.h) ---- */

/* The index of s in t, added if new; -1 on out of memory. */
static int64_t name_index(hs_strtab *t, const char *s)
{
    uint32_t id = hs_strtab_intern(t, s);
    return id == UINT32_MAX ? -1 : (int64_t)id;
}

/* ---- views ---- */

/* The NEW side's view (diff: against the BASE side): 0, or the status of
 * the error answer set in q->rs. Without agg=, diff sides of different
 * sizes are compared per profile, as Cloud Profiler does: 11 windows
 * against 8 are not 37% more of everything. An empty side stays a sum
 * (everything came or went). */
static int side_view(hs_q *q, bool diff, hs_q_view *qv)
{
    int rc = hs_q_merge(q, &q->cur);
    if (!rc && diff)
        rc = hs_q_merge(q, &q->base);
    if (rc)
        return rc;
    if (diff) {
        int64_t nn = q->cur.merged.n_profiles, nb = q->base.merged.n_profiles;
        if (!q->agg_given && nn > 0 && nb > 0 && nn != nb)
            q->cur.avg = q->base.avg = true;
    }
    char err[256];
    rc = hs_q_view_build(q, &q->cur, diff ? &q->base : NULL, qv, err, sizeof err);
    if (rc)
        return hs_respond_error(q->rs, rc, "%s", err);
    return 0;
}

/* "total", "matched" and (with filters) "unfiltered" of the NEW side. */
static void totals(hs_q *q, FILE *f, int64_t total, int64_t kept, int64_t div)
{
    fputs(",\"total\":", f);
    hs_q_value(f, total, div);
    fputs(",\"matched\":", f);
    hs_q_value(f, kept, div);
    if (q->filtered) {
        fputs(",\"unfiltered\":", f);
        hs_q_value(f, total, div);
    }
}

/* ---- the flame graph tree ---- */

static int64_t mag(int64_t v)
{
    return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

static int64_t tree_weight(const hs_tree_node *t)
{
    int64_t a = mag(t->total), b = mag(t->base_total);
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* The k-th largest (0-based) of w[0..n), k < n, reordering w: quickselect
 * with Hoare's partition, descending. */
static int64_t kth_largest(int64_t *w, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    while (lo < hi) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int64_t pivot = w[lo + rng % (hi - lo + 1)];
        size_t i = lo, j = hi;
        for (;;) { /* w[lo..i) >= pivot, w(j..hi] <= pivot */
            while (w[i] > pivot)
                i++;
            while (w[j] < pivot)
                j--;
            if (i >= j)
                break;
            int64_t t = w[i];
            w[i++] = w[j];
            w[j--] = t;
        }
        if (i == j) { /* w[lo..j) >= w[j] == pivot >= w(j..hi] */
            if (k == j)
                return w[k];
            if (k < j)
                hi = j - 1;
            else
                lo = j + 1;
        } else { /* w[lo..j] >= pivot, w(j..i) == pivot, w[i..hi] <= pivot */
            if (k <= j)
                hi = j;
            else if (k >= i)
                lo = i;
            else
                return w[k];
        }
    }
    return w[k];
}

/* Which tree nodes to keep: all, or the max_nodes largest (ties in
 * preorder). keep[0] (the root) is always set. */
static bool *choose_nodes(const hs_calltree *ct, size_t max_nodes)
{
    bool *keep = calloc(ct->n, sizeof *keep);
    if (!keep)
        return NULL;
    keep[0] = true;
    if (ct->n - 1 <= max_nodes) {
        for (size_t i = 1; i < ct->n; i++)
            keep[i] = true;
        return keep;
    }
    int64_t *w = malloc(ct->n * sizeof *w);
    uint32_t *stack = malloc(ct->n * sizeof *stack);
    if (!w || !stack) {
        free(w);
        free(stack);
        free(keep);
        return NULL;
    }
    for (size_t i = 1; i < ct->n; i++)
        w[i - 1] = tree_weight(&ct->t[i]);
    int64_t thr = kth_largest(w, ct->n - 1, max_nodes - 1);
    size_t quota = max_nodes;
    for (size_t i = 1; i < ct->n; i++)
        if (tree_weight(&ct->t[i]) > thr) {
            keep[i] = true;
            quota--;
        }
    /* ties at the threshold, in preorder */
    size_t sp = 0;
    for (uint32_t c = ct->t[0].first_child; c; c = ct->t[c].next_sibling)
        stack[sp++] = c;
    while (sp && quota) {
        uint32_t x = stack[--sp];
        if (!keep[x]) {
            if (tree_weight(&ct->t[x]) != thr || !keep[ct->t[x].parent])
                continue;
            keep[x] = true;
            quota--;
        }
        for (uint32_t c = ct->t[x].first_child; c; c = ct->t[c].next_sibling)
            if (sp < ct->n)
                stack[sp++] = c;
    }
    free(w);
    free(stack);
    return keep;
}

typedef struct {
    uint32_t t; /* tree node, or UINT32_MAX for an "other" node */
    int64_t parent_out;
    int64_t total, self, btotal, bself; /* for "other" */
} emit_item;

/* One value as hs_q_value writes it, at p (room for 32 bytes); returns the
 * end. Integers by hand: printf per number was most of writing a
 * 100 000-node tree. */
static char *put_value(char *p, int64_t v, int64_t div)
{
    if (div > 1 && v % div != 0)
        return p + snprintf(p, 32, "%.15g", (double)v / (double)div);
    if (div > 1)
        v /= div;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Write "names":[...],"nodes":[...] for tree ct over nodes[0..n_nodes),
 * and "build_ids":{"NAME INDEX":"ID",...} for the names of unnamed frames
 * when bids (per node: the build ID, or NULL) tells them. */
static int write_tree(FILE *f, const hs_node *nodes, size_t n_nodes, const char *const *bids, const hs_calltree *ct,
                      uint32_t top, size_t max_nodes, bool diff, int64_t dn, int64_t db)
{
    uint32_t *bid_of = NULL; /* node ids with a build ID, in name order */
    size_t n_bid = 0, cap_bid = 0;
    bool *keep = choose_nodes(ct, max_nodes);
    emit_item *stack = malloc((2 * ct->n + 2) * sizeof *stack);
    emit_item *kids = malloc((ct->n + 2) * sizeof *kids);
    /* view node -> index in names + 1 (0: not yet looked up) */
    uint32_t *name_of = calloc(n_nodes + 1, sizeof *name_of);
    hs_strtab names;
    bool names_ok = hs_strtab_init(&names) == 0;
    char *nodes_buf = NULL;
    size_t nodes_len = 0;
    FILE *nf = open_memstream(&nodes_buf, &nodes_len);
    int rc = -1;
    if (!keep || !stack || !kids || !name_of || !nf || !names_ok)
        goto out;
    size_t sp = 0;
    int64_t out_n = 0;
    stack[sp++] = (emit_item){.t = top, .parent_out = -1};
    while (sp) {
        emit_item it = stack[--sp];
        int64_t ni;
        int64_t tot, self, btot, bself;
        if (it.t == UINT32_MAX) {
            ni = name_index(&names, "other");
            tot = it.total, self = it.self, btot = it.btotal, bself = it.bself;
        } else {
            const hs_tree_node *tn = &ct->t[it.t];
            if (it.t == 0) {
                ni = name_index(&names, "all");
            } else if (name_of[tn->node]) {
                ni = name_of[tn->node] - 1;
            } else {
                ni = name_index(&names, nodes[tn->node].name);
                if (ni >= 0)
                    name_of[tn->node] = (uint32_t)ni + 1;
                if (ni >= 0 && bids && bids[tn->node]) {
                    if (hs_vec_reserve((void **)&bid_of, &cap_bid, n_bid + 1, sizeof *bid_of) < 0)
                        goto out;
                    bid_of[n_bid++] = tn->node;
                }
            }
            tot = tn->total, self = tn->self, btot = tn->base_total, bself = tn->base_self;
        }
        if (ni < 0)
            goto out;
        char line[8 + 5 * 32], *p = line;
        if (out_n)
            *p++ = ',';
        *p++ = '[';
        p = put_value(p, it.parent_out, 1);
        *p++ = ',';
        p = put_value(p, ni, 1);
        *p++ = ',';
        p = put_value(p, tot, dn);
        *p++ = ',';
        p = put_value(p, self, dn);
        if (diff) {
            *p++ = ',';
            p = put_value(p, btot, db);
            *p++ = ',';
            p = put_value(p, bself, db);
        }
        *p++ = ']';
        fwrite(line, 1, (size_t)(p - line), nf);
        int64_t me = out_n++;
        if (it.t == UINT32_MAX)
            continue;
        /* children: the kept ones in tree order, "other" in its place */
        size_t nk = 0;
        emit_item other = {.t = UINT32_MAX, .parent_out = me};
        bool any_other = false;
        for (uint32_t c = ct->t[it.t].first_child; c; c = ct->t[c].next_sibling) {
            if (keep[c]) {
                kids[nk++] = (emit_item){.t = c, .parent_out = me};
                continue;
            }
            any_other = true;
            other.total += ct->t[c].total;
            other.self += ct->t[c].total;
            other.btotal += ct->t[c].base_total;
            other.bself += ct->t[c].base_total;
        }
        if (any_other) {
            hs_tree_node o = {.total = other.total, .base_total = other.btotal};
            int64_t ow = tree_weight(&o);
            size_t pos = nk;
            while (pos > 0 && tree_weight(&ct->t[kids[pos - 1].t]) < ow)
                pos--;
            memmove(kids + pos + 1, kids + pos, (nk - pos) * sizeof *kids);
            kids[pos] = other;
            nk++;
        }
        for (size_t k = nk; k > 0; k--)
            stack[sp++] = kids[k - 1];
    }
    if (fclose(nf) != 0) {
        nf = NULL;
        goto out;
    }
    nf = NULL;
    fputs(",\"names\":[", f);
    for (size_t i = 0; i < hs_strtab_count(&names); i++) {
        if (i)
            fputc(',', f);
        hs_json_string(f, hs_strtab_get(&names, (uint32_t)i));
    }
    fputs("],\"nodes\":[", f);
    fwrite(nodes_buf, 1, nodes_len, f);
    fputc(']', f);
    if (n_bid) {
        fputs(",\"build_ids\":{", f);
        for (size_t i = 0; i < n_bid; i++) {
            fprintf(f, "%s\"%u\":", i ? "," : "", name_of[bid_of[i]] - 1);
            hs_json_string(f, bids[bid_of[i]]);
        }
        fputc('}', f);
    }
    rc = 0;
out:
    free(bid_of);
    if (nf)
        fclose(nf);
    free(nodes_buf);
    free(keep);
    free(stack);
    free(kids);
    free(name_of);
    if (names_ok)
        hs_strtab_free(&names);
    return rc;
}

/* The opening of an answer about view v: the function (when not NULL),
 * the header, the totals; NULL with a 500 answered and its status in *rc. */
static FILE *view_answer(hs_q *q, const hs_view *v, const char *function, char **buf, size_t *len, int *rc)
{
    FILE *f = hs_q_open(buf, len);
    if (!f) {
        *rc = hs_respond_error(q->rs, 500, "out of memory");
        return NULL;
    }
    fputc('{', f);
    if (function) {
        fputs("\"function\":", f);
        hs_json_string(f, function);
        fputc(',', f);
    }
    hs_q_header(q, f, v->sample_type, v->unit);
    totals(q, f, v->total, v->kept_total, hs_q_div(&q->cur));
    return f;
}

/* A diff answer's "new" and "base" sides. */
static void diff_sides(hs_q *q, FILE *f, const hs_view *v, int64_t dn, int64_t db)
{
    fprintf(f, ",\"new\":{\"profiles\":%lld,\"total\":", (long long)q->cur.merged.n_profiles);
    hs_q_value(f, v->total, dn);
    fputs(",\"matched\":", f);
    hs_q_value(f, v->kept_total, dn);
    fprintf(f, "},\"base\":{\"profiles\":%lld,\"total\":", (long long)q->base.merged.n_profiles);
    hs_q_value(f, v->base_total, db);
    fputs(",\"matched\":", f);
    hs_q_value(f, v->kept_base, db);
    fputc('}', f);
}

static int write_functions(hs_q *q, FILE *f, const hs_q_view *qv, bool diff, int64_t dn, int64_t db);

/* The flame graph answer of view qv's call tree ct; with diff, the diff
 * answer: the two sides, then the tree and the functions, both compared. */
static int tree_json(hs_q *q, const hs_q_view *qv, const hs_calltree *ct, bool diff)
{
    const hs_view *v = qv->v;
    char *buf = NULL;
    size_t len = 0;
    int rc;
    FILE *f = view_answer(q, v, NULL, &buf, &len, &rc);
    if (!f)
        return rc;
    int64_t dn = hs_q_div(&q->cur), db = diff ? hs_q_div(&q->base) : 1;
    if (diff)
        diff_sides(q, f, v, dn, db);
    if (write_tree(f, v->nodes, v->n_nodes, qv->build_ids, ct, 0, (size_t)q->max_nodes, diff, dn, db) < 0) {
        fclose(f);
        free(buf);
        return hs_respond_error(q->rs, 500, "out of memory");
    }
    if (diff && write_functions(q, f, qv, true, dn, db) < 0) {
        fclose(f);
        free(buf);
        return q->rs->status;
    }
    fputc('}', f);
    return hs_q_finish(q, f, &buf, &len);
}

static int flame_answer(hs_q *q, const hs_q_view *qv, const hs_calltree *ct)
{
    return tree_json(q, qv, ct, false);
}

static int diff_answer(hs_q *q, const hs_q_view *qv, const hs_calltree *ct)
{
    return tree_json(q, qv, ct, true);
}

/* What is answered from the call tree ct of view qv. */
typedef int (*tree_answer)(hs_q *q, const hs_q_view *qv, const hs_calltree *ct);

/* The call tree of the NEW side's view (diff: against the BASE side),
 * given to answer. */
static int with_tree(hs_q *q, bool diff, tree_answer answer)
{
    hs_q_view qv;
    int rc = side_view(q, diff, &qv);
    if (rc)
        return rc;
    hs_calltree ct = {0};
    char err[256];
    if (hs_calltree_build(qv.v, &ct, err, sizeof err) < 0)
        rc = hs_q_fail(q, 500, "call tree", err);
    else
        rc = answer(q, &qv, &ct);
    hs_calltree_free(&ct);
    hs_q_view_free(&qv);
    return rc;
}

int hs_q_flamegraph(hs_q *q)
{
    return with_tree(q, false, flame_answer);
}

/* ---- the function table ---- */

typedef struct {
    const hs_view *v;
    const hs_graph *g;
    bool diff;
} fsort;

static int cmp_fn(const void *pa, const void *pb, void *arg)
{
    const fsort *c = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const hs_graph_node *x = &c->g->nodes[a], *y = &c->g->nodes[b];
    int64_t kx = c->diff ? mag(x->cum - x->base_cum) : x->cum;
    int64_t ky = c->diff ? mag(y->cum - y->base_cum) : y->cum;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->flat != y->flat)
        return x->flat > y->flat ? -1 : 1;
    int r = strcmp(c->v->nodes[a].name, c->v->nodes[b].name);
    return r ? r : (a < b ? -1 : a > b);
}

/* ---- significance: which functions changed in every window ---- */

/* A diff of two sides of several profiles (windows) each tells more than
 * two merged totals: each window is one observation of a function's share
 * of that window's total, and the Mann-Whitney U test of the base windows'
 * shares against the new ones' (harness/stats.c, as `hotspur bench
 * compare` uses it) says whether the change is larger than the windows'
 * spread. Computed with significance=1 when each side has
 * 2..HS_Q_SIGNIF_MAX windows; each window is merged and viewed alone with
 * the query's filters (about 45 ms a window of 5000 stacks: opt-in, the UI
 * asks for it after drawing). */
#define HS_Q_SIGNIF_MAX 32

/* sh[k * *nw + w]: the share of function k of names in window w of side s.
 * 0, or -1 when not computed (too few or too many windows, a failure:
 * significance is left out, the diff is still answered). */
static int window_shares(hs_q *q, const hs_q_side *s, const hs_strtab *names, double **out, size_t *nw)
{
    char err[256];
    hs_store_profile_row *rows = NULL;
    size_t n = 0;
    *out = NULL;
    if (hs_store_profiles(q->qc->store, &s->q, HS_Q_SIGNIF_MAX + 1, &rows, &n, err, sizeof err))
        return -1;
    double *sh = n >= 2 && n <= HS_Q_SIGNIF_MAX ? calloc(hs_strtab_count(names) * n + 1, sizeof *sh) : NULL;
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    for (size_t w = 0; sh && w < n; w++) {
        const char *id = rows[w].id;
        hs_store_query wq = s->q;
        wq.ids = &id;
        wq.n_ids = 1;
        hs_store_merged m;
        memset(&m, 0, sizeof m);
        if (hs_store_merge(q->qc->store, &wq, &m, err, sizeof err)) {
            free(sh);
            sh = NULL;
            break;
        }
        hs_q_side ws;
        memset(&ws, 0, sizeof ws);
        ws.merged = m;
        hs_q_view qv = {0};
        const hs_view *v = m.n_rows && hs_q_view_build(q, &ws, NULL, &qv, err, sizeof err) == 0 ? qv.v : NULL;
        hs_graph g;
        if (v && v->total && hs_graph_build(v, &no, &g, err, sizeof err) == 0) {
            for (size_t i = 0; i < v->n_nodes; i++) {
                uint32_t k = hs_strtab_find(names, v->nodes[i].name);
                if (k != UINT32_MAX)
                    sh[(size_t)k * n + w] = (double)g.nodes[i].cum / (double)v->total;
            }
            hs_graph_free(&g);
        } else if (m.n_rows) { /* a window that cannot be read: no significance */
            free(sh);
            sh = NULL;
        }
        hs_q_view_free(&qv);
        hs_store_merged_free(&m);
    }
    hs_store_profile_rows_free(rows, n);
    if (!sh)
        return -1;
    *out = sh;
    *nw = n;
    return 0;
}

/* p[i]: the two-sided p-value of function ids[i]'s change (NAN when not
 * computed); *nn, *nb the windows of each side. -1: none computed. */
static int significance(hs_q *q, const hs_view *v, const uint32_t *ids, size_t shown, double *p, size_t *nn,
                        size_t *nb)
{
    hs_strtab names;
    if (hs_strtab_init(&names) < 0)
        return -1;
    for (size_t i = 0; i < shown; i++)
        if (name_index(&names, v->nodes[ids[i]].name) < 0) {
            hs_strtab_free(&names);
            return -1;
        }
    double *a = NULL, *b = NULL;
    int rc = window_shares(q, &q->base, &names, &b, nb);
    if (rc == 0)
        rc = window_shares(q, &q->cur, &names, &a, nn);
    if (rc == 0)
        for (size_t i = 0; i < shown; i++) {
            size_t k = hs_strtab_find(&names, v->nodes[ids[i]].name);
            p[i] = hs_bstat_mann_whitney(b + k * *nb, *nb, a + k * *nn, *nn);
        }
    free(a);
    free(b);
    hs_strtab_free(&names);
    return rc;
}

/* Write ,"functions":[...] (and "n_functions") for view qv. */
static int write_functions(hs_q *q, FILE *f, const hs_q_view *qv, bool diff, int64_t dn, int64_t db)
{
    const hs_view *v = qv->v;
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    hs_graph g;
    char err[256];
    if (hs_graph_build(v, &no, &g, err, sizeof err) < 0) {
        hs_q_fail(q, 500, "call graph", err);
        return -1;
    }
    uint32_t *ids = malloc((v->n_nodes + 1) * sizeof *ids);
    if (!ids) {
        hs_graph_free(&g);
        hs_respond_error(q->rs, 500, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < v->n_nodes; i++) {
        const hs_graph_node *gn = &g.nodes[i];
        if (gn->flat || gn->cum || gn->base_flat || gn->base_cum)
            ids[n++] = (uint32_t)i;
    }
    fsort c = {v, &g, diff};
    qsort_r(ids, n, sizeof *ids, cmp_fn, &c);
    size_t shown = q->limit && q->limit < n ? q->limit : n;
    double *pv = diff && q->significance ? malloc((shown + 1) * sizeof *pv) : NULL;
    size_t nn = 0, nb = 0;
    if (pv && significance(q, v, ids, shown, pv, &nn, &nb) < 0) {
        free(pv);
        pv = NULL;
    }
    if (pv)
        fprintf(f, ",\"significance\":{\"test\":\"mann-whitney\",\"new_windows\":%zu,\"base_windows\":%zu}", nn, nb);
    fprintf(f, ",\"n_functions\":%zu,\"functions\":[", n);
    for (size_t i = 0; i < shown; i++) {
        const hs_node *nd = &v->nodes[ids[i]];
        const hs_graph_node *gn = &g.nodes[ids[i]];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        hs_json_string(f, nd->name);
        fputs(",\"file\":", f);
        hs_json_string(f, qv->files[ids[i]]);
        if (diff) {
            fputs(",\"self_new\":", f);
            hs_q_value(f, gn->flat, dn);
            fputs(",\"total_new\":", f);
            hs_q_value(f, gn->cum, dn);
            fputs(",\"self_base\":", f);
            hs_q_value(f, gn->base_flat, db);
            fputs(",\"total_base\":", f);
            hs_q_value(f, gn->base_cum, db);
            if (pv)
                fprintf(f, ",\"p\":%.4g", pv[i]);
        } else {
            fputs(",\"self\":", f);
            hs_q_value(f, gn->flat, dn);
            fputs(",\"total\":", f);
            hs_q_value(f, gn->cum, dn);
        }
        fputc('}', f);
    }
    fputc(']', f);
    free(pv);
    free(ids);
    hs_graph_free(&g);
    return 0;
}

int hs_q_functions(hs_q *q)
{
    q->fn_files = true;
    hs_q_view qv;
    int rc = side_view(q, false, &qv);
    if (rc)
        return rc;
    const hs_view *v = qv.v;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = view_answer(q, v, NULL, &buf, &len, &rc);
    if (!f) {
        hs_q_view_free(&qv);
        return rc;
    }
    int64_t dn = hs_q_div(&q->cur);
    if (write_functions(q, f, &qv, false, dn, 1) < 0) {
        fclose(f);
        free(buf);
        hs_q_view_free(&qv);
        return q->rs->status;
    }
    fputc('}', f);
    rc = hs_q_finish(q, f, &buf, &len);
    hs_q_view_free(&qv);
    return rc;
}

/* ---- diff ---- */

int hs_q_diff(hs_q *q)
{
    q->fn_files = true;
    return with_tree(q, true, diff_answer);
}

/* ---- sandwich: the callers and callees trees of one function ---- */

static bool node_named(const hs_node *n, void *arg)
{
    return strcmp(n->name, arg) == 0;
}

/* The opening of a sandwich, peek or source answer once the function was
 * looked for (found false: a 404): the function, then as view_answer;
 * NULL with the error answered and its status in *rc. */
static FILE *function_answer(hs_q *q, const hs_view *v, bool found, char **buf, size_t *len, int *rc)
{
    if (!found) {
        *rc = hs_respond_error(q->rs, 404, "function '%.200s' is not in the selected profiles", q->function);
        return NULL;
    }
    return view_answer(q, v, q->function, buf, len, rc);
}

/* The sandwich of q->function over view qv's call tree ct (a compare:
 * with its sides and base values). */
static int sandwich_answer(hs_q *q, const hs_q_view *qv, const hs_calltree *ct)
{
    const hs_view *v = qv->v;
    const hs_node *nodes = v->nodes;
    size_t n_nodes = v->n_nodes;
    const char *const *bids = qv->build_ids;
    hs_sandwich sw;
    char err[256];
    int r = hs_sandwich_build(ct, nodes, node_named, (void *)q->function, &sw, err, sizeof err);
    if (r < 0)
        return hs_q_fail(q, 500, "sandwich", err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = function_answer(q, v, r != 1, &buf, &len, &r);
    if (!f) {
        hs_sandwich_free(&sw);
        return r;
    }
    bool diff = v->diff;
    int64_t dn = hs_q_div(&q->cur), db = diff ? hs_q_div(&q->base) : 1;
    if (diff)
        diff_sides(q, f, v, dn, db);
    fputs(",\"sandwich\":{\"total\":", f);
    hs_q_value(f, sw.total, dn);
    fputs(",\"self\":", f);
    hs_q_value(f, sw.self, dn);
    if (diff) {
        fputs(",\"base_total\":", f);
        hs_q_value(f, sw.base_total, db);
        fputs(",\"base_self\":", f);
        hs_q_value(f, sw.base_self, db);
    }
    fprintf(f, "},\"callers\":{\"count\":%zu", sw.n_callers);
    int rc = write_tree(f, nodes, n_nodes, bids, &sw.callers, sw.callers_top, (size_t)q->max_nodes, diff, dn, db);
    if (rc == 0) {
        fprintf(f, "},\"callees\":{\"count\":%zu", sw.n_callees);
        rc = write_tree(f, nodes, n_nodes, bids, &sw.callees, sw.callees_top, (size_t)q->max_nodes, diff, dn, db);
    }
    hs_sandwich_free(&sw);
    if (rc < 0) {
        fclose(f);
        free(buf);
        return hs_respond_error(q->rs, 500, "out of memory");
    }
    fputs("}}", f);
    return hs_q_finish(q, f, &buf, &len);
}

int hs_q_sandwich(hs_q *q)
{
    return with_tree(q, q->base_given, sandwich_answer);
}

/* ---- peek: callers and callees (report/peek.c, as `hotspur peek`) ---- */

/* The match of peek's and list's compute steps: a name equal to arg. */
static bool name_is(const char *name, void *arg)
{
    return strcmp(name, arg) == 0;
}

static void peek_edges(FILE *f, const hs_view *v, const hs_peek_edge *e, size_t n, int64_t dn)
{
    for (size_t k = 0; k < n; k++) {
        fputs(k ? ",{\"name\":" : "{\"name\":", f);
        hs_json_string(f, v->nodes[e[k].node].name);
        fputs(",\"total\":", f);
        hs_q_value(f, e[k].weight, dn);
        fprintf(f, ",\"inline\":%s}", e[k].inline_call ? "true" : "false");
    }
}

int hs_q_peek(hs_q *q)
{
    hs_q_view qv;
    int rc = side_view(q, false, &qv);
    if (rc)
        return rc;
    const hs_view *v = qv.v;
    hs_analysis_options no; /* `hotspur peek`'s graph: nothing trimmed */
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    hs_graph g = {0};
    hs_peek pk = {0};
    char err[256];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NULL;
    if (hs_graph_build(v, &no, &g, err, sizeof err) < 0) {
        rc = hs_q_fail(q, 500, "call graph", err);
        goto out;
    }
    if (hs_peek_compute(v, &g, name_is, (void *)q->function, &pk) < 0) {
        rc = hs_respond_error(q->rs, 500, "out of memory");
        goto out;
    }
    if (!(f = function_answer(q, v, pk.n > 0, &buf, &len, &rc)))
        goto out;
    int64_t dn = hs_q_div(&q->cur);
    fputs(",\"nodes\":[", f);
    for (size_t i = 0; i < pk.n; i++) {
        const hs_peek_entry *en = &pk.entries[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        hs_json_string(f, v->nodes[en->node].name);
        fputs(",\"self\":", f);
        hs_q_value(f, en->flat, dn);
        fputs(",\"total\":", f);
        hs_q_value(f, en->cum, dn);
        fputs(",\"callers\":[", f);
        peek_edges(f, v, en->callers, en->n_callers, dn);
        fputs("],\"callees\":[", f);
        peek_edges(f, v, en->callees, en->n_callees, dn);
        fputs("]}", f);
    }
    fputs("]}", f);
    rc = hs_q_finish(q, f, &buf, &len);
out:
    hs_peek_free(&pk);
    hs_graph_free(&g);
    hs_q_view_free(&qv);
    return rc;
}

/* ---- source ---- */

#define HS_SOURCE_MAX_BYTES ((off_t)8 << 20)

/* Is real (a realpath) dir itself or inside dir (a realpath)? */
static bool inside(const char *real, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(real, dir, n) == 0 && (real[n] == '/' || real[n] == 0);
}

/* The file recorded as `file`, looked up only under the source
 * directories: the recorded path itself when it resolves inside one, then
 * DIR/path with leading components dropped one at a time. Returns a
 * malloc'd real path of a regular file inside a source directory, or NULL. */
static char *find_source(const hs_q *q, const char *file)
{
    for (size_t d = 0; d < q->qc->n_source_paths; d++) {
        char *rdir = realpath(q->qc->source_paths[d], NULL);
        if (!rdir)
            continue;
        char *found = NULL;
        if (file[0] == '/') {
            char *r = realpath(file, NULL);
            if (r && inside(r, rdir))
                found = r;
            else
                free(r);
        }
        for (const char *p = file; !found && p && *p;) {
            while (*p == '/')
                p++;
            if (!*p)
                break;
            char *cand = NULL;
            if (asprintf(&cand, "%s/%s", rdir, p) < 0)
                break;
            char *r = realpath(cand, NULL);
            free(cand);
            if (r && inside(r, rdir))
                found = r;
            else
                free(r);
            p = strchr(p, '/');
        }
        free(rdir);
        if (found) {
            struct stat st;
            if (stat(found, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= HS_SOURCE_MAX_BYTES)
                return found;
            free(found);
        }
    }
    return NULL;
}

/* The lines of a file (1-based: lines[0] unused). */
typedef struct {
    char *data;
    char **lines;
    size_t n;
} src_text;

static int src_read(const char *path, src_text *t)
{
    memset(t, 0, sizeof *t);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    size_t cap = 0, len = 0;
    char chunk[65536];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (len + r + 1 > cap) {
            size_t nc = cap ? cap * 2 : 131072;
            while (nc < len + r + 1)
                nc *= 2;
            char *nd = realloc(t->data, nc);
            if (!nd)
                break;
            t->data = nd;
            cap = nc;
        }
        memcpy(t->data + len, chunk, r);
        len += r;
        if ((off_t)len > HS_SOURCE_MAX_BYTES)
            break;
    }
    bool bad = ferror(fp) || (off_t)len > HS_SOURCE_MAX_BYTES || (len && !t->data);
    fclose(fp);
    if (bad || !t->data) {
        free(t->data);
        t->data = NULL;
        return bad ? -1 : 0;
    }
    t->data[len] = 0;
    size_t nl = 2;
    for (size_t i = 0; i < len; i++)
        nl += t->data[i] == '\n';
    t->lines = malloc(nl * sizeof *t->lines);
    if (!t->lines) {
        free(t->data);
        return -1;
    }
    t->lines[0] = NULL;
    t->n = 1;
    for (char *p = t->data; *p;) {
        char *e = strchr(p, '\n');
        t->lines[t->n++] = p;
        if (!e)
            break;
        *e = 0;
        if (e > p && e[-1] == '\r')
            e[-1] = 0;
        p = e + 1;
    }
    return 0;
}

static void src_free(src_text *t)
{
    free(t->data);
    free(t->lines);
}

/* The numbers come from list's compute step (report/list.c), as `hotspur
 * list` prints them; only where the file is looked for (find_source: only
 * under --source-path) is the server's own. */
int hs_q_source(hs_q *q)
{
    if (q->qc->n_source_paths == 0)
        return hs_respond_error(q->rs, 404,
                                "no source is served: the server was started without --source-path DIR");
    q->o.granularity = HS_GRAN_LINES;
    q->o.granularity_set = true;
    hs_q_view qv;
    int rc = side_view(q, false, &qv);
    if (rc)
        return rc;
    const hs_view *v = qv.v;
    char err[256];
    hs_list l = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NULL;
    if (hs_list_compute(v, name_is, (void *)q->function, &l, err, sizeof err) < 0) {
        rc = hs_q_fail(q, 500, "source", err);
        goto out;
    }
    if (!(f = function_answer(q, v, l.n > 0, &buf, &len, &rc)))
        goto out;
    int64_t dn = hs_q_div(&q->cur);
    fputs(",\"files\":[", f);
    for (size_t gi = 0; gi < l.n; gi++) {
        const hs_list_group *gr = &l.groups[gi];
        char *path = *gr->file ? find_source(q, gr->file) : NULL;
        src_text t = {0};
        bool found = path && src_read(path, &t) == 0 && t.lines;
        fputs(gi ? ",{\"file\":" : "{\"file\":", f);
        hs_json_string(f, gr->file);
        fprintf(f, ",\"found\":%s,\"self\":", found ? "true" : "false");
        hs_q_value(f, gr->flat, dn);
        fputs(",\"total\":", f);
        hs_q_value(f, gr->cum, dn);
        fputs(",\"lines\":[", f);
        if (found) { /* list's range, every line with its text */
            size_t k = 0, shown = 0;
            for (int64_t ln = gr->start; ln <= gr->stop && (size_t)ln < t.n; ln++) {
                while (k < gr->n_lines && gr->lines[k].line < ln)
                    k++;
                bool hit = k < gr->n_lines && gr->lines[k].line == ln;
                fprintf(f, "%s{\"line\":%lld,\"self\":", shown++ ? "," : "", (long long)ln);
                hs_q_value(f, hit ? gr->lines[k].flat : 0, dn);
                fputs(",\"total\":", f);
                hs_q_value(f, hit ? gr->lines[k].cum : 0, dn);
                fputs(",\"text\":", f);
                hs_json_string(f, t.lines[ln]);
                fputc('}', f);
            }
        } else { /* only the sampled lines, without text */
            for (size_t k = 0; k < gr->n_lines; k++) {
                fprintf(f, "%s{\"line\":%lld,\"self\":", k ? "," : "", (long long)gr->lines[k].line);
                hs_q_value(f, gr->lines[k].flat, dn);
                fputs(",\"total\":", f);
                hs_q_value(f, gr->lines[k].cum, dn);
                fputc('}', f);
            }
        }
        fputs("]}", f);
        src_free(&t);
        free(path);
    }
    fputs("]}", f);
    rc = hs_q_finish(q, f, &buf, &len);
out:
    hs_list_free(&l);
    hs_q_view_free(&qv);
    return rc;
}
