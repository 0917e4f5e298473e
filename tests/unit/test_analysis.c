/* test_analysis.c — the analysis layer on small profiles built in memory,
 * with values chosen so every expectation can be checked by hand:
 * sample index, focus/ignore/hide/show/show-from/tagfocus/tagignore,
 * granularity, recursion counted once per sample in cum, trimming, the call
 * tree, diff deltas (with and without --normalize), merge, filter_profile,
 * and option parsing errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "analysis/analysis_internal.h"
#include "profile/profile.h"
#include "base/vec.h"

/* Functions: main, work, spin, alloc, rec (recursive), each in its own file
 * a.c..e.c; every location one line; "lib" frames have no line (address
 * only, mapping libx.so). Samples (cpu values = count, nanoseconds):
 *   main;work;spin         3, 30  label kind=alpha, bytes=1024
 *   main;work              1, 10  label kind=beta
 *   main;rec;rec;rec;spin  2, 20  label kind=alpha
 *   main;alloc;<lib>       4, 40  label kind=gamma, bytes=65536
 * total ns = 100 */
typedef struct {
    hs_profile *p;
    uint64_t loc_main, loc_work, loc_spin, loc_spin2, loc_alloc, loc_rec, loc_lib;
} fixture;

static uint64_t add_loc(hs_profile *p, uint64_t map, uint64_t addr, const char *fn,
                        const char *file, int64_t line)
{
    uint64_t f = hs_profile_add_function(p, fn, fn, file, 0);
    hs_line l = {f, line, 0};
    return hs_profile_add_location(p, map, addr, &l, 1);
}

static void add_sample(hs_profile *p, const uint64_t *root_first, size_t n, int64_t count,
                       int64_t ns, const char *kind, int64_t bytes)
{
    uint64_t leaf_first[16];
    for (size_t i = 0; i < n; i++)
        leaf_first[i] = root_first[n - 1 - i];
    int64_t vals[2] = {count, ns};
    hs_label labels[2];
    size_t nl = 0;
    labels[nl++] = (hs_label){hs_profile_str(p, "kind"), hs_profile_str(p, kind), 0, 0};
    if (bytes)
        labels[nl++] = (hs_label){hs_profile_str(p, "bytes"), 0, bytes, 0};
    assert_int_equal(hs_profile_add_sample(p, leaf_first, n, vals, labels, nl), 0);
}

static hs_profile *make_profile(int64_t scale_spin, int64_t scale_alloc)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_true(hs_profile_add_sample_type(p, "samples", "count") >= 0);
    assert_true(hs_profile_add_sample_type(p, "cpu", "nanoseconds") >= 0);
    uint64_t m1 = hs_profile_add_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "");
    uint64_t m2 = hs_profile_add_mapping(p, 0x7f0000, 0x7f8000, 0, "/lib/libx.so", "");
    uint64_t lmain = add_loc(p, m1, 0x401000, "main", "a.c", 10);
    uint64_t lwork = add_loc(p, m1, 0x402000, "work", "b.c", 20);
    uint64_t lspin = add_loc(p, m1, 0x403000, "spin", "c.c", 30);
    uint64_t lspin2 = add_loc(p, m1, 0x403010, "spin", "c.c", 31);
    uint64_t lalloc = add_loc(p, m1, 0x404000, "alloc", "d.c", 40);
    uint64_t lrec = add_loc(p, m1, 0x405000, "rec", "e.c", 50);
    uint64_t llib = hs_profile_add_location(p, m2, 0x7f1234, NULL, 0);
    assert_true(lmain && lwork && lspin && lspin2 && lalloc && lrec && llib);
    uint64_t s1[] = {lmain, lwork, lspin};
    uint64_t s2[] = {lmain, lwork};
    uint64_t s3[] = {lmain, lrec, lrec, lrec, lspin2};
    uint64_t s4[] = {lmain, lalloc, llib};
    add_sample(p, s1, 3, 3, 30 * scale_spin, "alpha", 1024);
    add_sample(p, s2, 2, 1, 10, "beta", 0);
    add_sample(p, s3, 5, 2, 20 * scale_spin, "alpha", 0);
    add_sample(p, s4, 3, 4, 40 * scale_alloc, "gamma", 65536);
    return p;
}

typedef struct {
    hs_view *v;
    hs_graph g;
} built;

static void build(built *b, hs_profile *p, hs_profile *base, hs_analysis_options *o)
{
    char err[256] = "";
    hs_profile *ps[1] = {p};
    hs_profile *bs[1] = {base};
    b->v = hs_view_build(ps, 1, bs, base ? 1 : 0, o, err, sizeof err);
    if (!b->v)
        fail_msg("view: %s", err);
    if (hs_graph_build(b->v, o, &b->g, err, sizeof err) != 0)
        fail_msg("graph: %s", err);
}

static void unbuild(built *b)
{
    hs_graph_free(&b->g);
    hs_view_free(b->v);
}

static int find(const hs_view *v, const char *name)
{
    for (size_t i = 0; i < v->n_nodes; i++)
        if (strcmp(v->nodes[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int64_t flat_of(const built *b, const char *name)
{
    int i = find(b->v, name);
    return i < 0 ? -1 : b->g.nodes[i].flat;
}

static int64_t cum_of(const built *b, const char *name)
{
    int i = find(b->v, name);
    return i < 0 ? -1 : b->g.nodes[i].cum;
}

static void opts(hs_analysis_options *o, hs_report_kind kind)
{
    hs_analysis_options_init(o);
    hs_analysis_apply_defaults(o, kind);
}

static int set(hs_analysis_options *o, int code, const char *arg)
{
    char err[256];
    return hs_analysis_parse_option(o, code, arg, err, sizeof err);
}

static void test_default_index_and_totals(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    built b;
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->sample_index, 1); /* last type by default */
    assert_string_equal(b.v->sample_type, "cpu");
    assert_int_equal(b.v->total, 100);
    assert_int_equal(flat_of(&b, "spin"), 50);
    assert_int_equal(flat_of(&b, "work"), 10);
    assert_int_equal(cum_of(&b, "work"), 40);
    assert_int_equal(cum_of(&b, "main"), 100);
    /* a location without lines is named after its mapping */
    assert_int_equal(flat_of(&b, "[libx.so]"), 40);
    unbuild(&b);
    assert_int_equal(set(&o, HS_OPT_SAMPLE_INDEX, "samples"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->total, 10);
    assert_int_equal(flat_of(&b, "spin"), 5);
    unbuild(&b);
    assert_int_equal(set(&o, HS_OPT_SAMPLE_INDEX, "nosuch"), 1);
    char err[256] = "";
    hs_profile *ps[1] = {p};
    assert_null(hs_view_build(ps, 1, NULL, 0, &o, err, sizeof err));
    assert_non_null(strstr(err, "nosuch"));
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_recursion_counted_once(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    built b;
    build(&b, p, NULL, &o);
    /* rec appears three times in one sample of 20: cum 20, not 60 */
    assert_int_equal(cum_of(&b, "rec"), 20);
    assert_int_equal(flat_of(&b, "rec"), 0);
    /* and the rec->rec self edge is not an edge */
    int rec = find(b.v, "rec");
    for (size_t e = 0; e < b.g.n_edges; e++)
        assert_false(b.g.edges[e].src == (uint32_t)rec && b.g.edges[e].dst == (uint32_t)rec);
    /* main->rec edge weight counted once */
    int mainn = find(b.v, "main");
    bool found = false;
    for (size_t e = 0; e < b.g.n_edges; e++)
        if (b.g.edges[e].src == (uint32_t)mainn && b.g.edges[e].dst == (uint32_t)rec) {
            assert_int_equal(b.g.edges[e].weight, 20);
            found = true;
        }
    assert_true(found);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_focus_ignore(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    built b;
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "^work$"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->n_stacks, 2);
    assert_int_equal(b.v->total, 100); /* total before filtering, as pprof */
    assert_int_equal(b.v->kept_total, 40);
    assert_int_equal(cum_of(&b, "main"), 40);
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_IGNORE, "spin"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->kept_total, 50);
    assert_int_equal(find(b.v, "rec") < 0 || cum_of(&b, "rec") == 0, 1);
    unbuild(&b);
    hs_analysis_options_free(&o);

    /* focus matches file names and mapping files too */
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "libx"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->kept_total, 40);
    unbuild(&b);
    hs_analysis_options_free(&o);
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "^e\\.c$"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->kept_total, 20);
    unbuild(&b);
    hs_analysis_options_free(&o);

    /* relative percentages: total after filtering */
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "spin"), 1);
    assert_int_equal(set(&o, HS_OPT_RELATIVE, NULL), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->total, 50);
    unbuild(&b);
    hs_analysis_options_free(&o);

    /* no match: warning, no stacks */
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "zzz"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->n_stacks, 0);
    assert_non_null(strstr(b.v->warnings, "Focus"));
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_hide_show_showfrom(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    built b;
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_HIDE, "^spin$"), 1);
    build(&b, p, NULL, &o);
    /* spin frames removed: work gets the spin sample's flat, rec too */
    assert_true(find(b.v, "spin") < 0);
    assert_int_equal(flat_of(&b, "work"), 40);
    assert_int_equal(flat_of(&b, "rec"), 20);
    assert_int_equal(b.v->kept_total, 100);
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_SHOW, "^(main|spin)$"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(flat_of(&b, "spin"), 50);
    assert_int_equal(flat_of(&b, "main"), 50); /* work and alloc+lib frames gone */
    assert_true(find(b.v, "work") < 0);
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_SHOW_FROM, "^work$"), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(b.v->n_stacks, 2);
    assert_int_equal(b.v->stacks[0].n, 2); /* work;spin */
    assert_string_equal(b.v->nodes[b.v->stacks[0].nodes[0]].name, "work");
    assert_int_equal(cum_of(&b, "work"), 40);
    assert_true(find(b.v, "main") < 0 || cum_of(&b, "main") == 0);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_tags(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    built b;
    const struct {
        int code;
        const char *spec;
        int64_t kept;
    } cases[] = {
        {HS_OPT_TAGFOCUS, "kind=alpha", 50},
        {HS_OPT_TAGFOCUS, "kind=alpha,beta", 60},
        {HS_OPT_TAGFOCUS, "kind:gam", 40},        /* no key: key:value */
        {HS_OPT_TAGIGNORE, "kind=alpha", 50},
        {HS_OPT_TAGFOCUS, "bytes=1kb", 30},
        {HS_OPT_TAGFOCUS, "bytes=2kb:", 40},
        {HS_OPT_TAGFOCUS, ":1kb", 30},
        {HS_OPT_TAGFOCUS, "1kb:64kb", 70},
        {HS_OPT_TAGIGNORE, "bytes=64kb", 60},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        opts(&o, HS_KIND_NOTRIM);
        assert_int_equal(set(&o, cases[i].code, cases[i].spec), 1);
        build(&b, p, NULL, &o);
        if (b.v->kept_total != cases[i].kept)
            fail_msg("%s: kept %lld, want %lld", cases[i].spec, (long long)b.v->kept_total,
                     (long long)cases[i].kept);
        unbuild(&b);
        hs_analysis_options_free(&o);
    }
    hs_profile_free(p);
}

static void test_granularity(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    built b;
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_LINES, NULL), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(flat_of(&b, "spin c.c:30"), 30);
    assert_int_equal(flat_of(&b, "spin c.c:31"), 20);
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FILES, NULL), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(flat_of(&b, "c.c"), 50);
    assert_int_equal(cum_of(&b, "a.c"), 100);
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_ADDRESSES, NULL), 1);
    build(&b, p, NULL, &o);
    assert_int_equal(flat_of(&b, "0000000000403000 spin c.c:30"), 30);
    assert_int_equal(flat_of(&b, "00000000007f1234 [libx.so]"), 40);
    unbuild(&b);
    /* only one granularity */
    assert_int_equal(set(&o, HS_OPT_LINES, NULL), -1);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_trimming(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    built b;
    opts(&o, HS_KIND_NOTRIM);
    o.nodecount = 2;
    build(&b, p, NULL, &o);
    assert_int_equal(b.g.n_order, 2);
    assert_string_equal(b.v->nodes[b.g.order[0]].name, "spin"); /* by flat */
    assert_string_equal(b.v->nodes[b.g.order[1]].name, "[libx.so]");
    assert_true(b.g.orig_count > 2);
    unbuild(&b);
    o.cum_sort = true;
    build(&b, p, NULL, &o);
    assert_string_equal(b.v->nodes[b.g.order[0]].name, "main");
    unbuild(&b);
    hs_analysis_options_free(&o);

    opts(&o, HS_KIND_NOTRIM);
    o.nodefraction = 0.25; /* cut at 25: drops work? cum 40 stays; rec 20 dropped */
    build(&b, p, NULL, &o);
    assert_int_equal(b.g.dropped_nodes, 1);
    int rec = find(b.v, "rec");
    assert_int_equal(b.g.nodes[rec].cum, 0);
    /* the main->spin edge over the dropped rec is residual */
    int mainn = find(b.v, "main"), spin = find(b.v, "spin");
    bool residual = false;
    for (size_t e = 0; e < b.g.n_edges; e++)
        if (b.g.edges[e].src == (uint32_t)mainn && b.g.edges[e].dst == (uint32_t)spin)
            residual = b.g.edges[e].residual;
    assert_true(residual);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_calltree(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    built b;
    build(&b, p, NULL, &o);
    hs_calltree t;
    char err[128];
    assert_int_equal(hs_calltree_build(b.v, &t, err, sizeof err), 0);
    assert_int_equal(t.t[0].total, 100);
    uint32_t m = t.t[0].first_child;
    assert_string_equal(b.v->nodes[t.t[m].node].name, "main");
    assert_int_equal(t.t[m].total, 100);
    assert_int_equal(t.t[m].next_sibling, 0);
    /* children of main sorted by total: work 40, alloc 40 (name), rec 20 */
    uint32_t c1 = t.t[m].first_child, c2 = t.t[c1].next_sibling, c3 = t.t[c2].next_sibling;
    assert_string_equal(b.v->nodes[t.t[c1].node].name, "alloc");
    assert_string_equal(b.v->nodes[t.t[c2].node].name, "work");
    assert_string_equal(b.v->nodes[t.t[c3].node].name, "rec");
    assert_int_equal(t.t[c2].self, 10);
    assert_int_equal(t.t[c3].total, 20);
    /* the tree keeps recursion as depth: rec;rec;rec;spin */
    uint32_t r = c3;
    int depth = 0;
    while (t.t[r].first_child) {
        r = t.t[r].first_child;
        depth++;
    }
    assert_int_equal(depth, 3);
    assert_int_equal(t.t[r].self, 20);
    hs_calltree_free(&t);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

/* ---- hs_calltree_walk against the call tree it must reproduce ---- */

typedef struct {
    const hs_calltree *t;
    int64_t min_keep;
    uint32_t at; /* the tree node the walk should be at; 0 before the first */
    bool started;
    size_t visited;
} walk_check;

static bool tree_keep(const hs_tree_node *n, int64_t min_keep)
{
    hs_walk_node w = {n->node, n->depth, n->self, n->total, n->base_self, n->base_total};
    return hs_walk_keep(&w, min_keep);
}

/* The tree node after i in a pre-order walk that skips the children that
 * are not kept. */
static uint32_t tree_next_kept(const hs_calltree *t, uint32_t i, int64_t min_keep)
{
    for (uint32_t c = t->t[i].first_child; c; c = t->t[c].next_sibling)
        if (tree_keep(&t->t[c], min_keep))
            return c;
    for (; i; i = t->t[i].parent)
        for (uint32_t s = t->t[i].next_sibling; s; s = t->t[s].next_sibling)
            if (tree_keep(&t->t[s], min_keep))
                return s;
    return 0;
}

static void assert_same_node(const hs_walk_node *w, const hs_tree_node *n)
{
    assert_int_equal(w->node, n->node);
    assert_int_equal(w->depth, n->depth);
    assert_int_equal(w->self, n->self);
    assert_int_equal(w->total, n->total);
    assert_int_equal(w->base_self, n->base_self);
    assert_int_equal(w->base_total, n->base_total);
}

static int walk_visit(void *ctx, const hs_walk_node *n, const hs_walk_node *kids, size_t n_kids)
{
    walk_check *c = ctx;
    if (c->started) {
        c->at = tree_next_kept(c->t, c->at, c->min_keep);
        assert_int_not_equal(c->at, 0); /* the walk goes on after the tree's end */
    }
    c->started = true;
    c->visited++;
    const hs_tree_node *tn = &c->t->t[c->at];
    assert_same_node(n, tn);
    size_t k = 0;
    for (uint32_t ch = tn->first_child; ch; ch = c->t->t[ch].next_sibling, k++) {
        assert_true(k < n_kids);
        assert_same_node(&kids[k], &c->t->t[ch]);
    }
    assert_int_equal(k, n_kids);
    return 0;
}

/* The tally: (total, base_total) of each node, as many times as nodes. */
typedef struct {
    int64_t (*tb)[2];
    size_t n, cap;
    bool root_first;
} tally_check;

static void tally_nodes(void *ctx, const hs_walk_node *n, size_t count)
{
    tally_check *c = ctx;
    if (c->n == 0)
        c->root_first = n->node == HS_NODE_NONE && n->depth == 0;
    for (size_t i = 0; i < count; i++) {
        assert_true(c->n < c->cap);
        c->tb[c->n][0] = n->total;
        c->tb[c->n++][1] = n->base_total;
    }
}

static int cmp_tb(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Random stacks (with recursion, shared prefixes, ties in totals, empty
 * stacks, and in a diff base samples and negative values): the walk gives
 * the nodes of the tree, in its order, with the same values and children;
 * with a min_keep it skips exactly the subtrees of the small nodes. The
 * tally counts the same nodes with the same totals. */
static void test_calltree_walk(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    static const char *const fns[] = {"a", "b", "c", "d", "e", "f"};
    for (int round = 0; round < 40; round++) {
        hs_profile *ps[2];
        for (int k = 0; k < 2; k++) {
            hs_profile *p = ps[k] = hs_profile_new();
            assert_non_null(p);
            assert_true(hs_profile_add_sample_type(p, "samples", "count") >= 0);
            assert_true(hs_profile_add_sample_type(p, "cpu", "nanoseconds") >= 0);
            uint64_t locs[6];
            for (int f = 0; f < 6; f++)
                assert_true((locs[f] = add_loc(p, 0, 0x1000 + (uint64_t)f, fns[f], "x.c", 0)) != 0);
            int n_samples = 1 + (int)(rng % 60);
            for (int s = 0; s < n_samples; s++) {
                uint64_t st[12];
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                size_t n = rng % 9;
                /* few distinct first frames and small alphabets: shared prefixes */
                for (size_t i = 0; i < n; i++) {
                    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                    st[i] = locs[i == 0 ? rng % 2 : rng % (round % 3 ? 3 : 6)];
                }
                int64_t v = (int64_t)(rng >> 40) % 4; /* 0 and equal values: ties */
                add_sample(p, st, n, v, v * 10, "alpha", 0);
            }
        }
        hs_analysis_options o;
        opts(&o, HS_KIND_NOTRIM);
        char err[256];
        hs_view *v = round % 2 ? hs_view_build(ps, 1, ps + 1, 1, &o, err, sizeof err)
                               : hs_view_build(ps, 1, NULL, 0, &o, err, sizeof err);
        assert_non_null(v);
        hs_calltree t;
        assert_int_equal(hs_calltree_build(v, &t, err, sizeof err), 0);
        for (int64_t min_keep = 0; min_keep <= 80; min_keep += 40) {
            walk_check c = {&t, min_keep, 0, false, 0};
            assert_int_equal(hs_calltree_walk(v, min_keep, walk_visit, &c, err, sizeof err), 0);
            assert_int_equal(tree_next_kept(&t, c.at, min_keep), 0); /* the walk saw all */
            if (min_keep == 0)
                assert_int_equal(c.visited, t.n);
        }
        /* the tally: the root first, then as many nodes as the tree's, with
         * the same totals */
        tally_check tc = {calloc(t.n + 1, sizeof *tc.tb), 0, t.n + 1, false};
        int64_t(*want)[2] = calloc(t.n + 1, sizeof *want);
        assert_true(tc.tb && want);
        assert_int_equal(hs_calltree_tally(v, tally_nodes, &tc, err, sizeof err), 0);
        assert_true(tc.root_first);
        assert_int_equal(tc.n, t.n);
        for (size_t i = 0; i < t.n; i++) {
            want[i][0] = t.t[i].total;
            want[i][1] = t.t[i].base_total;
        }
        qsort(tc.tb, tc.n, sizeof *tc.tb, cmp_tb);
        qsort(want, t.n, sizeof *want, cmp_tb);
        assert_memory_equal(tc.tb, want, t.n * sizeof *want);
        free(tc.tb);
        free(want);
        /* first use: node ids in tree creation order */
        uint32_t *order;
        size_t n_order, k = 0;
        assert_int_equal(hs_calltree_first_use(v, &order, &n_order, err, sizeof err), 0);
        bool *seen = calloc(v->n_nodes + 1, 1);
        assert_non_null(seen);
        for (size_t i = 1; i < t.n; i++)
            if (!seen[t.t[i].node]) {
                seen[t.t[i].node] = true;
                assert_true(k < n_order);
                assert_int_equal(order[k++], t.t[i].node);
            }
        assert_int_equal(k, n_order);
        free(seen);
        free(order);
        hs_calltree_free(&t);
        hs_view_free(v);
        hs_analysis_options_free(&o);
        hs_profile_free(ps[0]);
        hs_profile_free(ps[1]);
    }
}

/* ---- hs_calltree_walk_split against hs_calltree_walk ----
 * A recorder's log holds, per node visited, a hash of the path of node ids
 * from the root (from the recorder's own state, one hash per depth: a fork
 * must carry it), the node's values and its children's; pieces' logs are joined in order. The split
 * walk must log exactly what the single walk logs. Nothing asserts on the
 * walkers' threads: a mismatch shows in the logs. */
#define REC_DEPTH 512

typedef struct {
    uint64_t *log;
    size_t n, cap;
    uint64_t path[REC_DEPTH]; /* depth d: hash of the path down to it */
    uint32_t depth;
    size_t *forks;                /* shared: fork count */
    uint32_t stop_depth, stop_node; /* return 7 there (depth 0: never) */
    int64_t stop_total;
    bool fail_join;
} rec;

static int rec_put(rec *r, uint64_t x)
{
    if (HS_VEC_RESERVE(r->log, r->cap, r->n + 1) < 0)
        return -1;
    r->log[r->n++] = x;
    return 0;
}

static int rec_node(void *ctx, const hs_walk_node *n, const hs_walk_node *kids, size_t nk)
{
    rec *r = ctx;
    if (n->depth >= REC_DEPTH)
        return 9;
    uint64_t h = n->depth ? r->path[n->depth - 1] : 0;
    h = (h ^ n->node) * 0x100000001b3ULL + n->depth;
    r->path[n->depth] = h;
    r->depth = n->depth;
    int bad = rec_put(r, n->depth) | rec_put(r, h) | rec_put(r, n->node);
    bad |= rec_put(r, (uint64_t)n->self) | rec_put(r, (uint64_t)n->total);
    bad |= rec_put(r, (uint64_t)n->base_self) | rec_put(r, (uint64_t)n->base_total) | rec_put(r, nk);
    for (size_t k = 0; k < nk; k++)
        bad |= rec_put(r, kids[k].node) | rec_put(r, kids[k].depth) | rec_put(r, (uint64_t)kids[k].total) |
               rec_put(r, (uint64_t)kids[k].self);
    if (bad)
        return 8;
    if (r->stop_depth && n->depth == r->stop_depth && n->node == r->stop_node && n->total == r->stop_total)
        return 7;
    return 0;
}

static void *rec_fork(void *ctx)
{
    rec *r = ctx, *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    *p = *r;
    p->log = NULL;
    p->n = p->cap = 0;
    __atomic_fetch_add(r->forks, 1, __ATOMIC_RELAXED);
    return p;
}

static int rec_join(void *ctx, void *piece)
{
    rec *r = ctx, *p = piece;
    if (r->fail_join)
        return 5;
    for (size_t i = 0; i < p->n; i++)
        if (rec_put(r, p->log[i]) < 0)
            return 8;
    return 0;
}

static void rec_drop(void *piece)
{
    rec *p = piece;
    free(p->log);
    free(p);
}

static const hs_walk_split rec_split = {rec_node, rec_fork, rec_join, rec_drop};

/* The split walk of v (threads 1 and 2, each min_keep) logs what the single
 * walk logs; the number of forks, for 2 threads and min_keep 0, in *forks_out. */
static void check_split(hs_view *v, const int64_t *keeps, size_t n_keeps, size_t *forks_out)
{
    char err[256];
    for (size_t ki = 0; ki < n_keeps; ki++) {
        size_t forks = 0;
        rec one = {.forks = &forks};
        assert_int_equal(hs_calltree_walk(v, keeps[ki], rec_node, &one, err, sizeof err), 0);
        assert_int_equal(forks, 0);
        for (int threads = 1; threads <= 2; threads++) {
            rec two = {.forks = &forks};
            assert_int_equal(hs_calltree_walk_split(v, keeps[ki], &rec_split, &two, threads, err, sizeof err), 0);
            assert_int_equal(two.n, one.n);
            assert_memory_equal(two.log, one.log, one.n * sizeof *one.log);
            free(two.log);
            if (threads == 1)
                assert_int_equal(forks, 0); /* one thread: the walk itself */
            if (threads == 2 && keeps[ki] == 0 && forks_out)
                *forks_out = forks;
            forks = 0;
        }
        free(one.log);
    }
}

/* A profile of n random stacks (root first) over n_fn functions, the first
 * `prefix` frames of each the same chain, depths up to max_depth. */
static hs_profile *random_profile(uint64_t *rng, int n, int n_fn, int prefix, int max_depth, bool recursive)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_true(hs_profile_add_sample_type(p, "samples", "count") >= 0);
    assert_true(hs_profile_add_sample_type(p, "cpu", "nanoseconds") >= 0);
    uint64_t *locs = calloc((size_t)n_fn, sizeof *locs);
    uint64_t *st = calloc((size_t)(prefix + max_depth + 1), sizeof *st);
    uint64_t *leaf_first = calloc((size_t)(prefix + max_depth + 1), sizeof *leaf_first);
    assert_true(locs && st && leaf_first);
    for (int f = 0; f < n_fn; f++) {
        char name[32];
        snprintf(name, sizeof name, "fn%d", f);
        assert_true((locs[f] = add_loc(p, 0, 0x1000 + (uint64_t)f, name, "x.c", f + 1)) != 0);
    }
    for (int s = 0; s < n; s++) {
        size_t len = 0;
        for (int i = 0; i < prefix; i++)
            st[len++] = locs[i % n_fn];
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        size_t d = (size_t)(*rng % (uint64_t)(max_depth + 1));
        for (size_t i = 0; i < d; i++) {
            *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
            /* recursive: mostly the same function again */
            st[len++] = recursive && (*rng >> 20) % 4 ? locs[0] : locs[i == 0 ? *rng % 3 : *rng % (uint64_t)n_fn];
        }
        int64_t v = (int64_t)(*rng >> 40) % 5; /* 0 and ties */
        for (size_t i = 0; i < len; i++)
            leaf_first[i] = st[len - 1 - i];
        int64_t vals[2] = {v, v * 10};
        assert_int_equal(hs_profile_add_sample(p, leaf_first, len, vals, NULL, 0), 0);
    }
    free(locs);
    free(st);
    free(leaf_first);
    return p;
}

/* The split walk (pieces on threads, each forked where the walk is) gives
 * the single walk's nodes in its order: random trees (and diffs), a root
 * with one child down a long chain, deep recursion, a profile too small to
 * split and one without stacks; a stop from fn or join is returned. */
static void test_calltree_walk_split(void **state)
{
    (void)state;
    uint64_t rng = 0x2545f4914f6cdd1dULL;
    static const int64_t keeps[] = {0, 3, 40};
    struct {
        int n, n_fn, prefix, max_depth;
        bool recursive, diff;
    } cases[] = {
        {12000, 30, 0, 12, false, false}, /* random, many roots */
        {12000, 8, 0, 16, false, true},   /* a diff: base values, negative deltas */
        {12000, 40, 25, 10, false, false}, /* one child each down 25 frames */
        {5000, 12, 2, 400, true, false},   /* deep recursion */
        {200, 10, 0, 8, false, false},     /* too few stacks to split */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        hs_profile *ps[2];
        ps[0] = random_profile(&rng, cases[ci].n, cases[ci].n_fn, cases[ci].prefix, cases[ci].max_depth,
                               cases[ci].recursive);
        ps[1] = random_profile(&rng, cases[ci].n, cases[ci].n_fn, cases[ci].prefix, cases[ci].max_depth,
                               cases[ci].recursive);
        hs_analysis_options o;
        opts(&o, HS_KIND_NOTRIM);
        char err[256];
        hs_view *v = hs_view_build(ps, 1, cases[ci].diff ? ps + 1 : NULL, cases[ci].diff ? 1 : 0, &o, err, sizeof err);
        assert_non_null(v);
        size_t forks = 0;
        check_split(v, keeps, sizeof keeps / sizeof keeps[0], &forks);
        const hs_stack *us;
        size_t nu;
        assert_int_equal(hs_an_view_unique(v, &us, &nu), 0);
        if (nu >= HS_WALK_SPLIT_MIN + 1000)
            assert_true(forks > 8); /* it was split */
        else if (nu < HS_WALK_SPLIT_MIN)
            assert_int_equal(forks, 0);
        if (ci == 0) {
            /* a stop: from fn at a node deep in the walk, from join */
            size_t f = 0;
            rec one = {.forks = &f};
            assert_int_equal(hs_calltree_walk(v, 0, rec_node, &one, err, sizeof err), 0);
            /* the last node logged: find its record start by walking the log */
            size_t at = 0, last = 0;
            while (at < one.n) {
                last = at;
                size_t nk = one.log[at + 7];
                at += 8 + 4 * nk;
            }
            assert_int_equal(at, one.n);
            uint32_t sd = (uint32_t)one.log[last];
            rec two = {.forks = &f, .stop_depth = sd, .stop_node = (uint32_t)one.log[last + 2],
                       .stop_total = (int64_t)one.log[last + 4]};
            assert_true(sd > 0);
            assert_int_equal(hs_calltree_walk_split(v, 0, &rec_split, &two, 2, err, sizeof err), 7);
            free(two.log);
            rec three = {.forks = &f, .fail_join = true};
            assert_int_equal(hs_calltree_walk_split(v, 0, &rec_split, &three, 2, err, sizeof err), 5);
            free(three.log);
            free(one.log);
        }
        hs_view_free(v);
        hs_analysis_options_free(&o);
        hs_profile_free(ps[0]);
        hs_profile_free(ps[1]);
    }
    /* no stacks: the root alone */
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_true(hs_profile_add_sample_type(p, "samples", "count") >= 0);
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    char err[256];
    hs_view *v = hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err);
    assert_non_null(v);
    size_t forks = 0;
    check_split(v, keeps, 1, &forks);
    assert_int_equal(forks, 0);
    hs_view_free(v);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_diff(void **state)
{
    (void)state;
    hs_profile *a = make_profile(1, 1);
    hs_profile *b2 = make_profile(2, 0); /* spin doubled, alloc gone */
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    built b;
    /* a profile against itself: every delta zero */
    build(&b, a, a, &o);
    assert_true(b.v->diff);
    for (size_t i = 0; i < b.g.n_order; i++) {
        const hs_graph_node *n = &b.g.nodes[b.g.order[i]];
        assert_int_equal(n->flat - n->base_flat, 0);
        assert_int_equal(n->cum - n->base_cum, 0);
    }
    unbuild(&b);
    /* known deltas */
    build(&b, b2, a, &o);
    assert_int_equal(b.v->base_total, 100);
    assert_int_equal(b.v->total, 110); /* 60+10+40+0 */
    int spin = find(b.v, "spin"), lib = find(b.v, "[libx.so]"), work = find(b.v, "work");
    assert_int_equal(b.g.nodes[spin].base_flat, 50);
    assert_int_equal(b.g.nodes[spin].flat, 100);
    assert_int_equal(b.g.nodes[lib].base_flat, 40);
    assert_int_equal(b.g.nodes[lib].flat, 0);
    assert_int_equal(b.g.nodes[work].flat - b.g.nodes[work].base_flat, 0);
    assert_int_equal(b.g.nodes[work].cum - b.g.nodes[work].base_cum, 30);
    /* ordered by |delta flat|: spin +50, lib -40 */
    assert_int_equal(b.g.order[0], (uint32_t)spin);
    assert_int_equal(b.g.order[1], (uint32_t)lib);
    unbuild(&b);
    /* normalized: NEW scaled to BASE's total (per-sample rounding) */
    o.normalize = true;
    build(&b, b2, a, &o);
    assert_int_equal(b.g.nodes[spin].flat, 55 + 36); /* 60*100/110, 40*100/110 rounded */
    unbuild(&b);
    hs_analysis_options_free(&o);
    /* incompatible types */
    hs_profile *c = hs_profile_new();
    assert_true(hs_profile_add_sample_type(c, "alloc_space", "bytes") >= 0);
    hs_profile *ps[1] = {b2}, *bs[1] = {c};
    char err[256];
    opts(&o, HS_KIND_NOTRIM);
    assert_null(hs_view_build(ps, 1, bs, 1, &o, err, sizeof err));
    assert_non_null(strstr(err, "compatible"));
    hs_analysis_options_free(&o);
    hs_profile_free(c);
    hs_profile_free(a);
    hs_profile_free(b2);
}

static void test_merge(void **state)
{
    (void)state;
    hs_profile *a = make_profile(1, 1);
    hs_profile *b2 = make_profile(2, 0);
    hs_profile *ps[2] = {a, b2};
    char err[256];
    hs_profile *m = hs_analysis_merge(ps, 2, err, sizeof err);
    assert_non_null(m);
    /* identical stacks and labels summed: 4 distinct samples (the alloc one of
     * b2 has a zero ns value but a nonzero count, so it is kept) */
    assert_int_equal(m->n_samples, 4);
    int64_t ns = 0, cnt = 0;
    for (size_t i = 0; i < m->n_samples; i++) {
        cnt += m->samples[i].values[0];
        ns += m->samples[i].values[1];
    }
    assert_int_equal(ns, 210);
    assert_int_equal(cnt, 20);
    assert_int_equal(m->n_locations, a->n_locations);
    assert_int_equal(m->n_functions, a->n_functions);
    /* the merged profile analyzes like the two */
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    built b;
    build(&b, m, NULL, &o);
    assert_int_equal(flat_of(&b, "spin"), 150);
    assert_int_equal(cum_of(&b, "rec"), 60);
    unbuild(&b);
    hs_analysis_options_free(&o);
    /* different types refuse to merge */
    hs_profile *c = hs_profile_new();
    assert_true(hs_profile_add_sample_type(c, "alloc_space", "bytes") >= 0);
    hs_profile *bad[2] = {a, c};
    assert_null(hs_analysis_merge(bad, 2, err, sizeof err));
    hs_profile_free(c);
    hs_profile_free(m);
    hs_profile_free(a);
    hs_profile_free(b2);
}

static void test_filter_profile(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    hs_analysis_options o;
    opts(&o, HS_KIND_NOTRIM);
    assert_int_equal(set(&o, HS_OPT_FOCUS, "spin"), 1);
    assert_int_equal(set(&o, HS_OPT_HIDE, "^rec$"), 1);
    char err[256];
    hs_profile *f = hs_analysis_filter_profile(p, &o, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(f->n_samples, 2);
    assert_int_equal(f->samples[1].n_locations, 2); /* main;spin without rec */
    hs_analysis_options_free(&o);
    opts(&o, HS_KIND_NOTRIM);
    built b;
    build(&b, f, NULL, &o);
    assert_int_equal(cum_of(&b, "main"), 50);
    assert_true(find(b.v, "rec") < 0);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(f);
    hs_profile_free(p);
}

static void test_option_errors(void **state)
{
    (void)state;
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    char err[256] = "";
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_FOCUS, "(", err, sizeof err), -1);
    assert_non_null(strstr(err, "focus"));
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_TAGFOCUS, "k=[", err, sizeof err), -1);
    assert_non_null(strstr(err, "tagfocus"));
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_TAGIGNORE, "k=(", err, sizeof err), -1);
    assert_non_null(strstr(err, "tagignore"));
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_NODECOUNT, "x", err, sizeof err), -1);
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_NODEFRACTION, "2", err, sizeof err), -1);
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_EDGEFRACTION, "-1", err, sizeof err), -1);
    assert_int_equal(hs_analysis_parse_option(&o, 'x', NULL, err, sizeof err), 0);
    assert_int_equal(hs_analysis_parse_option(&o, HS_OPT_NODECOUNT, "7", err, sizeof err), 1);
    assert_int_equal(o.nodecount, 7);
    hs_analysis_options_free(&o);
}

static void test_empty_profiles(void **state)
{
    (void)state;
    char err[256];
    hs_analysis_options o;
    opts(&o, HS_KIND_TOP);
    hs_profile *none = hs_profile_new();
    hs_profile *ps[1] = {none};
    assert_null(hs_view_build(ps, 1, NULL, 0, &o, err, sizeof err)); /* no sample types */
    assert_int_equal(hs_profile_add_sample_type(none, "cpu", "nanoseconds"), 0);
    built b;
    build(&b, none, NULL, &o);
    assert_int_equal(b.v->n_stacks, 0);
    assert_int_equal(b.g.n_order, 0);
    hs_calltree t;
    assert_int_equal(hs_calltree_build(b.v, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 1);
    hs_calltree_free(&t);
    unbuild(&b);
    /* a sample without locations is kept by the view but shows in no node */
    int64_t val = 5;
    assert_int_equal(hs_profile_add_sample(none, NULL, 0, &val, NULL, 0), 0);
    build(&b, none, NULL, &o);
    assert_int_equal(b.v->total, 5);
    assert_int_equal(b.g.n_order, 0);
    unbuild(&b);
    hs_analysis_options_free(&o);
    hs_profile_free(none);
}

/* Paths are cleaned as Go's filepath.Clean (pprof): the cases of its tests
 * that matter for debug info, plus the ones issue reports found. */
static void test_clean_path(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"./malloc/malloc.c", "malloc/malloc.c"},
        {"./csu/../csu/libc-start.c", "csu/libc-start.c"},
        {"/usr/src//a/./b/../c.c", "/usr/src/a/c.c"},
        {"../sysdeps/nptl/x.h", "../sysdeps/nptl/x.h"},
        {"../../a/../b", "../../b"},
        {"a/b/../../..", ".."},
        {"/..", "/"},
        {"/../a", "/a"},
        {"", "."},
        {".", "."},
        {"./", "."},
        {"a/", "a"},
        {"//a//b//", "/a/b"},
        {"abc/def/../../..", ".."},
        {"/abc/def/../../..", "/"},
        {"a/./b/./c", "a/b/c"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", cases[i][0]);
        hs_analysis_clean_path(buf);
        if (strcmp(buf, cases[i][1]) != 0)
            fail_msg("clean(%s) = %s, want %s", cases[i][0], buf, cases[i][1]);
    }
}

/* Filters are RE2, as pprof's are: RE2 spellings mean what they mean in
 * RE2, what RE2 has not (look-ahead, back-references) is refused, and so
 * are patterns whose nested counted repeats would need unbounded memory
 * (glibc's regcomp took 3 GB for the 21-byte "((x{32767}){32767})"). */
static void test_re2_regexes(void **state)
{
    (void)state;
    static const struct {
        const char *re, *subject;
        int match;
    } cases[] = {
        {"f\\d+$", "f12", 1},           {"f\\d+$", "fx", 0},
        {"^\\D", "a1", 1},              {"^\\D", "1a", 0},
        {"(?i)MALLOC", "__libc_malloc", 1}, {"MALLOC", "malloc", 0},
        {"(?:ab|cd)e", "xcde", 1},       {"(?:ab|cd)e", "xace", 0},
        {"a.*?c", "abbc", 1},            {"[\\d_]x", "_x", 1},
        {"[\\d_]x", "ax", 0},           {"\\s", "a b", 1},
        {"\\w+::\\w+", "std::sort", 1}, {"\\Amain\\z", "main", 1},
        {"\\Amain\\z", "mainx", 0},    {"a\\.b", "a.b", 1},
        {"a\\.b", "axb", 0},            {"[]x]", "]", 1},
        {"\\p{L}", "é", 1},            {"^\\p{L}", "1", 0},
        {"\\Qa.b\\E", "a.b", 1},       {"\\Qa.b\\E", "axb", 0},
        {"(?P<n>x)y", "xy", 1},          {"[[:digit:]]", "a7", 1},
        {"(a{10}){10}", "aaaaaaaaaa", 0}, {"(?:a{10}){10}", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hs_regex re;
        char err[256];
        if (hs_analysis_regcomp(&re, cases[i].re, "test", err, sizeof err) != 0)
            fail_msg("%s: %s", cases[i].re, err);
        int got = hs_regex_match(&re, cases[i].subject);
        hs_regex_free(&re);
        if (got != cases[i].match)
            fail_msg("'%s' on '%s': %d, want %d", cases[i].re, cases[i].subject, got, cases[i].match);
    }
    static const char *const refused[] = {"(?=x)", "a\\1", "((x{32767}){32767})", "(((a{100}){100}){100})",
                                          "(a{1001})"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        hs_regex re;
        char err[256] = "";
        assert_int_equal(hs_analysis_regcomp(&re, refused[i], "focus", err, sizeof err), -1);
        assert_non_null(strstr(err, "focus regexp"));
    }
}

/* Samples with equal stacks and labels (sharing a location id array, as
 * decoded profiles do) are one view stack with n_samples; values of
 * either sign are not mixed; each_sample keeps one stack per sample; the
 * graph is the same either way. */
static void test_identical_samples_merged(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    const hs_sample *s0 = &p->samples[0]; /* main;work;spin, kind=alpha bytes=1024 */
    int64_t plus[2] = {3, 30}, minus[2] = {-1, -10};
    hs_label other[1] = {{hs_profile_str(p, "kind"), hs_profile_str(p, "delta"), 0, 0}};
    uint64_t ids[3];
    hs_label labels[2];
    memcpy(ids, s0->location_ids, sizeof ids);
    memcpy(labels, s0->labels, sizeof labels);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, minus, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, other, 1), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, NULL, 0), 0); /* by stack class */
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, NULL, 0), 0);
    void *buf;
    size_t len;
    char err[256];
    assert_int_equal(hs_profile_encode(p, &buf, &len, err, sizeof err), 0);
    hs_profile *q = hs_profile_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(q);
    assert_int_equal(q->n_samples, 10);
    assert_ptr_equal(q->samples[0].location_ids, q->samples[4].location_ids);
    assert_int_equal(hs_profile_sample_stack(q, 8, NULL), hs_profile_sample_stack(q, 0, NULL));
    assert_true(hs_profile_sample_stack(q, 1, NULL) != hs_profile_sample_stack(q, 0, NULL));
    assert_int_equal(hs_profile_sample_stack(p, 0, NULL), UINT32_MAX); /* built, not decoded */
    hs_analysis_options o;
    opts(&o, HS_KIND_TOP);
    o.relative = true;
    built m, e;
    build(&m, q, NULL, &o);
    o.each_sample = true;
    build(&e, q, NULL, &o);
    assert_int_equal(e.v->n_stacks, 10);
    assert_int_equal(m.v->n_stacks, 7); /* 3 alike merged; the negative and the other label apart;
                                           the two label-less ones merged */
    assert_int_equal(m.v->stacks[0].n_samples, 3);
    assert_int_equal(m.v->stacks[0].value, 90);
    size_t n_samples = 0;
    for (size_t i = 0; i < m.v->n_stacks; i++) {
        n_samples += m.v->stacks[i].n_samples;
        assert_true(m.v->stacks[i].value >= 0 || m.v->stacks[i].n_samples == 1);
    }
    assert_int_equal(m.v->stacks[6].n_samples, 2);
    assert_int_equal(n_samples, 10);
    assert_int_equal(m.v->total, e.v->total);           /* relative: sum of |value| */
    assert_int_equal(m.v->total, 100 + 60 + 10 + 30 + 60);
    assert_int_equal(flat_of(&m, "spin"), flat_of(&e, "spin"));
    assert_int_equal(cum_of(&m, "work"), cum_of(&e, "work"));
    assert_int_equal(flat_of(&m, "spin"), 30 + 20 + 60 - 10 + 30 + 60);
    unbuild(&m);
    unbuild(&e);
    hs_analysis_options_free(&o);
    hs_profile_free(q);
    hs_profile_free(p);
}

/* Two views built alike are equal: nodes, stacks and their node lists,
 * totals, warnings. */
static void assert_views_equal(const hs_view *a, const hs_view *b)
{
    assert_int_equal(a->total, b->total);
    assert_int_equal(a->base_total, b->base_total);
    assert_int_equal(a->kept_total, b->kept_total);
    assert_int_equal(a->kept_base, b->kept_base);
    assert_string_equal(a->warnings, b->warnings);
    assert_int_equal(a->n_nodes, b->n_nodes);
    for (size_t i = 0; i < a->n_nodes; i++) {
        const hs_node *x = &a->nodes[i], *y = &b->nodes[i];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->function, y->function);
        assert_string_equal(x->file, y->file);
        assert_string_equal(x->objfile, y->objfile);
        assert_int_equal(x->line, y->line);
        assert_int_equal(x->start_line, y->start_line);
        assert_int_equal(x->address, y->address);
    }
    assert_int_equal(a->n_stacks, b->n_stacks);
    for (size_t i = 0; i < a->n_stacks; i++) {
        const hs_stack *x = &a->stacks[i], *y = &b->stacks[i];
        assert_int_equal(x->value, y->value);
        assert_int_equal(x->base, y->base);
        assert_int_equal(x->div, y->div);
        assert_int_equal(x->n_samples, y->n_samples);
        assert_ptr_equal(x->sample, y->sample);
        assert_ptr_equal(x->profile, y->profile);
        assert_int_equal(x->n, y->n);
        assert_memory_equal(x->nodes, y->nodes, x->n * sizeof *x->nodes);
        assert_memory_equal(x->inl, y->inl, x->n);
        if (i + 1 < a->n_stacks) /* the node lists follow each other */
            assert_ptr_equal(x->nodes + x->n, a->stacks[i + 1].nodes);
    }
}

/* v, from hs_view_at_index, is the view hs_view_build makes at index si */
static void assert_same_view(const hs_view *v, hs_profile *const *ps, size_t n,
                             const hs_analysis_options *o, int si)
{
    char err[256], idx[8];
    hs_analysis_options at = *o;
    snprintf(idx, sizeof idx, "%d", si);
    at.sample_index = idx;
    hs_view *w = hs_view_build(ps, n, NULL, 0, &at, err, sizeof err);
    if (!w)
        fail_msg("view: %s", err);
    assert_int_equal(v->sample_index, si);
    assert_string_equal(v->sample_type, w->sample_type);
    assert_string_equal(v->unit, w->unit);
    assert_views_equal(v, w);
    /* and its call tree is that view's */
    hs_calltree ta, tb;
    assert_int_equal(hs_calltree_build(v, &ta, err, sizeof err), 0);
    assert_int_equal(hs_calltree_build(w, &tb, err, sizeof err), 0);
    assert_int_equal(ta.n, tb.n);
    for (size_t i = 0; i < ta.n; i++) {
        assert_int_equal(ta.t[i].node, tb.t[i].node);
        assert_int_equal(ta.t[i].self, tb.t[i].self);
        assert_int_equal(ta.t[i].total, tb.t[i].total);
    }
    hs_calltree_free(&ta);
    hs_calltree_free(&tb);
    hs_view_free(w);
}

/* hs_view_at_index (convert --to speedscope's other sample types) against
 * a view built at that index: decoded profiles (stack classes) and built
 * ones (hashes), labels, repeated stacks, a zero type, filters, merged
 * inputs, one stack per sample, and negative values (built anew). */
static void test_view_at_index(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    const hs_sample *s0 = &p->samples[0];
    uint64_t ids[3];
    hs_label labels[2];
    memcpy(ids, s0->location_ids, sizeof ids);
    memcpy(labels, s0->labels, sizeof labels);
    int64_t plus[2] = {3, 30}, zero_ns[2] = {5, 0}, zero_count[2] = {0, 7};
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, zero_ns, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, zero_count, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, NULL, 0), 0);
    void *buf;
    size_t len;
    char err[256];
    assert_int_equal(hs_profile_encode(p, &buf, &len, err, sizeof err), 0);
    hs_profile *q = hs_profile_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(q);
    hs_profile *neg = make_profile(1, 1);
    int64_t minus[2] = {-2, 10};
    memcpy(ids, neg->samples[0].location_ids, sizeof ids);
    assert_int_equal(hs_profile_add_sample(neg, ids, 3, minus, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(neg, ids, 3, plus, NULL, 0), 0);
    hs_profile *sets[][2] = {{q, NULL}, {p, NULL}, {q, p}, {neg, NULL}};
    size_t n_in[] = {1, 1, 2, 1};
    for (size_t k = 0; k < sizeof n_in / sizeof *n_in; k++)
        for (int variant = 0; variant < 5; variant++) {
            hs_analysis_options o;
            opts(&o, HS_KIND_NOTRIM);
            if (variant == 1)
                assert_int_equal(set(&o, HS_OPT_FOCUS, "work"), 1);
            if (variant == 2)
                o.each_sample = true;
            if (variant == 3)
                o.granularity = HS_GRAN_LINES;
            if (variant == 4)
                assert_int_equal(set(&o, HS_OPT_TAGFOCUS, "kind=alpha"), 1);
            hs_view *v = hs_view_build(sets[k], n_in[k], NULL, 0, &o, err, sizeof err);
            assert_non_null(v);
            assert_int_equal(v->sample_index, 1);
            for (int si = 0; si < 2; si++) {
                hs_view *a = hs_view_at_index(v, sets[k], n_in[k], &o, si, err, sizeof err);
                if (!a)
                    fail_msg("at index %d: %s", si, err);
                assert_same_view(a, sets[k], n_in[k], &o, si);
                hs_view_free(a);
            }
            assert_null(hs_view_at_index(v, sets[k], n_in[k], &o, 2, err, sizeof err));
            hs_view_free(v);
            hs_analysis_options_free(&o);
        }
    hs_profile_free(neg);
    hs_profile_free(q);
    hs_profile_free(p);
}

/* The view built with the locations worked out on a second thread while the
 * samples are merged (hs_an_view_apart_min 0) is the one built on one
 * thread: with and without tag filters, base profiles, one stack per
 * sample, each granularity; and name filters, which keep the one-thread
 * path. */
static void test_view_apart(void **state)
{
    (void)state;
    hs_profile *p = make_profile(1, 1);
    const hs_sample *s0 = &p->samples[0];
    uint64_t ids[3];
    hs_label labels[2];
    memcpy(ids, s0->location_ids, sizeof ids);
    memcpy(labels, s0->labels, sizeof labels);
    int64_t plus[2] = {3, 30}, minus[2] = {-2, -10};
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 3, plus, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, ids + 1, 2, minus, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, ids, 0, plus, NULL, 0), 0);
    uint64_t f1 = hs_profile_add_function(p, "inner", "inner", "i.c", 0);
    uint64_t f2 = hs_profile_add_function(p, "outer", "outer", "o.c", 0);
    hs_line inl[2] = {{f1, 7, 0}, {f2, 9, 0}}; /* inner inlined into outer */
    uint64_t both[2] = {hs_profile_add_location(p, p->mappings[0].id, 0x406000, inl, 2), ids[2]};
    assert_int_equal(hs_profile_add_sample(p, both, 2, plus, NULL, 0), 0);
    void *buf;
    size_t len;
    char err[256];
    assert_int_equal(hs_profile_encode(p, &buf, &len, err, sizeof err), 0);
    hs_profile *q = hs_profile_decode(buf, len, err, sizeof err); /* with stack classes */
    free(buf);
    assert_non_null(q);
    hs_profile *sets[][2] = {{q, NULL}, {p, NULL}, {q, p}};
    size_t n_in[] = {1, 1, 2};
    static const struct {
        int opt; /* a filter option, 0: none */
        const char *arg;
        hs_granularity gran;
        bool each, noinlines, diff;
    } vs[] = {
        {0, NULL, HS_GRAN_FUNCTIONS, false, false, false},
        {HS_OPT_TAGFOCUS, "kind=alpha", HS_GRAN_FUNCTIONS, false, false, false},
        {HS_OPT_TAGIGNORE, "kind=alpha", HS_GRAN_FUNCTIONS, false, false, true},
        {0, NULL, HS_GRAN_FUNCTIONS, true, false, false},
        {0, NULL, HS_GRAN_LINES, false, false, false},
        {0, NULL, HS_GRAN_ADDRESSES, false, false, false},
        {0, NULL, HS_GRAN_FILES, false, true, false},
        {HS_OPT_FOCUS, "work", HS_GRAN_FUNCTIONS, false, false, false},
        {HS_OPT_HIDE, "main", HS_GRAN_LINES, false, false, false},
    };
    size_t saved = hs_an_view_apart_min;
    for (size_t k = 0; k < sizeof n_in / sizeof *n_in; k++)
        for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) {
            hs_analysis_options o;
            opts(&o, HS_KIND_NOTRIM);
            if (vs[i].opt)
                assert_int_equal(set(&o, vs[i].opt, vs[i].arg), 1);
            o.granularity = vs[i].gran;
            o.obj_names = vs[i].gran == HS_GRAN_LINES;
            o.each_sample = vs[i].each;
            o.noinlines = vs[i].noinlines;
            hs_profile *const *bs = vs[i].diff ? &p : NULL;
            size_t nb = vs[i].diff ? 1 : 0;
            hs_an_view_apart_min = SIZE_MAX;
            hs_view *one = hs_view_build(sets[k], n_in[k], bs, nb, &o, err, sizeof err);
            hs_an_view_apart_min = 0;
            hs_view *two = hs_view_build(sets[k], n_in[k], bs, nb, &o, err, sizeof err);
            hs_an_view_apart_min = saved;
            assert_non_null(one);
            assert_non_null(two);
            assert_true(one->n_stacks > 0);
            assert_views_equal(one, two);
            hs_view_free(one);
            hs_view_free(two);
            hs_analysis_options_free(&o);
        }
    hs_profile_free(q);
    hs_profile_free(p);
}

/* The string table: interned strings found again by id, kept ones not
 * interned, both packed in chunks whose pointers stay valid while more are
 * added (well past one 64 KiB chunk, and one string longer than a chunk);
 * after seal the strings stay. */
static void test_strtab(void **state)
{
    (void)state;
    hs_strtab t;
    assert_int_equal(hs_strtab_init(&t), 0);
    enum { N = 20000 };
    const char *kept[N];
    char buf[64];
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "fn%d", i);
        assert_int_equal(hs_strtab_intern(&t, buf), (uint32_t)i);
        snprintf(buf, sizeof buf, "fn%d file.c:%d", i, i);
        kept[i] = hs_strtab_keep(&t, buf);
        assert_non_null(kept[i]);
    }
    size_t big_len = 100000;
    char *big = malloc(big_len + 1);
    assert_non_null(big);
    memset(big, 'x', big_len);
    big[big_len] = 0;
    uint32_t big_id = hs_strtab_intern(&t, big);
    assert_int_equal(big_id, N);
    assert_int_equal(hs_strtab_intern(&t, "fn7"), 7);   /* found, not added */
    assert_int_equal(hs_strtab_find(&t, "fn7"), 7);
    assert_int_equal(hs_strtab_find(&t, "fn7 file.c:7"), UINT32_MAX); /* find adds nothing */
    assert_int_equal(hs_strtab_find(&t, "nosuch"), UINT32_MAX);
    assert_int_equal(hs_strtab_intern(&t, "fn7 file.c:7"), N + 1); /* kept is not interned */
    assert_int_equal(t.n, N + 2);
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "fn%d", i);
        assert_string_equal(t.strs[i], buf);
        snprintf(buf, sizeof buf, "fn%d file.c:%d", i, i);
        assert_string_equal(kept[i], buf);
    }
    hs_strtab_seal(&t);
    assert_string_equal(t.strs[big_id], big);
    assert_string_equal(t.strs[123], "fn123");
    free(big);
    hs_strtab_free(&t);
}

/* Node names as pprof prints them (the %016llx/%s:%lld forms), and the
 * decimal formatter they use checked against printf at the edges. */
static void test_printable_name(void **state)
{
    (void)state;
    struct {
        const char *fn, *file, *obj;
        int64_t line;
        uint64_t addr;
        const char *want;
    } c[] = {
        {"main", "src/a.c", "/bin/x", 12, 0, "main src/a.c:12"},
        {"main", "src/a.c", "/bin/x", 0, 0, "main src/a.c"},
        {"main", "", "/bin/x", 0, 0, "main"},
        {"main", "", "", 7, 0, "main :7"},
        {"", "", "/usr/lib/libc.so.6", 0, 0, "[libc.so.6]"},
        {"", "", "", 0, 0, "<unknown>"},
        {"", "", "", 0, 0x401a2bULL, "0000000000401a2b <unknown>"},
        {"f", "g.c", "", -3, 0xfedcba9876543210ULL, "fedcba9876543210 f g.c:-3"},
        {"", "", "obj", 0, 1, "0000000000000001 [obj]"},
        {"", "h.c", "obj", INT64_MIN, 0, "h.c:-9223372036854775808"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *s = hs_an_printable_name(c[i].fn, c[i].file, c[i].obj, c[i].line, c[i].addr);
        assert_non_null(s);
        assert_string_equal(s, c[i].want);
        free(s);
    }
    int64_t vs[] = {0, 1, -1, 9, 10, 99, 100, -100, 999999, 1000000, INT64_MAX, INT64_MIN,
                    INT64_MAX / 10, 1000000000000000000LL, -1000000000000000000LL};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        char got[24], want[24];
        size_t n = hs_int_dec(got, vs[i]);
        got[n] = 0;
        snprintf(want, sizeof want, "%lld", (long long)vs[i]);
        assert_string_equal(got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_index_and_totals),
        cmocka_unit_test(test_printable_name),
        cmocka_unit_test(test_recursion_counted_once),
        cmocka_unit_test(test_focus_ignore),
        cmocka_unit_test(test_hide_show_showfrom),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_granularity),
        cmocka_unit_test(test_trimming),
        cmocka_unit_test(test_calltree),
        cmocka_unit_test(test_calltree_walk),
        cmocka_unit_test(test_calltree_walk_split),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_filter_profile),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_empty_profiles),
        cmocka_unit_test(test_clean_path),
        cmocka_unit_test(test_strtab),
        cmocka_unit_test(test_re2_regexes),
        cmocka_unit_test(test_identical_samples_merged),
        cmocka_unit_test(test_view_at_index),
        cmocka_unit_test(test_view_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
