/* test_collapsed_writer.c — the collapsed-stacks writer and the buffered
 * writer under it (report/stacks.c's hs_wbuf), with and without its writer
 * thread: frame names that hold ';' or '\n' cannot break a line, an output
 * many times the thread's two buffers comes out whole and in order, numbers
 * are exact at the int64 limits, speedscope's samples are the same
 * stacks in the same order and its frame table one frame per name in
 * first-use order, JSON strings are escaped by the rule, and a write
 * error is reported (the thread ended on that path too: LeakSanitizer
 * would see it otherwise). */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "profile/profile.h"
#include "report/export.h"
#include "report/stacks.h"

static hs_view *view_of(hs_profile *p)
{
    char err[512];
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);
    hs_view *v = hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err);
    hs_analysis_options_free(&o);
    assert_non_null(v);
    return v;
}

/* Everything hs_export_collapsed writes for v; *len its size. */
static char *collapsed_of(const hs_view *v, size_t *len)
{
    char *buf = NULL, err[512];
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(hs_export_collapsed(v, f, err, sizeof err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static uint64_t add_frame(hs_profile *p, const char *name)
{
    uint64_t fn = hs_profile_add_function(p, name, name, "", 0);
    assert_true(fn != 0);
    hs_line line = {.function_id = fn, .line = 0, .column = 0};
    uint64_t loc = hs_profile_add_location(p, 0, 0, &line, 1);
    assert_true(loc != 0);
    return loc;
}

static void test_names_cannot_break_lines(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_true(hs_profile_add_sample_type(p, "samples", "count") >= 0);
    uint64_t m = add_frame(p, "main"), semi = add_frame(p, "a;b;"),
             nl = add_frame(p, "two\nlines\n"), both = add_frame(p, ";x\ny");
    uint64_t s1[] = {semi, m}, s2[] = {nl, m}, s3[] = {m}, s4[] = {both, semi, m};
    int64_t v3 = 3, v2 = 2, v1 = 1, v5 = 5;
    assert_int_equal(hs_profile_add_sample(p, s1, 2, &v3, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s2, 2, &v2, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s3, 1, &v1, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, s4, 3, &v5, NULL, 0), 0);
    hs_view *v = view_of(p);
    size_t len;
    char *out = collapsed_of(v, &len);
    /* pre-order, children by total descending: main (11) -> a;b; (8) ->
     * ;x\ny (5), then two\nlines\n (2) */
    const char *want = "main 1\n"
                       "main;a:b: 3\n"
                       "main;a:b:;:x y 5\n"
                       "main;two lines  2\n";
    assert_int_equal(len, strlen(want));
    assert_string_equal(out, want);
    free(out);
    hs_view_free(v);
    hs_profile_free(p);
}

/* 30 000 distinct stacks of long names: ~2.5 MB of lines, many times the
 * writer thread's two buffers; values distinct, so the order is known. */
static void test_large_output_whole_and_in_order(void **state)
{
    (void)state;
    enum { N = 30000 };
    static const char pad[] = "_with_a_long_name_to_fill_the_buffers_sooner_than_otherwise";
    size_t cap = (size_t)N * 160, tl = 0;
    char *text = malloc(cap), *want = malloc(cap);
    assert_non_null(text);
    assert_non_null(want);
    for (int i = 0; i < N; i++)
        tl += (size_t)snprintf(text + tl, cap - tl, "root;mid%d;leaf%05d%s %d\n", i % 7, i, pad, i + 1);
    char err[512];
    hs_profile *p = hs_import_collapsed(text, tl, err, sizeof err);
    assert_non_null(p);
    /* expected: root has no self; mid groups by total descending (their
     * sums are distinct), leaves by value descending under each */
    int64_t mid_total[7] = {0};
    for (int i = 0; i < N; i++)
        mid_total[i % 7] += i + 1;
    int order[7];
    for (int k = 0; k < 7; k++)
        order[k] = k;
    for (int a = 0; a < 7; a++)
        for (int b = a + 1; b < 7; b++)
            if (mid_total[order[b]] > mid_total[order[a]]) {
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    size_t wl = 0;
    for (int k = 0; k < 7; k++)
        for (int i = N - 1; i >= 0; i--)
            if (i % 7 == order[k])
                wl += (size_t)snprintf(want + wl, cap - wl, "root;mid%d;leaf%05d%s %d\n", order[k], i, pad,
                                       i + 1);
    hs_view *v = view_of(p);
    size_t len;
    char *out = collapsed_of(v, &len);
    assert_true(len > 2000000); /* > 4x the thread's two buffers */
    assert_int_equal(len, wl);
    assert_memory_equal(out, want, wl);
    free(out);
    hs_view_free(v);
    hs_profile_free(p);
    free(text);
    free(want);
}

/* speedscope's samples, read back as collapsed lines: every profile of
 * the file ("name;name;... weight\n" per sample, in order), concatenated.
 * Frame names must need no escapes. */
static char *speedscope_as_collapsed(const char *js, size_t *len, int *n_profiles)
{
    const char *f = strstr(js, "\"frames\":[");
    assert_non_null(f);
    const char **names = NULL;
    size_t *name_len = NULL, n_names = 0, cap = 0;
    for (const char *q = f; (q = strstr(q, "{\"name\":\"")) && q < strstr(f, "]},"); q++) {
        if (n_names == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof *names);
            name_len = realloc(name_len, cap * sizeof *name_len);
            assert_true(names && name_len);
        }
        names[n_names] = q + 9;
        name_len[n_names] = (size_t)(strchr(q + 9, '"') - (q + 9));
        n_names++;
    }
    char *out = NULL;
    FILE *o = open_memstream(&out, len);
    assert_non_null(o);
    *n_profiles = 0;
    for (const char *sm = js; (sm = strstr(sm, "\"samples\":[")); (*n_profiles)++) {
        sm += 11;
        const char *end = strstr(sm, "],\"weights\":["); /* the samples' end */
        assert_non_null(end);
        const char *w = end + 13;
        for (const char *q = sm; q < end;) {
            assert_true(*q == '\n' && q[1] == '[');
            q += 2;
            for (bool first = true; *q != ']'; first = false) {
                char *e;
                unsigned long k = strtoul(q, &e, 10);
                assert_true(e > q && k < n_names);
                fprintf(o, "%s%.*s", first ? "" : ";", (int)name_len[k], names[k]);
                q = *e == ',' ? e + 1 : e;
            }
            q++; /* past the sample's ']': a ',' before the next, or the end */
            assert_true(q == end || *q == ',');
            if (q < end)
                q++;
            while (*w == ',' || *w == '\n')
                w++;
            char *e;
            long long wt = strtoll(w, &e, 10);
            assert_true(e > w);
            fprintf(o, " %lld\n", wt);
            w = e;
        }
        assert_int_equal(*w, ']');
        sm = w;
    }
    assert_int_equal(fclose(o), 0);
    free(names);
    free(name_len);
    return out;
}

/* n stacks "root;mid(i % 7);x(i % 13);leaf(i)", of weight i % 5 + 1 */
static hs_profile *mid_leaf_profile(int n)
{
    size_t cap = (size_t)n * 64, tl = 0;
    char *text = malloc(cap), err[512];
    assert_non_null(text);
    for (int i = 0; i < n; i++)
        tl += (size_t)snprintf(text + tl, cap - tl, "root;mid%d;x%d;leaf%05d %d\n", i % 7, i % 13, i, i % 5 + 1);
    hs_profile *p = hs_import_collapsed(text, tl, err, sizeof err);
    assert_non_null(p);
    free(text);
    return p;
}

/* The same large profile to speedscope (one profile, and two): its samples
 * are the collapsed lines, in the same order (the walk, split or not, is
 * the same; the pieces' samples joined with one ',' between). */
static void test_speedscope_samples_as_collapsed(void **state)
{
    (void)state;
    enum { N = 30000 };
    char err[512];
    hs_profile *p = mid_leaf_profile(N);
    hs_view *v = view_of(p);
    size_t cl;
    char *coll = collapsed_of(v, &cl);
    for (size_t nv = 1; nv <= 2; nv++) {
        char *js = NULL;
        size_t jl, sl;
        FILE *f = open_memstream(&js, &jl);
        assert_non_null(f);
        const hs_view *vs[2] = {v, v};
        assert_int_equal(hs_export_speedscope_multi(vs, nv, 0, "x", f, err, sizeof err), 0);
        assert_int_equal(fclose(f), 0);
        int np;
        char *got = speedscope_as_collapsed(js, &sl, &np);
        assert_int_equal(np, (int)nv);
        assert_int_equal(sl, cl * nv);
        for (size_t k = 0; k < nv; k++)
            assert_memory_equal(got + k * cl, coll, cl);
        free(got);
        free(js);
    }
    free(coll);
    hs_view_free(v);
    hs_profile_free(p);
}

/* speedscope's frame table: the frames' names, one per line. */
static char *speedscope_frame_names(const char *js)
{
    const char *f = strstr(js, "\"frames\":["), *end = f ? strstr(f, "]},") : NULL;
    assert_true(f && end);
    char *out = NULL;
    size_t len;
    FILE *o = open_memstream(&out, &len);
    assert_non_null(o);
    for (const char *q = f; (q = strstr(q, "{\"name\":\"")) && q < end; q++)
        fprintf(o, "%.*s\n", (int)(strchr(q + 9, '"') - (q + 9)), q + 9);
    assert_int_equal(fclose(o), 0);
    return out;
}

/* The frame table holds one frame per distinct name, in the order the
 * call tree's nodes first appear (the profile's stack order), and only
 * the frames of the nodes the tree uses: with --focus the view keeps
 * nodes of samples it dropped. One view and two sharing their nodes give
 * the same table. */
static void test_speedscope_frames(void **state)
{
    (void)state;
    enum { N = 3000 };
    char err[512];
    hs_profile *p = mid_leaf_profile(N);
    for (int focus = 0; focus <= 1; focus++) {
        hs_analysis_options o;
        hs_analysis_options_init(&o);
        hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);
        if (focus)
            o.focus = strdup("mid3");
        hs_view *v = hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err);
        hs_analysis_options_free(&o);
        assert_non_null(v);
        /* the names in first-use order */
        char *want = NULL, seen_x[13] = {0};
        size_t wl;
        FILE *w = open_memstream(&want, &wl);
        assert_non_null(w);
        fprintf(w, "root\n");
        for (int i = 0; i < N; i++) {
            if (focus && i % 7 != 3)
                continue;
            if (i < 7)
                fprintf(w, "mid%d\n", i);
            if (!seen_x[i % 13]) {
                seen_x[i % 13] = 1;
                fprintf(w, "x%d\n", i % 13);
            }
            fprintf(w, "leaf%05d\n", i);
        }
        assert_int_equal(fclose(w), 0);
        for (size_t nv = 1; nv <= 2; nv++) {
            char *js = NULL;
            size_t jl;
            FILE *f = open_memstream(&js, &jl);
            assert_non_null(f);
            const hs_view *vs[2] = {v, v};
            assert_int_equal(hs_export_speedscope_multi(vs, nv, 0, "x", f, err, sizeof err), 0);
            assert_int_equal(fclose(f), 0);
            char *got = speedscope_frame_names(js);
            assert_string_equal(got, want);
            free(got);
            free(js);
        }
        free(want);
        hs_view_free(v);
    }
    hs_profile_free(p);
}

/* The same bytes through hs_wbuf with and without the thread, and into
 * memory (mode 2: the pieces of a split walk; written to f at the end):
 * numbers at the limits, a piece larger than any buffer, many small
 * pieces. */
static char *wbuf_run(int threaded, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    hs_wbuf *w = malloc(sizeof *w);
    assert_non_null(w);
    if (threaded == 2)
        hs_wbuf_mem(w);
    else
        hs_wbuf_init(w, f);
    hs_wchar(w, '>'); /* buffered before the thread starts: written first */
    if (threaded == 1)
        assert_int_equal(hs_wbuf_thread(w), 0);
    static const int64_t nums[] = {0, 1, -1, 9, 10, -10, 99, 100, 12345678901234567, INT64_MAX, INT64_MIN,
                                   INT64_MIN + 1, 1000000000000000000, (int64_t)(9999999999999999999ULL / 10)};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        hs_wint(w, nums[i]);
        hs_wchar(w, ' ');
    }
    size_t big_n = (size_t)3 << 20;
    char *big = malloc(big_n);
    assert_non_null(big);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)('a' + i % 26);
    hs_wmem(w, big, big_n);
    for (int i = 0; i < 200000; i++) {
        hs_wmem(w, "xyz", (size_t)(i % 4));
        hs_wint(w, i * 7919 - 500000);
        hs_wchar(w, '\n');
    }
    free(big);
    if (threaded == 2) {
        assert_false(w->failed);
        assert_true(w->cap >= w->n);
        assert_int_equal(fwrite(w->buf, 1, w->n, f), w->n);
        hs_wbuf_mem_free(w);
    } else {
        hs_wflush(w);
        hs_wbuf_end(w);
    }
    free(w);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_wbuf_threaded_same_bytes(void **state)
{
    (void)state;
    size_t l0, l1, l2;
    char *a = wbuf_run(0, &l0), *b = wbuf_run(1, &l1), *c = wbuf_run(2, &l2);
    /* the numbers as printf writes them */
    char head[512];
    int hl = snprintf(head, sizeof head, ">0 1 -1 9 10 -10 99 100 12345678901234567 %lld %lld %lld 1000000000000000000 %lld ",
                      (long long)INT64_MAX, (long long)INT64_MIN, (long long)(INT64_MIN + 1),
                      (long long)(9999999999999999999ULL / 10));
    assert_true(l0 > (size_t)hl + ((size_t)3 << 20));
    assert_memory_equal(a, head, (size_t)hl);
    assert_int_equal(a[hl], 'a');
    assert_int_equal(a[hl + ((size_t)3 << 20) - 1], 'a' + (((size_t)3 << 20) - 1) % 26);
    assert_int_equal(l0, l1);
    assert_memory_equal(a, b, l0);
    assert_int_equal(l0, l2);
    assert_memory_equal(a, c, l0);
    free(a);
    free(b);
    free(c);
}

/* hs_wjson_string: every ASCII byte as it is or escaped by the rule
 * (quote, backslash, controls, and '<', '>', '&' for HTML), valid UTF-8
 * kept, an invalid byte as U+FFFD. */
static void test_wjson_string_escapes(void **state)
{
    (void)state;
    char s[160], want[1024];
    size_t n = 0, wl = 0;
    want[wl++] = '"';
    for (int b = 1; b < 0x80; b++) {
        s[n++] = (char)b;
        const char *e = b == '"' ? "\\\"" : b == '\\' ? "\\\\" : b == '\n' ? "\\n"
                      : b == '\r' ? "\\r" : b == '\t' ? "\\t" : b == '<' ? "\\u003c"
                      : b == '>' ? "\\u003e" : b == '&' ? "\\u0026" : NULL;
        if (e)
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "%s", e);
        else if (b < 0x20)
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "\\u%04x", b);
        else
            want[wl++] = (char)b;
    }
    memcpy(s + n, "\xc3\xa9\xff", 4); /* U+00E9, then an invalid byte */
    wl += (size_t)snprintf(want + wl, sizeof want - wl, "\xc3\xa9\\ufffd\"");
    hs_wbuf *w = malloc(sizeof *w);
    assert_non_null(w);
    hs_wbuf_mem(w);
    hs_wjson_string(w, s);
    assert_false(w->failed);
    assert_int_equal(w->n, wl);
    assert_memory_equal(w->buf, want, wl);
    hs_wbuf_mem_free(w);
    free(w);
}

/* hs_wint as printf: every power of ten, one less and one more, both
 * signs, and the limits */
static void test_wint_matches_printf(void **state)
{
    (void)state;
    char *buf = NULL, want[64];
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    hs_wbuf *w = malloc(sizeof *w);
    assert_non_null(w);
    hs_wbuf_init(w, f);
    int64_t vals[64 * 3 + 4];
    size_t n = 0;
    int64_t p = 1;
    for (int e = 0; e <= 18; e++) {
        if (e)
            p *= 10;
        vals[n++] = p;
        vals[n++] = p - 1;
        vals[n++] = p + 1;
        vals[n++] = -p;
        vals[n++] = -(p - 1);
        vals[n++] = -(p + 1);
    }
    vals[n++] = INT64_MAX;
    vals[n++] = INT64_MIN;
    vals[n++] = INT64_MAX - 1;
    vals[n++] = INT64_MIN + 1;
    for (size_t i = 0; i < n; i++) {
        hs_wint(w, vals[i]);
        hs_wchar(w, '\n');
    }
    hs_wflush(w);
    free(w);
    assert_int_equal(fclose(f), 0);
    const char *at = buf;
    for (size_t i = 0; i < n; i++) {
        int wl = snprintf(want, sizeof want, "%lld\n", (long long)vals[i]);
        assert_memory_equal(at, want, (size_t)wl);
        at += wl;
    }
    assert_int_equal((size_t)(at - buf), len);
    free(buf);
}

static void test_write_error_reported(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    /* more than stdio's buffer: the thread's own writes fail */
    static char text[65536];
    size_t tl = 0;
    for (int i = 0; i < 3000; i++)
        tl += (size_t)snprintf(text + tl, sizeof text - tl, "main;f%d 1\n", i);
    char err[512] = "";
    hs_profile *p = hs_import_collapsed(text, tl, err, sizeof err);
    assert_non_null(p);
    hs_view *v = view_of(p);
    assert_int_equal(hs_export_collapsed(v, full, err, sizeof err), -1);
    assert_non_null(strstr(err, "write error"));
    /* the writer thread's errno, not whatever this thread's was */
    assert_non_null(strstr(err, strerror(ENOSPC)));
    fclose(full);
    hs_view_free(v);
    hs_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_cannot_break_lines),
        cmocka_unit_test(test_large_output_whole_and_in_order),
        cmocka_unit_test(test_wbuf_threaded_same_bytes),
        cmocka_unit_test(test_speedscope_samples_as_collapsed),
        cmocka_unit_test(test_speedscope_frames),
        cmocka_unit_test(test_wjson_string_escapes),
        cmocka_unit_test(test_wint_matches_printf),
        cmocka_unit_test(test_write_error_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
