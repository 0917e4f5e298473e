/* test_export_fuzz.c — the importers (collapsed stacks, perf script) and the
 * pprof decoder on thousands of random and mutated inputs: each must give
 * NULL with a message or a profile, never crash or hang; every profile they
 * return is pushed through every exporter (collapsed, callgrind, speedscope,
 * flame, DOT graph) and a pprof re-encode. Plus exact checks of the
 * importers and the collapsed round trip on known inputs. */
#include <setjmp.h>
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

static const char collapsed_text[] =
    "main;work;spin 30\n"
    "main;work 5\n"
    "main;other;spin 10\n"
    "main;with space (int, char);leaf 7\n"
    "# a comment\n"
    "\n"
    "main;work;spin 2\n";

static const char perf_text[] =
    "busy  6185   467.687975:     250000 cpu-clock:ppp: \n"
    "\t            1145 leaf_a+0xc (/tmp/busy)\n"
    "\t            1198 main+0x9 (/tmp/busy)\n"
    "\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "busy  6185   467.688223:     250000 cpu-clock:ppp: \n"
    "\t            114f leaf_a+0x16 (/tmp/busy)\n"
    "\t            1198 main+0x9 (/tmp/busy)\n"
    "\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "Web Content 77/78 [003] 468.000001:     500000 cpu-clock:ppp: \n"
    "\t               0 [unknown] ([unknown])\n"
    "\t            1000 operator new(unsigned long)+0x10 (/usr/lib/libstdc++.so.6)\n"
    "\n";

/* Run every exporter on p; they may fail cleanly (e.g. no samples) but
 * must not crash. */
static void export_all(hs_profile *p)
{
    char err[512];
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    hs_analysis_apply_defaults(&o, HS_KIND_GRAPH);
    hs_view *v = hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err);
    if (v) {
        (void)hs_export_collapsed(v, devnull, err, sizeof err);
        (void)hs_export_callgrind(v, devnull, err, sizeof err);
        (void)hs_export_speedscope(v, "x", devnull, err, sizeof err);
        (void)hs_report_flame(v, "x", devnull, err, sizeof err);
        (void)hs_report_graph(v, &o, "x", devnull, err, sizeof err);
        hs_view_free(v);
        /* a diff of the profile with itself */
        v = hs_view_build(&p, 1, &p, 1, &o, err, sizeof err);
        if (v) {
            (void)hs_report_flame_diff(v, "x", devnull, err, sizeof err);
            hs_view_free(v);
        }
    }
    void *buf = NULL;
    size_t len = 0;
    if (hs_profile_encode(p, &buf, &len, err, sizeof err) == 0) {
        hs_profile *q = hs_profile_decode(buf, len, err, sizeof err);
        assert_non_null(q); /* our own output must decode */
        hs_profile_free(q);
    }
    free(buf);
    hs_analysis_options_free(&o);
    fclose(devnull);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* Mutate buf in place: flip, insert separators, truncate. Returns new len. */
static size_t mutate(char *buf, size_t len, size_t cap)
{
    static const char specials[] = ";\n \t:()[]+0x-9#\r";
    int edits = 1 + (int)(rnd() % 8);
    for (int e = 0; e < edits && len; e++) {
        size_t at = rnd() % len;
        switch (rnd() % 5) {
        case 0:
            buf[at] = (char)(rnd() & 0xff);
            break;
        case 1:
            buf[at] = specials[rnd() % (sizeof specials - 1)];
            break;
        case 2: /* truncate */
            len = at;
            break;
        case 3: /* duplicate a chunk */
            if (len * 2 < cap) {
                size_t n = rnd() % (len - at + 1);
                memmove(buf + at + n, buf + at, len - at);
                len += n;
            }
            break;
        default: /* delete a byte */
            memmove(buf + at, buf + at + 1, len - at - 1);
            len--;
        }
    }
    return len;
}

static void fuzz_one(const char *data, size_t len)
{
    char err[512];
    hs_profile *p = hs_import_collapsed(data, len, err, sizeof err);
    if (p) {
        export_all(p);
        hs_profile_free(p);
    } else {
        assert_true(strlen(err) > 0 && !strchr(err, '\n'));
    }
    p = hs_import_perf_script(data, len, err, sizeof err);
    if (p) {
        export_all(p);
        hs_profile_free(p);
    } else {
        assert_true(strlen(err) > 0 && !strchr(err, '\n'));
    }
    p = hs_profile_decode(data, len, err, sizeof err);
    if (p) {
        export_all(p);
        hs_profile_free(p);
    }
    (void)hs_import_detect(data, len);
}

static void test_fuzz_text_importers(void **state)
{
    (void)state;
    enum { CAP = 16384 };
    char *buf = malloc(CAP);
    assert_non_null(buf);
    const char *seeds[] = {collapsed_text, perf_text};
    /* the parsers are fuzzed here: opening the seed's libc.so.6 to
     * symbolize its frames on each of the 1500 perf imports only slows it */
    setenv("HOTSPUR_PERF_SYMBOLIZE", "0", 1);
    for (int round = 0; round < 3000; round++) {
        const char *seed = seeds[round % 2];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        len = mutate(buf, len, CAP);
        fuzz_one(buf, len);
    }
    for (int round = 0; round < 1000; round++) { /* pure noise */
        size_t len = rnd() % 512;
        for (size_t i = 0; i < len; i++)
            buf[i] = rnd() % 4 ? "ab;c 1\n\t(x)+0x:"[rnd() % 16] : (char)(rnd() & 0xff);
        fuzz_one(buf, len);
    }
    unsetenv("HOTSPUR_PERF_SYMBOLIZE");
    free(buf);
}

static void test_fuzz_pprof(void **state)
{
    (void)state;
    char err[512];
    hs_profile *p = hs_import_perf_script(perf_text, strlen(perf_text), err, sizeof err);
    assert_non_null(p);
    void *enc = NULL;
    size_t len = 0;
    assert_int_equal(hs_profile_encode(p, &enc, &len, err, sizeof err), 0);
    hs_profile_free(p);
    /* the raw (gunzipped) encoding is a better mutation seed: decode+encode
     * gives gzip; mutate both */
    char *buf = malloc(len * 2 + 64);
    assert_non_null(buf);
    for (int round = 0; round < 2000; round++) {
        memcpy(buf, enc, len);
        size_t n = len;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits && n; e++) {
            size_t at = rnd() % n;
            if (rnd() % 3 == 0)
                n = at;
            else
                buf[at] = (char)(rnd() & 0xff);
        }
        p = hs_profile_decode(buf, n, err, sizeof err);
        if (p) {
            export_all(p);
            hs_profile_free(p);
        }
    }
    free(buf);
    free(enc);
}

/* Known input: values, stacks (leaf first), frame names with spaces. */
static void test_collapsed_import(void **state)
{
    (void)state;
    char err[512];
    hs_profile *p = hs_import_collapsed(collapsed_text, strlen(collapsed_text), err, sizeof err);
    assert_non_null(p);
    assert_int_equal(p->n_sample_types, 1);
    assert_string_equal(hs_profile_string(p, p->sample_types[0].type), "samples");
    assert_int_equal(p->n_samples, 5);
    int64_t sum = 0;
    for (size_t i = 0; i < p->n_samples; i++)
        sum += p->samples[i].values[0];
    assert_int_equal(sum, 54);
    /* sample 3: leaf "leaf", then "with space (int, char)", then "main" */
    const hs_sample *s = &p->samples[3];
    assert_int_equal(s->n_locations, 3);
    const hs_location *l = hs_profile_location(p, s->location_ids[1]);
    assert_non_null(l);
    const hs_function *f = hs_profile_function(p, l->lines[0].function_id);
    assert_string_equal(hs_profile_string(p, f->name), "with space (int, char)");
    hs_profile_free(p);

    assert_null(hs_import_collapsed("main;a notanumber\n", 18, err, sizeof err));
    assert_non_null(strstr(err, "line 1"));
    assert_null(hs_import_collapsed("\n\n", 2, err, sizeof err));
}

/* Counts as flamegraph.pl reads them: fractions kept exact by scaling the
 * unit, negative counts and exponents refused with the line number. */
static void test_collapsed_counts(void **state)
{
    (void)state;
    char err[512];
    const char *frac = "main;a 1.5\nmain;b 2\nmain;c 0.25\nmain;d 3.\n";
    hs_profile *p = hs_import_collapsed(frac, strlen(frac), err, sizeof err);
    assert_non_null(p);
    assert_string_equal(hs_profile_string(p, p->sample_types[0].unit), "count/100");
    static const int64_t want[] = {150, 200, 25, 300};
    assert_int_equal(p->n_samples, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(p->samples[i].values[0], want[i]);
    hs_profile_free(p);

    const char *ints = "main;a 7\nmain;b  9\n";
    p = hs_import_collapsed(ints, strlen(ints), err, sizeof err);
    assert_non_null(p);
    assert_string_equal(hs_profile_string(p, p->sample_types[0].unit), "count");
    assert_int_equal(p->samples[1].values[0], 9);
    hs_profile_free(p);

    static const char *const bad[] = {"main;a 2\nmain;b -3\n", "main;a 2\nmain;b 1e3\n", "main;a 2\nmain;b +4\n",
                                      "main;a 2\nmain;b 99999999999999999999\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(hs_import_collapsed(bad[i], strlen(bad[i]), err, sizeof err));
        assert_non_null(strstr(err, "line 2"));
    }
    assert_null(hs_import_collapsed(bad[0], strlen(bad[0]), err, sizeof err));
    assert_non_null(strstr(err, "negative"));
}

/* Collapsed -> profile -> collapsed gives the same stacks and sums. */
static void test_collapsed_round_trip(void **state)
{
    (void)state;
    char err[512];
    hs_profile *p = hs_import_collapsed(collapsed_text, strlen(collapsed_text), err, sizeof err);
    assert_non_null(p);
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);
    hs_view *v = hs_view_build(&p, 1, NULL, 0, &o, err, sizeof err);
    assert_non_null(v);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    assert_non_null(f);
    assert_int_equal(hs_export_collapsed(v, f, err, sizeof err), 0);
    fclose(f);
    /* the duplicate "main;work;spin" lines are summed (30 + 2) */
    assert_non_null(strstr(out, "main;work;spin 32\n"));
    assert_non_null(strstr(out, "main;work 5\n"));
    assert_non_null(strstr(out, "main;other;spin 10\n"));
    assert_non_null(strstr(out, "main;with space (int, char);leaf 7\n"));
    int lines = 0;
    for (char *c = out; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 4);
    free(out);
    hs_view_free(v);
    hs_analysis_options_free(&o);
    hs_profile_free(p);
}

static void test_perf_script_import(void **state)
{
    (void)state;
    char err[512];
    hs_profile *p = hs_import_perf_script(perf_text, strlen(perf_text), err, sizeof err);
    assert_non_null(p);
    assert_int_equal(p->n_sample_types, 2);
    assert_string_equal(hs_profile_string(p, p->sample_types[1].type), "cpu-clock");
    assert_string_equal(hs_profile_string(p, p->sample_types[1].unit), "nanoseconds");
    /* the first two samples differ in the leaf address: 3 samples */
    assert_int_equal(p->n_samples, 3);
    assert_int_equal(p->samples[0].values[1], 250000);
    assert_int_equal(p->samples[2].values[1], 500000);
    const hs_sample *s = &p->samples[2];
    assert_int_equal(s->n_locations, 2);
    const hs_location *l = hs_profile_location(p, s->location_ids[0]);
    const hs_function *f = hs_profile_function(p, l->lines[0].function_id);
    assert_string_equal(hs_profile_string(p, f->name), "[unknown]");
    l = hs_profile_location(p, s->location_ids[1]);
    f = hs_profile_function(p, l->lines[0].function_id);
    assert_string_equal(hs_profile_string(p, f->name), "operator new(unsigned long)");
    /* labels: comm with a space, pid/tid */
    int found = 0;
    for (size_t i = 0; i < s->n_labels; i++) {
        const char *k = hs_profile_string(p, s->labels[i].key);
        if (strcmp(k, "comm") == 0)
            found += strcmp(hs_profile_string(p, s->labels[i].str), "Web Content") == 0;
        if (strcmp(k, "tid") == 0)
            found += s->labels[i].num == 78;
    }
    assert_int_equal(found, 2);
    assert_string_equal(hs_import_detect(perf_text, strlen(perf_text)), "perf-script");
    assert_string_equal(hs_import_detect(collapsed_text, strlen(collapsed_text)), "collapsed");
    hs_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collapsed_import),
        cmocka_unit_test(test_collapsed_round_trip),
        cmocka_unit_test(test_collapsed_counts),
        cmocka_unit_test(test_perf_script_import),
        cmocka_unit_test(test_fuzz_text_importers),
        cmocka_unit_test(test_fuzz_pprof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
