/* test_callgrind.c — the callgrind exporter on views built by hand: the
 * exact file of a small one (recursion, a function called from two callers,
 * a frame without a line, a zero sample) and of empty ones, and the same
 * bytes whatever the number of calls gathered per pass over the stacks and
 * on one thread or two, on random views and on one with more calls than a
 * default pass (functions split between passes, a position calling
 * thousands of callees) or a function called from thousands of callers,
 * whose order, sums and name compression are checked too. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "report/export.h"

/* A view made by hand: only the public fields the exporters read. */
typedef struct {
    hs_view v;
    hs_node *nodes;
    hs_stack *stacks;
    uint32_t *frames;
    uint8_t *inl;
    char **names;
    size_t n_names;
} test_view;

static void tv_free(test_view *t)
{
    for (size_t i = 0; i < t->n_names; i++)
        free(t->names[i]);
    free(t->names);
    free(t->nodes);
    free(t->stacks);
    free(t->frames);
    free(t->inl);
}

static char *export_cg(const hs_view *v, size_t pass, unsigned threads, size_t *len)
{
    char *buf = NULL, err[256];
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    int rc = hs_export_callgrind_ex(v, f, pass, threads, err, sizeof err);
    if (rc != 0)
        fail_msg("export failed: %s", err);
    assert_int_equal(fclose(f), 0);
    *len = n;
    return buf;
}

/* v exported with 0-2 threads and passes of every size is want from
 * after the first occurrence of from ("": the whole file). */
static void expect_cg(const hs_view *v, const char *from, const char *want)
{
    for (unsigned threads = 0; threads <= 2; threads++)
        for (size_t pass = 0; pass < 4; pass++) {
            size_t n;
            char *got = export_cg(v, pass, threads, &n);
            const char *body = strstr(got, from);
            assert_non_null(body);
            assert_string_equal(body + strlen(from), want);
            free(got);
        }
}

static void small_view(test_view *t)
{
    static hs_node nodes[] = {
        {.name = "main", .function = "main", .file = "m.c", .objfile = "", .line = 10},
        {.name = "main", .function = "main", .file = "m.c", .objfile = "", .line = 11},
        {.name = "a", .function = "a", .file = "a.c", .objfile = "", .line = 20},
        {.name = "a", .function = "a", .file = "a.c", .objfile = "", .line = 21},
        {.name = "b", .function = "b", .file = "b.c", .objfile = "", .line = 0},
    };
    static const uint32_t s0[] = {0, 2, 3, 4}, s1[] = {1, 4}, s2[] = {0, 2, 2, 2}, s3[] = {1, 2};
    static const uint8_t inl[4] = {0};
    static hs_stack stacks[] = {
        {.nodes = s0, .inl = inl, .n = 4, .n_samples = 1, .value = 5},
        {.nodes = s1, .inl = inl, .n = 2, .n_samples = 2, .value = 3},
        {.nodes = s2, .inl = inl, .n = 4, .n_samples = 1, .value = 7},
        {.nodes = s3, .inl = inl, .n = 2, .n_samples = 1, .value = 0}, /* kept out */
    };
    memset(t, 0, sizeof *t);
    t->v.sample_type = "cpu";
    t->v.unit = "nanoseconds";
    t->v.granularity = HS_GRAN_LINES;
    t->v.nodes = nodes;
    t->v.n_nodes = sizeof nodes / sizeof *nodes;
    t->v.stacks = stacks;
    t->v.n_stacks = sizeof stacks / sizeof *stacks;
}

/* Worked out by hand. main:10 calls a in two samples (5 + 7); main:11
 * calls b (3, in a stack of 2 samples). a:20 calls a in two samples: from
 * a:21 first (its position), and three times in one sample counted once;
 * a:21 calls b. b has no line: position 0. Names are given once. */
static void test_small_exact(void **state)
{
    (void)state;
    test_view t;
    small_view(&t);
    static const char want[] =
        "# callgrind format\nversion: 1\ncreator: hotspur\ncmd: cpu profile\n"
        "positions: line\nevents: cpu\n"
        "# sampled profile: the number after calls= is how many samples saw the call,\n"
        "# not how many calls were made (a sampling profiler cannot know that)\n"
        "# cpu is cpu in nanoseconds\nsummary: 15\n"
        "\nfl=(3) m.c\nfn=(2) main\n10 0\n11 0\n"
        "cfl=(5) a.c\ncfn=(4) a\ncalls=2 20\n10 12\n"
        "cfl=(7) b.c\ncfn=(6) b\ncalls=2 0\n11 3\n"
        "\nfl=(5)\nfn=(4)\n20 7\n21 0\n"
        "cfn=(4)\ncalls=2 21\n20 12\n" /* (a.c: the caller's file, no cfl=) */
        "cfl=(7)\ncfn=(6)\ncalls=1 0\n21 5\n"
        "\nfl=(7)\nfn=(6)\n0 8\n"
        "\ntotals: 15\n";
    expect_cg(&t.v, "", want);
}

/* Objects: main and a in /bin/prog, b in libc. A call names its object
 * (cob=) only when it leaves the caller's, and its file (cfl=) only when
 * it leaves the caller's: readers take the caller's otherwise. */
static void test_same_object(void **state)
{
    (void)state;
    test_view t;
    small_view(&t);
    hs_node nodes[5];
    memcpy(nodes, t.v.nodes, sizeof nodes);
    for (int i = 0; i < 5; i++)
        nodes[i].objfile = i < 4 ? "/bin/prog" : "/lib/libc.so";
    t.v.nodes = nodes;
    static const char want[] =
        "\nob=(4) /bin/prog\nfl=(3) m.c\nfn=(2) main\n10 0\n11 0\n"
        "cfl=(6) a.c\ncfn=(5) a\ncalls=2 20\n10 12\n"
        "cob=(9) /lib/libc.so\ncfl=(8) b.c\ncfn=(7) b\ncalls=2 0\n11 3\n"
        "\nob=(4)\nfl=(6)\nfn=(5)\n20 7\n21 0\n"
        "cfn=(5)\ncalls=2 21\n20 12\n"
        "cob=(9)\ncfl=(8)\ncfn=(7)\ncalls=1 0\n21 5\n"
        "\nob=(9)\nfl=(8)\nfn=(7)\n0 8\n"
        "\ntotals: 15\n";
    expect_cg(&t.v, "summary: 15\n", want);
}

static const char empty_head[] =
    "# callgrind format\nversion: 1\ncreator: hotspur\ncmd: cpu profile\n"
    "positions: line\nevents: cpu\n"
    "# sampled profile: the number after calls= is how many samples saw the call,\n"
    "# not how many calls were made (a sampling profiler cannot know that)\n"
    "# cpu is cpu in nanoseconds\nsummary: 0\n"
    "\ntotals: 0\n";

/* No nodes and no stacks; then nodes whose every stack is 0 (none is
 * written): the header and totals only. */
static void test_empty(void **state)
{
    (void)state;
    test_view t;
    small_view(&t);
    hs_stack zero[4];
    memcpy(zero, t.v.stacks, sizeof zero);
    for (size_t i = 0; i < 4; i++)
        zero[i].value = 0;
    for (int k = 0; k < 2; k++) {
        if (k == 0) {
            t.v.n_nodes = t.v.n_stacks = 0;
        } else {
            small_view(&t);
            t.v.stacks = zero;
        }
        for (unsigned threads = 1; threads <= 2; threads++) {
            size_t n;
            char *got = export_cg(&t.v, 0, threads, &n);
            assert_string_equal(got, empty_head);
            free(got);
        }
    }
}

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

static char *tv_name(test_view *t, const char *fmt, unsigned i)
{
    char *s = NULL;
    assert_true(asprintf(&s, fmt, i) > 0);
    t->names[t->n_names++] = s;
    return s;
}

/* n_stacks random stacks (depth 0..max_depth) over n_nodes nodes of n_fns
 * functions; with root >= 0 every stack starts at that node. Values of
 * both signs and zero; nodes of one function at several lines/addresses,
 * some without a function name (then the printable name counts). */
static void random_view(test_view *t, uint64_t seed, size_t n_fns, size_t n_nodes, size_t n_stacks,
                        uint32_t max_depth, int root, hs_granularity gran)
{
    memset(t, 0, sizeof *t);
    uint64_t s = seed;
    t->names = calloc(2 * n_fns + 2 * n_nodes + 8, sizeof *t->names);
    t->nodes = calloc(n_nodes, sizeof *t->nodes);
    t->stacks = calloc(n_stacks, sizeof *t->stacks);
    t->frames = calloc(n_stacks * max_depth + 1, sizeof *t->frames);
    t->inl = calloc(n_stacks * max_depth + 1, 1);
    assert_true(t->names && t->nodes && t->stacks && t->frames && t->inl);
    char **fn = calloc(n_fns, sizeof *fn), **file = calloc(n_fns, sizeof *file);
    assert_true(fn && file);
    for (unsigned f = 0; f < n_fns; f++) {
        fn[f] = tv_name(t, "fn%u", f);
        file[f] = tv_name(t, "src/file%u.c", f % 7);
    }
    for (unsigned i = 0; i < n_nodes; i++) {
        hs_node *nd = &t->nodes[i];
        unsigned f = i < n_fns ? i : rnd(&s) % n_fns;
        bool anon = rnd(&s) % 13 == 0;
        nd->function = anon ? "" : fn[f];
        nd->name = anon ? tv_name(t, "lib%u.so+0x10", f % 3) : fn[f];
        nd->file = anon ? "" : file[f];
        nd->objfile = anon ? tv_name(t, "/lib/lib%u.so", f % 3) : (f % 2 ? "/bin/prog" : "");
        nd->line = rnd(&s) % 5 == 0 ? 0 : (int64_t)(rnd(&s) % 50);
        nd->address = gran == HS_GRAN_ADDRESSES ? 0x1000 + rnd(&s) % 4096 : 0;
    }
    size_t off = 0;
    for (size_t i = 0; i < n_stacks; i++) {
        hs_stack *st = &t->stacks[i];
        uint32_t n = rnd(&s) % (max_depth + 1);
        st->nodes = &t->frames[off];
        st->inl = &t->inl[off];
        for (uint32_t k = 0; k < n; k++)
            t->frames[off + k] = k == 0 && root >= 0 ? (uint32_t)root : rnd(&s) % (uint32_t)n_nodes;
        off += n;
        st->n = n;
        st->n_samples = 1 + rnd(&s) % 3;
        st->value = rnd(&s) % 11 == 0 ? 0 : (int64_t)(rnd(&s) % 1000) - (rnd(&s) % 9 == 0 ? 1500 : 0);
    }
    free(fn);
    free(file);
    t->v.sample_type = "samples";
    t->v.unit = "count";
    t->v.granularity = gran;
    t->v.nodes = t->nodes;
    t->v.n_nodes = n_nodes;
    t->v.stacks = t->stacks;
    t->v.n_stacks = n_stacks;
}

static void check_names(const char *text);

/* Small passes (down to one position each) and two threads give the bytes
 * one pass on one thread does; names are given once, first. */
static void test_pass_size_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        test_view t;
        hs_granularity g = seed % 3 == 0 ? HS_GRAN_ADDRESSES : HS_GRAN_LINES;
        random_view(&t, seed, 3 + seed % 20, 5 + seed * 3, 20 + seed * 10, 1 + (uint32_t)seed % 14,
                    seed % 4 == 0 ? 0 : -1, g);
        size_t n1, n2;
        char *one = export_cg(&t.v, SIZE_MAX, 1, &n1);
        check_names(one);
        for (unsigned threads = 1; threads <= 2; threads++)
            for (size_t pass = 1; pass <= 256; pass *= 4) {
                char *small = export_cg(&t.v, pass == 256 ? SIZE_MAX : pass, threads, &n2);
                if (n1 != n2 || memcmp(one, small, n1) != 0)
                    fail_msg("seed %u: pass %zu on %u threads differs from one pass on one",
                             (unsigned)seed, pass, threads);
                free(small);
            }
        free(one);
        tv_free(&t);
    }
}

/* Parse a callgrind file of the exporter: within each fn= block, call
 * records ordered by (position, callee), every self cost line before the
 * calls; self costs sum to summary:. Returns the number of calls= records. */
static size_t check_file(const char *text)
{
    long long summary = -1, self_sum = 0;
    long long last_pos = -1, last_callee = -1, callee = -1;
    int after_calls = 0, in_calls = 0;
    size_t n_calls = 0;
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        assert_non_null(e);
        char line[128]; /* sscanf on the whole rest would strlen it each time */
        size_t len = (size_t)(e - p) < sizeof line - 1 ? (size_t)(e - p) : sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        long long a, b;
        if (sscanf(line, "summary: %lld", &a) == 1) {
            summary = a;
        } else if (strncmp(p, "fn=", 3) == 0) {
            last_pos = last_callee = -1;
            in_calls = 0;
        } else if (sscanf(line, "cfn=(%lld)", &a) == 1) {
            callee = a;
        } else if (strncmp(p, "calls=", 6) == 0) {
            after_calls = 1;
            n_calls++;
            p = e + 1;
            continue;
        } else if (p[0] >= '0' && p[0] <= '9' && sscanf(line, "%lld %lld", &a, &b) == 2) {
            if (after_calls) {
                if (a < last_pos || (a == last_pos && callee <= last_callee))
                    fail_msg("calls out of order at: %.40s", p);
                last_pos = a;
                last_callee = callee;
                in_calls = 1;
            } else {
                if (in_calls)
                    fail_msg("a cost line after the calls: %.40s", p);
                self_sum += b;
            }
        }
        after_calls = 0;
        p = e + 1;
    }
    assert_int_equal(self_sum, summary);
    return n_calls;
}

/* Every id's name is on its first reference (of its kind: ob= and cob=,
 * fl= and cfl=, fn= and cfn=) and on no other. */
static void check_names(const char *text)
{
    static const char *const kinds[3][2] = {{"ob=(", "cob=("}, {"fl=(", "cfl=("}, {"fn=(", "cfn=("}};
    size_t cap = 1024;
    for (int k = 0; k < 3; k++) {
        unsigned char *seen = calloc(cap, 1);
        assert_non_null(seen);
        for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
            const char *r = NULL;
            for (int c = 0; c < 2 && !r; c++)
                if (strncmp(p, kinds[k][c], strlen(kinds[k][c])) == 0)
                    r = p + strlen(kinds[k][c]);
            if (!r)
                continue;
            char *e;
            unsigned long id = strtoul(r, &e, 10);
            assert_true(*e == ')' && id > 0);
            while (id >= cap) {
                seen = realloc(seen, 2 * cap);
                assert_non_null(seen);
                memset(seen + cap, 0, cap);
                cap *= 2;
            }
            bool named = e[1] == ' ';
            if (named == (bool)seen[id])
                fail_msg("%s at: %.40s", named ? "a name given again" : "no name the first time", p);
            seen[id] = 1;
        }
        free(seen);
    }
}

/* More calls than one default pass (2^19): the default's passes give the
 * bytes of one pass and of 16 Ki-call passes, on one thread and two; the
 * root calls every function (the sort's long path). Lines are distinct
 * per node, so the file's position order is the line order check_file
 * checks. */
static void test_pass_size_large(void **state)
{
    (void)state;
    test_view t;
    random_view(&t, 99, 3000, 9000, 200000, 10, 0, HS_GRAN_LINES);
    for (size_t i = 0; i < t.v.n_nodes; i++)
        t.nodes[i].line = (int64_t)i + 1;
    size_t calls = 0;
    for (size_t i = 0; i < t.v.n_stacks; i++)
        if (t.stacks[i].value != 0 && t.stacks[i].n > 0)
            calls += t.stacks[i].n - 1;
    assert_true(calls > ((size_t)1 << 19));
    size_t n1, n2, n3;
    char *one = export_cg(&t.v, SIZE_MAX, 1, &n1);
    for (unsigned threads = 0; threads <= 2; threads++) {
        char *dflt = export_cg(&t.v, 0, threads, &n2);
        char *small = export_cg(&t.v, 16384, threads, &n3);
        assert_true(n1 == n2 && memcmp(one, dflt, n1) == 0);
        assert_true(n1 == n3 && memcmp(one, small, n1) == 0);
        free(dflt);
        free(small);
    }
    size_t records = check_file(one);
    assert_true(records > 3000); /* the root alone calls ~3000 functions */
    check_names(one);
    free(one);
    tv_free(&t);
}

/* One function called from 4000 callers (at two lines each): its calls
 * from each caller position sum to that caller's stacks, its name is given
 * once (at the first caller: its own block comes last), on one thread or
 * two and in passes. */
static void test_many_callers(void **state)
{
    (void)state;
    test_view t;
    size_t n_callers = 4000, n_nodes = 2 * n_callers + 1, n_stacks = 3 * n_callers;
    memset(&t, 0, sizeof t);
    t.names = calloc(n_callers + 1, sizeof *t.names);
    t.nodes = calloc(n_nodes, sizeof *t.nodes);
    t.stacks = calloc(n_stacks, sizeof *t.stacks);
    t.frames = calloc(2 * n_stacks, sizeof *t.frames);
    t.inl = calloc(2 * n_stacks, 1);
    assert_true(t.names && t.nodes && t.stacks && t.frames && t.inl);
    for (unsigned c = 0; c < n_callers; c++) {
        char *fn = tv_name(&t, "caller%04u", c);
        for (unsigned k = 0; k < 2; k++)
            t.nodes[2 * c + k] = (hs_node){.name = fn, .function = fn, .file = "c.c", .objfile = "", .line = 10 + k};
    }
    uint32_t hub = (uint32_t)(n_nodes - 1);
    t.nodes[hub] = (hs_node){.name = "zhub", .function = "zhub", .file = "h.c", .objfile = "", .line = 5};
    for (size_t i = 0; i < n_stacks; i++) { /* caller c: at line 10 twice, at 11 once */
        size_t c = i / 3;
        t.frames[2 * i] = (uint32_t)(2 * c + (i % 3 == 2));
        t.frames[2 * i + 1] = hub;
        t.stacks[i] = (hs_stack){.nodes = &t.frames[2 * i], .inl = &t.inl[2 * i], .n = 2, .n_samples = 1,
                                 .value = (int64_t)(c + 1)};
    }
    t.v.sample_type = "cpu";
    t.v.unit = "nanoseconds";
    t.v.granularity = HS_GRAN_LINES;
    t.v.nodes = t.nodes;
    t.v.n_nodes = n_nodes;
    t.v.stacks = t.stacks;
    t.v.n_stacks = n_stacks;
    size_t n1, n2;
    char *one = export_cg(&t.v, SIZE_MAX, 1, &n1);
    check_names(one);
    assert_int_equal(check_file(one), 2 * n_callers);
    /* caller 0 is the first function: the hub's name comes with its call */
    assert_non_null(strstr(one, "\nfl=(3) c.c\nfn=(2) caller0000\n10 0\n11 0\ncfl=(4004) h.c\n"
                                "cfn=(4003) zhub\ncalls=2 5\n10 2\ncfl=(4004)\ncfn=(4003)\ncalls=1 5\n11 1\n"));
    /* caller 3999 at line 10: twice, value 4000 each; then the hub, the
     * leaf of every stack */
    assert_non_null(strstr(one, "cfn=(4003)\ncalls=2 5\n10 8000\ncfl=(4004)\ncfn=(4003)\ncalls=1 5\n11 4000\n"
                                "\nfl=(4004)\nfn=(4003)\n5 24006000\n\ntotals: 24006000\n"));
    for (unsigned threads = 0; threads <= 2; threads++)
        for (size_t pass = 2; pass <= 2048; pass *= 32) {
            char *got = export_cg(&t.v, pass, threads, &n2);
            assert_true(n1 == n2 && memcmp(one, got, n1) == 0);
            free(got);
        }
    free(one);
    tv_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact),
        cmocka_unit_test(test_same_object),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_pass_size_random),
        cmocka_unit_test(test_pass_size_large),
        cmocka_unit_test(test_many_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
