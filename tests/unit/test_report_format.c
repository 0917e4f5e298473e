/* test_report_format.c — value formatting as pprof prints it (time, memory,
 * counts, percentages, the report-wide output unit, profile times), and the
 * top report's semantics on small hand-built profiles: flat at the leaf's
 * innermost inline frame, cum once per sample under recursion, inline
 * labels, node_fraction and node_count trimming. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "analysis/analysis.h"
#include "report/report.h"
#include "report/text_reports.h"

static const char *fmt(int64_t v, const char *from, const char *to)
{
    static char buf[64];
    return hs_format_scaled(buf, sizeof buf, v, from, to);
}

static void test_time_units(void **state)
{
    (void)state;
    assert_string_equal(fmt(1200000000, "nanoseconds", "auto"), "1.20s");
    assert_string_equal(fmt(30000000, "nanoseconds", "auto"), "30ms");
    assert_string_equal(fmt(1500, "nanoseconds", "auto"), "1.50us");
    assert_string_equal(fmt(999, "nanoseconds", "auto"), "999ns");
    assert_string_equal(fmt(0, "nanoseconds", "auto"), "0");
    assert_string_equal(fmt(7200LL * 1000000000, "nanoseconds", "auto"), "2hrs");
    assert_string_equal(fmt(10000000, "nanoseconds", "s"), "0.01s");
    assert_string_equal(fmt(1430000000, "nanoseconds", "s"), "1.43s");
    assert_string_equal(fmt(1000, "nanoseconds", "s"), "0"); /* rounds to 0.00 */
    assert_string_equal(fmt(-30000000, "nanoseconds", "auto"), "-30ms");
    assert_string_equal(fmt(3, "seconds", "ms"), "3000ms");
    assert_string_equal(fmt(5, "microseconds", "auto"), "5us");
}

static void test_memory_units(void **state)
{
    (void)state;
    assert_string_equal(fmt(512, "bytes", "auto"), "512B");
    assert_string_equal(fmt(1536, "bytes", "auto"), "1.50kB");
    assert_string_equal(fmt(64LL << 20, "bytes", "auto"), "64MB");
    assert_string_equal(fmt(3LL << 30, "bytes", "auto"), "3GB");
    assert_string_equal(fmt(512, "bytes", "MB"), "0"); /* 0.00049MB rounds to 0 */
    assert_string_equal(fmt(1 << 20, "bytes", "kB"), "1024kB");
    assert_string_equal(fmt(2048, "kilobytes", "auto"), "2MB");
}

static void test_counts_and_unknown(void **state)
{
    (void)state;
    assert_string_equal(fmt(42, "count", "auto"), "42");
    assert_string_equal(fmt(42, "count", "count"), "42");
    assert_string_equal(fmt(0, "count", "count"), "0");
    assert_string_equal(fmt(-7, "count", "count"), "-7");
    assert_string_equal(fmt(12, "cycles", "cycles"), "12cycles");
    const char *u;
    assert_true(hs_scale(5, "count", "minimum", &u) == 5.0);
    assert_string_equal(u, "");
    /* fractional counts imported from collapsed stacks print as counts */
    assert_string_equal(fmt(15, "count/10", "auto"), "1.50");
    assert_string_equal(fmt(-15, "count/10", "count/10"), "-1.50");
    assert_string_equal(fmt(2000, "count/1000", "auto"), "2");
    assert_string_equal(fmt(20, "count/1x", "count/1x"), "20count/1x");
    assert_string_equal(fmt(20, "count/1", "count/1"), "20count/1");
}

static const char *pct(int64_t v, int64_t total)
{
    static char buf[32];
    return hs_format_percent(buf, sizeof buf, v, total);
}

static void test_percent(void **state)
{
    (void)state;
    assert_string_equal(pct(1, 2), "50.00%");
    assert_string_equal(pct(1, 1), "  100%");
    assert_string_equal(pct(9996, 10000), "  100%");
    assert_string_equal(pct(1, 200), "  0.5%");
    assert_string_equal(pct(1, 3000), "0.033%");
    assert_string_equal(pct(0, 100), "    0%");
    assert_string_equal(pct(5, 0), "    0%");
    assert_string_equal(pct(-1, 4), "25.00%");
    assert_string_equal(pct(14, 1450), " 0.97%");
}

static void test_output_unit(void **state)
{
    (void)state;
    assert_string_equal(hs_output_unit(10000000, 1450000000, "nanoseconds"), "s");
    assert_string_equal(hs_output_unit(1500000, 1000000000, "nanoseconds"), "ms");
    assert_string_equal(hs_output_unit(20000000, 1000000000, "nanoseconds"), "ms");
    assert_string_equal(hs_output_unit(30000000, 90000000, "nanoseconds"), "ms");
    assert_string_equal(hs_output_unit(512, 64LL << 20, "bytes"), "kB");
    assert_string_equal(hs_output_unit(0, 64LL << 20, "bytes"), "MB");
    assert_string_equal(hs_output_unit(3, 1000, "count"), "count");
    assert_string_equal(hs_output_unit(3, 1000, "cycles"), "cycles");
}

static void test_time_label(void **state)
{
    (void)state;
    char buf[96];
    setenv("TZ", "UTC", 1);
    tzset();
    assert_string_equal(hs_format_time(buf, sizeof buf, 0), "Jan 1, 1970 at 12:00am (UTC)");
    assert_string_equal(hs_format_time(buf, sizeof buf, 1700000000123456789LL),
                        "Nov 14, 2023 at 10:13pm (UTC)");
    assert_string_equal(hs_format_time(buf, sizeof buf, 43200LL * 1000000000),
                        "Jan 1, 1970 at 12:00pm (UTC)");
}

/* ---- top semantics ---- */

static hs_profile *top_profile(void)
{
    hs_profile *p = hs_profile_new();
    assert_int_equal(hs_profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
    uint64_t fmain = hs_profile_add_function(p, "main", "", "", 0);
    uint64_t frec = hs_profile_add_function(p, "rec", "", "", 0);
    uint64_t fleaf = hs_profile_add_function(p, "leaf", "", "", 0);
    uint64_t finl = hs_profile_add_function(p, "inl", "", "", 0);
    uint64_t m = hs_profile_add_mapping(p, 0, 0, 0, "/bin/prog", "");
    hs_line lmain = {fmain, 1, 0}, lrec = {frec, 2, 0}, lleaf = {fleaf, 3, 0};
    hs_line linl[] = {{finl, 4, 0}, {fleaf, 5, 0}}; /* inl inlined into leaf */
    uint64_t a = hs_profile_add_location(p, m, 1, &lmain, 1);
    uint64_t b = hs_profile_add_location(p, m, 2, &lrec, 1);
    uint64_t c = hs_profile_add_location(p, m, 3, &lleaf, 1);
    uint64_t d = hs_profile_add_location(p, m, 4, linl, 2);
    uint64_t e = hs_profile_add_location(p, m, 5, NULL, 0); /* unsymbolized */
    uint64_t s1[] = {b, b, b, a};    /* main -> rec -> rec -> rec */
    uint64_t s2[] = {d, b, a};       /* main -> rec -> leaf -> inl (inline) */
    uint64_t s3[] = {c, a};          /* main -> leaf */
    uint64_t s4[] = {e, a};          /* main -> [prog] */
    int64_t v1 = 1000, v2 = 500, v3 = 300, v4 = 1;
    assert_int_equal(hs_profile_add_sample(p, s1, 4, &v1, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s2, 3, &v2, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s3, 2, &v3, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s4, 2, &v4, NULL, 0), 0);
    return p;
}

/* The graph node of the function called name, or NULL. */
static const hs_graph_node *row(const hs_view *v, const hs_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_order; i++)
        if (strcmp(v->nodes[g->order[i]].name, name) == 0)
            return &g->nodes[g->order[i]];
    return NULL;
}

static bool inline_only(const hs_graph *g, const hs_graph_node *n)
{
    bool inl = false, noinl = false;
    for (size_t k = 0; k < n->n_in; k++)
        *(g->edges[n->in[k]].inline_call ? &inl : &noinl) = true;
    return inl && !noinl;
}

/* top's rows as `hotspur top` computes them: view, then trimmed graph. */
static void top_rows(hs_profile *p, hs_analysis_options *o, hs_view **v, hs_graph *g)
{
    char err[256];
    hs_analysis_apply_defaults(o, HS_KIND_TOP);
    *v = hs_view_build(&p, 1, NULL, 0, o, err, sizeof err);
    if (!*v)
        fail_msg("view: %s", err);
    if (hs_graph_build(*v, o, g, err, sizeof err) < 0)
        fail_msg("graph: %s", err);
}

static void test_top_semantics(void **state)
{
    (void)state;
    hs_profile *p = top_profile();
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    o.nodefraction = 0;
    hs_view *v;
    hs_graph g;
    top_rows(p, &o, &v, &g);
    assert_int_equal(v->total, 1801);
    assert_int_equal(g.n_order, 5);
    assert_string_equal(v->nodes[g.order[0]].name, "rec"); /* sorted by flat */
    assert_int_equal(row(v, &g, "rec")->flat, 1000);
    assert_int_equal(row(v, &g, "rec")->cum, 1500); /* recursion counted once */
    assert_int_equal(row(v, &g, "inl")->flat, 500);  /* innermost inline frame is the leaf */
    assert_true(inline_only(&g, row(v, &g, "inl")));
    assert_int_equal(row(v, &g, "leaf")->flat, 300);
    assert_int_equal(row(v, &g, "leaf")->cum, 800);
    assert_int_equal(row(v, &g, "main")->cum, 1801);
    assert_int_equal(row(v, &g, "[prog]")->flat, 1);
    hs_graph_free(&g);
    hs_view_free(v);
    hs_analysis_options_free(&o);

    hs_analysis_options_init(&o);
    o.cum_sort = true;
    o.nodecount = 2;
    o.nodefraction = 0;
    top_rows(p, &o, &v, &g);
    assert_int_equal(g.n_order, 2);
    assert_string_equal(v->nodes[g.order[0]].name, "main");
    assert_string_equal(v->nodes[g.order[1]].name, "rec");
    assert_int_equal(g.orig_count, 5);
    hs_graph_free(&g);
    hs_view_free(v);
    hs_analysis_options_free(&o);

    hs_analysis_options_init(&o); /* default 0.005: "[prog]" (1 of 1801) is dropped */
    top_rows(p, &o, &v, &g);
    assert_int_equal(g.dropped_nodes, 1);
    assert_null(row(v, &g, "[prog]"));
    hs_graph_free(&g);
    hs_view_free(v);
    hs_analysis_options_free(&o);

    char err[128];
    hs_analysis_options_init(&o);
    o.sample_index = strdup("3");
    hs_analysis_apply_defaults(&o, HS_KIND_TOP);
    assert_null(hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err));
    assert_non_null(strstr(err, "sample index '3' not found"));
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_top_print(void **state)
{
    (void)state;
    hs_profile *p = top_profile();
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    hs_view *v;
    hs_graph g;
    top_rows(p, &o, &v, &g);
    char *text = NULL, err[128];
    size_t len = 0;
    if (getenv("HS_DUMP_TOP_PROFILE"))
        assert_int_equal(hs_profile_write_file(p, getenv("HS_DUMP_TOP_PROFILE"), err, sizeof err), 0);
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(hs_report_top_view(f, v, &g, &o, err, sizeof err), 0);
    assert_int_equal(fclose(f), 0);
    /* verified byte for byte against `go tool pprof -top` on the same profile */
    const char *want = "File: prog\n"
                       "Type: cpu\n"
                       "Showing nodes accounting for 1800ns, 99.94% of 1801ns total\n"
                       "Dropped 1 node (cum <= 9ns)\n"
                       "      flat  flat%   sum%        cum   cum%\n"
                       "    1000ns 55.52% 55.52%     1500ns 83.29%  rec\n"
                       "     500ns 27.76% 83.29%      500ns 27.76%  inl (inline)\n"
                       "     300ns 16.66% 99.94%      800ns 44.42%  leaf\n"
                       "         0     0% 99.94%     1801ns   100%  main\n";
    assert_string_equal(text, want);
    free(text);
    hs_graph_free(&g);
    hs_view_free(v);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_units),  cmocka_unit_test(test_memory_units),
        cmocka_unit_test(test_counts_and_unknown), cmocka_unit_test(test_percent),
        cmocka_unit_test(test_output_unit), cmocka_unit_test(test_time_label),
        cmocka_unit_test(test_top_semantics), cmocka_unit_test(test_top_print),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
