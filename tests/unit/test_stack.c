/* test_stack.c — stack records (src/store/stack*.c) on small profiles built
 * by hand: the record bytes of a known stack, hash determinism across
 * processes (other string order, location ids, ASLR base, tid), inline
 * chains expanded and folded back, frames without names named by file
 * offset, the limits, malformed records, profile ids. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "store/stack.h"

static void test_hash_is_xxh3(void **state)
{
    (void)state;
    /* XXH3 64-bit, seed 0, of the empty input: pins the algorithm (stored
     * hashes must stay valid across builds) */
    assert_true(hs_stack_hash("", 0) == 0x2D06800538D394C2ULL);
    assert_true(hs_stack_hash("a", 1) != hs_stack_hash("b", 1));
}

static void test_record_bytes(void **state)
{
    (void)state;
    hs_stack_frame f[2] = {
        {"f", "f", "a.c", "", 3, 1, true},
        {"main", "main", "a.c", "", 10, 9, false},
    };
    hs_stack_label l[1] = {{"k", "v", "", 0}};
    void *rec;
    size_t len;
    char err[256];
    assert_int_equal(hs_stack_encode(f, 2, l, 1, &rec, &len, err, sizeof err), 0);
    static const unsigned char want[] = {
        1,                                   /* version */
        5,                                   /* strings */
        1, 'f', 3, 'a', '.', 'c', 4, 'm', 'a', 'i', 'n', 1, 'k', 1, 'v',
        2,                                   /* frames */
        1, 1, 1, 2, 0, 6, 2,                 /* inlined f a.c:3, start 1 */
        0, 3, 3, 2, 0, 0x14, 0x12,           /* main a.c:10, start 9 */
        1, 4, 5, 0, 0,                       /* label k=v */
    };
    assert_int_equal(len, sizeof want);
    assert_memory_equal(rec, want, sizeof want);
    hs_stack_decoded d;
    assert_int_equal(hs_stack_decode(rec, len, &d, err, sizeof err), 0);
    assert_int_equal(d.n_frames, 2);
    assert_string_equal(d.frames[0].function, "f");
    assert_true(d.frames[0].inlined);
    assert_false(d.frames[1].inlined);
    assert_int_equal(d.frames[1].line, 10);
    assert_int_equal(d.frames[1].start_line, 9);
    assert_int_equal(d.n_labels, 1);
    assert_string_equal(d.labels[0].key, "k");
    assert_string_equal(d.labels[0].str, "v");
    hs_stack_decoded_free(&d);
    /* labels are put in canonical order */
    hs_stack_label l2[2] = {{"z", "1", "", 0}, {"a", "", "bytes", 5}};
    hs_stack_label l3[2] = {l2[1], l2[0]};
    void *r2, *r3;
    size_t n2, n3;
    assert_int_equal(hs_stack_encode(f, 2, l2, 2, &r2, &n2, err, sizeof err), 0);
    assert_int_equal(hs_stack_encode(f, 2, l3, 2, &r3, &n3, err, sizeof err), 0);
    assert_int_equal(n2, n3);
    assert_memory_equal(r2, r3, n2);
    free(r2);
    free(r3);
    free(rec);
}

/* A profile of two stacks over main -> work -> (inline chain a <- b) and
 * main -> libz (no lines), with per-thread labels. `shift` moves the ASLR
 * base; `noise` adds unrelated strings and functions first so every index
 * and id differs; tid differs too. */
static hs_profile *two_stacks(uint64_t shift, int noise, int64_t tid)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    if (noise) {
        hs_profile_str(p, "zzz");
        hs_profile_str(p, "work.c");
        hs_profile_add_function(p, "unused", "unused", "x.c", 1);
    }
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    assert_int_equal(hs_profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    uint64_t exe = hs_profile_add_mapping(p, 0x400000 + shift, 0x500000 + shift, 0, "/usr/bin/app", "b1");
    uint64_t lib = hs_profile_add_mapping(p, 0x7f0000000000 + shift, 0x7f0000100000 + shift, 0x2000,
                                          "/usr/lib/libz.so.1", "");
    uint64_t fmain = hs_profile_add_function(p, "main", "main", "main.c", 5);
    uint64_t fwork = hs_profile_add_function(p, "work", "_Z4workv", "work.c", 20);
    uint64_t fa = hs_profile_add_function(p, "a", "a", "a.h", 1);
    uint64_t fb = hs_profile_add_function(p, "b", "b", "b.h", 7);
    hs_line lm = {fmain, 9, 0}, lw = {fwork, 25, 0};
    hs_line chain[3] = {{fa, 3, 0}, {fb, 8, 0}, {fwork, 30, 0}}; /* innermost first */
    uint64_t loc_main = hs_profile_add_location(p, exe, 0x401000 + shift, &lm, 1);
    uint64_t loc_work = hs_profile_add_location(p, exe, 0x402000 + shift, &lw, 1);
    uint64_t loc_chain = hs_profile_add_location(p, exe, 0x402100 + shift, chain, 3);
    uint64_t loc_lib = hs_profile_add_location(p, lib, 0x7f0000008a60 + shift, NULL, 0);
    /* the same line at another address: another location, the same frame */
    uint64_t loc_work2 = hs_profile_add_location(p, exe, 0x402004 + shift, &lw, 1);
    hs_label lb[2] = {{hs_profile_str(p, "thread_name"), hs_profile_str(p, "worker"), 0, 0},
                      {hs_profile_str(p, "tid"), 0, tid, 0}};
    uint64_t s1[] = {loc_chain, loc_work, loc_main};
    uint64_t s2[] = {loc_lib, loc_work, loc_main};
    uint64_t s3[] = {loc_lib, loc_work2, loc_main};
    int64_t v1[] = {2, 20000000}, v2[] = {1, 10000000}, v3[] = {3, 30000000}, vz[] = {0, 0};
    assert_int_equal(hs_profile_add_sample(p, s1, 3, v1, lb, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, s2, 3, v2, lb, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, s3, 3, v3, lb, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, s1, 3, vz, lb, 1), 0); /* all zero: dropped */
    return p;
}

static const hs_store_sample *find_sample(const hs_store_profile *sp, uint64_t h)
{
    for (size_t i = 0; i < sp->n_samples; i++)
        if (sp->samples[i].stack == h)
            return &sp->samples[i];
    return NULL;
}

static const hs_store_stack *find_stack(const hs_store_profile *sp, uint64_t h)
{
    for (size_t i = 0; i < sp->n_stacks; i++)
        if (sp->stacks[i].hash == h)
            return &sp->stacks[i];
    return NULL;
}

static void test_decompose_deterministic(void **state)
{
    (void)state;
    hs_profile *a = two_stacks(0, 0, 101), *b = two_stacks(0x123000, 1, 202);
    hs_store_profile sa, sb;
    hs_stack_parts *pa, *pb;
    char err[256];
    assert_int_equal(hs_stack_decompose(a, NULL, &sa, &pa, err, sizeof err), 0);
    assert_int_equal(hs_stack_decompose(b, NULL, &sb, &pb, err, sizeof err), 0);
    /* s2 and s3 are one stack (same frames, addresses aside): 2 stacks */
    assert_int_equal(sa.n_samples, 2);
    assert_int_equal(sa.n_stacks, 2);
    assert_int_equal(sb.n_samples, 2);
    for (size_t i = 0; i < sa.n_samples; i++) {
        const hs_store_sample *o = find_sample(&sb, sa.samples[i].stack);
        assert_non_null(o);
        assert_memory_equal(o->values, sa.samples[i].values, sizeof o->values);
        const hs_store_stack *x = find_stack(&sa, sa.samples[i].stack), *y = find_stack(&sb, sa.samples[i].stack);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(x->len, y->len);
        assert_memory_equal(x->data, y->data, x->len);
        assert_true(hs_stack_hash(x->data, x->len) == x->hash);
    }
    assert_int_equal(sa.totals[0], 6);
    assert_int_equal(sa.totals[1], 60000000);
    assert_int_equal(sa.types.n, 2);
    assert_string_equal(sa.types.type[1], "cpu");
    assert_string_equal(sa.types.period_unit, "nanoseconds");
    assert_int_equal(sa.types.period, 10000000);
    assert_int_equal(sa.types.default_index, 1);
    /* the parts outlive the profile */
    hs_profile_free(a);
    assert_string_equal(sa.types.unit[0], "count");
    hs_stack_parts_free(pa);
    hs_stack_parts_free(pb);
    hs_profile_free(b);
}

static void test_inline_and_unnamed_frames(void **state)
{
    (void)state;
    hs_profile *p = two_stacks(0x5000, 0, 7);
    hs_store_profile sp;
    hs_stack_parts *parts;
    char err[256];
    assert_int_equal(hs_stack_decompose(p, NULL, &sp, &parts, err, sizeof err), 0);
    int seen_chain = 0, seen_lib = 0;
    for (size_t i = 0; i < sp.n_stacks; i++) {
        hs_stack_decoded d;
        assert_int_equal(hs_stack_decode(sp.stacks[i].data, sp.stacks[i].len, &d, err, sizeof err), 0);
        assert_int_equal(d.n_labels, 1); /* tid dropped, thread_name kept */
        assert_string_equal(d.labels[0].key, "thread_name");
        assert_string_equal(d.labels[0].str, "worker");
        if (d.n_frames == 5) { /* a <- b <- work (one location), work, main */
            seen_chain++;
            const char *names[] = {"a", "b", "work", "work", "main"};
            const int64_t lines[] = {3, 8, 30, 25, 9}, starts[] = {1, 7, 20, 20, 5};
            const bool inl[] = {true, true, false, false, false};
            for (int k = 0; k < 5; k++) {
                assert_string_equal(d.frames[k].function, names[k]);
                assert_int_equal(d.frames[k].line, lines[k]);
                assert_int_equal(d.frames[k].start_line, starts[k]);
                assert_int_equal(d.frames[k].inlined, inl[k]);
                assert_string_equal(d.frames[k].mapping, "/usr/bin/app");
            }
            assert_string_equal(d.frames[2].system_name, "_Z4workv");
            assert_string_equal(d.frames[0].file, "a.h");
        } else {
            assert_int_equal(d.n_frames, 3);
            seen_lib++;
            /* 0x8a60 into the mapping, which maps the file from 0x2000 */
            assert_string_equal(d.frames[0].function, "libz.so.1+0xaa60");
            assert_string_equal(d.frames[0].file, "");
            assert_string_equal(d.frames[0].mapping, "/usr/lib/libz.so.1");
            assert_int_equal(d.frames[0].line, 0);
        }
        hs_stack_decoded_free(&d);
    }
    assert_int_equal(seen_chain, 1);
    assert_int_equal(seen_lib, 1);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
}

/* A lineless frame whose mapping has a build ID keeps it, with its
 * mapping's offset and its own, in the system name, so the server can name
 * it later (server/names.c); without a build ID the system name stays "". */
static void test_unnamed_build_id(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    uint64_t m1 = hs_profile_add_mapping(p, 0x7f0000000000, 0x7f0000100000, 0x2000, "/usr/lib/libz.so.1", "ab12cd");
    uint64_t m2 = hs_profile_add_mapping(p, 0x7e0000000000, 0x7e0000100000, 0, "/usr/lib/libq.so", "");
    uint64_t l1 = hs_profile_add_location(p, m1, 0x7f0000008a60, NULL, 0);
    uint64_t l2 = hs_profile_add_location(p, m2, 0x7e0000000010, NULL, 0);
    uint64_t st[] = {l1, l2};
    int64_t v[] = {1};
    assert_int_equal(hs_profile_add_sample(p, st, 2, v, NULL, 0), 0);
    hs_store_profile sp;
    hs_stack_parts *parts;
    char err[256];
    assert_int_equal(hs_stack_decompose(p, NULL, &sp, &parts, err, sizeof err), 0);
    assert_int_equal(sp.n_stacks, 1);
    hs_stack_decoded d;
    assert_int_equal(hs_stack_decode(sp.stacks[0].data, sp.stacks[0].len, &d, err, sizeof err), 0);
    assert_int_equal(d.n_frames, 2);
    assert_string_equal(d.frames[0].function, "libz.so.1+0xaa60");
    assert_string_equal(d.frames[0].system_name, "build-id:ab12cd:2000:8a60");
    assert_string_equal(d.frames[1].function, "libq.so+0x10");
    assert_string_equal(d.frames[1].system_name, "");
    char bid[HS_BUILD_ID_MAX + 1];
    uint64_t off = 0, rel = 0;
    assert_true(hs_stack_unnamed_parse(d.frames[0].system_name, bid, &off, &rel));
    assert_string_equal(bid, "ab12cd");
    assert_int_equal(off, 0x2000);
    assert_int_equal(rel, 0x8a60);
    hs_stack_decoded_free(&d);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
    const char *bad[] = {"", "main", "build-id:", "build-id:AB:1:2", "build-id:ab::1", "build-id:ab:1:",
                         "build-id:ab:1:2x", "build-id:../x:1:2", "build-id:ab:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(hs_stack_unnamed_parse(bad[i], bid, &off, &rel));
    char out[64];
    assert_int_equal(hs_stack_unnamed_format(out, sizeof out, "../etc", 0, 0), -1);
    assert_int_equal(hs_stack_unnamed_format(out, sizeof out, "AB", 0, 0), -1);
    assert_int_equal(hs_stack_unnamed_format(out, sizeof out, "ab", 1, 2), 0);
    assert_string_equal(out, "build-id:ab:1:2");
}

/* build_profile over the decomposed stacks themselves */
static const void *lookup_parts(void *arg, uint64_t hash, size_t *len)
{
    const hs_store_profile *sp = arg;
    const hs_store_stack *s = find_stack(sp, hash);
    if (!s)
        return NULL;
    *len = s->len;
    return s->data;
}

static void test_build_profile(void **state)
{
    (void)state;
    hs_profile *p = two_stacks(0, 0, 1);
    hs_store_profile sp;
    hs_stack_parts *parts;
    char err[256];
    assert_int_equal(hs_stack_decompose(p, NULL, &sp, &parts, err, sizeof err), 0);
    hs_store_row rows[3];
    memset(rows, 0, sizeof rows);
    /* the libz stack first, so its mapping is met first */
    size_t order[2] = {0, 1};
    if (sp.samples[0].values[0] == 2) { /* the chain stack (2 samples) */
        order[0] = 1;
        order[1] = 0;
    }
    for (size_t i = 0; i < 2; i++) {
        rows[i].stack = sp.samples[order[i]].stack;
        memcpy(rows[i].values, sp.samples[order[i]].values, sizeof rows[i].values);
    }
    rows[2].stack = 0xdeadbeef; /* unknown: skipped, counted */
    hs_store_merged m = {.types = sp.types, .n_profiles = 1, .rows = rows, .n_rows = 3,
                         .min_start_ns = 1000, .max_end_ns = 5000};
    size_t missing = 0;
    hs_profile *q = hs_stack_build_profile(&m, lookup_parts, &sp, &missing, err, sizeof err);
    if (!q)
        fail_msg("%s", err);
    assert_int_equal(missing, 1);
    assert_int_equal(q->n_samples, 2);
    assert_int_equal(q->n_sample_types, 2);
    assert_string_equal(hs_profile_string(q, q->sample_types[1].type), "cpu");
    assert_string_equal(hs_profile_string(q, q->period_type.type), "cpu");
    assert_int_equal(q->period, 10000000);
    assert_int_equal(hs_profile_default_index(q), 1);
    assert_int_equal(q->time_nanos, 1000);
    assert_int_equal(q->duration_nanos, 4000);
    /* locations: chain (3 lines), work, main, libz: 4, shared by both samples */
    assert_int_equal(q->n_locations, 4);
    int chain = 0;
    for (size_t i = 0; i < q->n_locations; i++) {
        const hs_location *l = &q->locations[i];
        const hs_mapping *mp = hs_profile_mapping(q, l->mapping_id);
        assert_non_null(mp);
        if (l->n_lines == 3) {
            chain++;
            const char *names[] = {"a", "b", "work"};
            for (int k = 0; k < 3; k++) {
                const hs_function *f = hs_profile_function(q, l->lines[k].function_id);
                assert_string_equal(hs_profile_string(q, f->name), names[k]);
            }
            const hs_function *fw = hs_profile_function(q, l->lines[2].function_id);
            assert_string_equal(hs_profile_string(q, fw->filename), "work.c");
            assert_string_equal(hs_profile_string(q, fw->system_name), "_Z4workv");
            assert_int_equal(fw->start_line, 20);
            assert_int_equal(l->lines[2].line, 30);
            assert_string_equal(hs_profile_string(q, mp->filename), "/usr/bin/app");
        }
    }
    assert_int_equal(chain, 1);
    /* the main binary is the first mapping all the same */
    assert_int_equal(q->n_mappings, 2);
    assert_string_equal(hs_profile_string(q, q->mappings[0].filename), "/usr/bin/app");
    for (size_t i = 0; i < q->n_locations; i++) {
        const hs_location *l = &q->locations[i];
        const hs_function *f = hs_profile_function(q, l->lines[0].function_id);
        const char *want = strstr(hs_profile_string(q, f->name), "libz") ? "/usr/lib/libz.so.1" : "/usr/bin/app";
        assert_string_equal(hs_profile_string(q, hs_profile_mapping(q, l->mapping_id)->filename), want);
    }
    int64_t sum = 0;
    for (size_t i = 0; i < q->n_samples; i++) {
        sum += q->samples[i].values[1];
        assert_int_equal(q->samples[i].n_labels, 1);
        assert_string_equal(hs_profile_string(q, q->samples[i].labels[0].key), "thread_name");
    }
    assert_int_equal(sum, 60000000);
    hs_profile_free(q);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
}

static void test_options_and_limits(void **state)
{
    (void)state;
    char err[256] = "";
    hs_store_profile sp;
    hs_stack_parts *parts;
    hs_profile *p = two_stacks(0, 0, 1);
    /* dropping nothing keeps tid */
    hs_stack_options keep = {.drop_labels = (const char *const[]){"x"}, .n_drop_labels = 0};
    assert_int_equal(hs_stack_decompose(p, &keep, &sp, &parts, err, sizeof err), 0);
    hs_stack_decoded d;
    assert_int_equal(hs_stack_decode(sp.stacks[0].data, sp.stacks[0].len, &d, err, sizeof err), 0);
    assert_int_equal(d.n_labels, 2);
    hs_stack_decoded_free(&d);
    hs_stack_parts_free(parts);
    /* dropping thread_name too */
    hs_stack_options drop2 = {.drop_labels = (const char *const[]){"tid", "thread_name"}, .n_drop_labels = 2};
    assert_int_equal(hs_stack_decompose(p, &drop2, &sp, &parts, err, sizeof err), 0);
    assert_int_equal(hs_stack_decode(sp.stacks[0].data, sp.stacks[0].len, &d, err, sizeof err), 0);
    assert_int_equal(d.n_labels, 0);
    hs_stack_decoded_free(&d);
    hs_stack_parts_free(parts);
    /* depth counts inlined frames: the chain stack has 5 */
    hs_stack_options deep = {.max_depth = 4};
    assert_int_equal(hs_stack_decompose(p, &deep, &sp, &parts, err, sizeof err), -1);
    assert_non_null(strstr(err, "deeper than 4"));
    assert_null(parts);
    deep.max_depth = 5;
    assert_int_equal(hs_stack_decompose(p, &deep, &sp, &parts, err, sizeof err), 0);
    hs_stack_parts_free(parts);
    hs_stack_options few = {.max_samples = 3};
    assert_int_equal(hs_stack_decompose(p, &few, &sp, &parts, err, sizeof err), -1);
    assert_non_null(strstr(err, "samples"));
    hs_profile_free(p);

    /* too many sample types, and none */
    hs_profile *q = hs_profile_new();
    for (int i = 0; i < HS_STORE_MAX_VALUES + 1; i++) {
        char t[16];
        snprintf(t, sizeof t, "t%d", i);
        hs_profile_add_sample_type(q, t, "count");
    }
    assert_int_equal(hs_stack_decompose(q, NULL, &sp, &parts, err, sizeof err), -1);
    assert_non_null(strstr(err, "sample types"));
    hs_profile_free(q);
    q = hs_profile_new();
    assert_int_equal(hs_stack_decompose(q, NULL, &sp, &parts, err, sizeof err), -1);
    hs_profile_free(q);
    /* a location without a mapping */
    q = hs_profile_new();
    hs_profile_add_sample_type(q, "samples", "count");
    uint64_t loc = hs_profile_add_location(q, 0, 0x1234, NULL, 0);
    int64_t one = 1;
    hs_profile_add_sample(q, &loc, 1, &one, NULL, 0);
    assert_int_equal(hs_stack_decompose(q, NULL, &sp, &parts, err, sizeof err), 0);
    assert_int_equal(hs_stack_decode(sp.stacks[0].data, sp.stacks[0].len, &d, err, sizeof err), 0);
    assert_string_equal(d.frames[0].function, "[unknown]");
    hs_stack_decoded_free(&d);
    hs_stack_parts_free(parts);
    hs_profile_free(q);
}

static uint64_t gen_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_malformed_records(void **state)
{
    (void)state;
    hs_profile *p = two_stacks(0, 0, 1);
    hs_store_profile sp;
    hs_stack_parts *parts;
    char err[256];
    assert_int_equal(hs_stack_decompose(p, NULL, &sp, &parts, err, sizeof err), 0);
    const hs_store_stack *st = &sp.stacks[0];
    hs_stack_decoded d;
    /* every truncation is refused (and ASan watches the reads) */
    for (size_t n = 0; n < st->len; n++) {
        unsigned char *cut = malloc(n ? n : 1);
        memcpy(cut, st->data, n);
        assert_int_equal(hs_stack_decode(cut, n, &d, err, sizeof err), -1);
        free(cut);
    }
    unsigned char *b = malloc(st->len + 1);
    memcpy(b, st->data, st->len);
    b[st->len] = 0;
    assert_int_equal(hs_stack_decode(b, st->len + 1, &d, err, sizeof err), -1); /* trailing byte */
    b[0] = 2;
    assert_int_equal(hs_stack_decode(b, st->len, &d, err, sizeof err), -1); /* unknown version */
    assert_non_null(strstr(err, "version"));
    free(b);
    /* random corruption: refused or decoded, never a crash or a bad read */
    uint64_t rng = 12345;
    unsigned char *mut = malloc(st->len);
    for (int it = 0; it < 3000; it++) {
        memcpy(mut, st->data, st->len);
        int flips = 1 + (int)(gen_next(&rng) % 3);
        for (int k = 0; k < flips; k++)
            mut[gen_next(&rng) % st->len] = (unsigned char)gen_next(&rng);
        if (hs_stack_decode(mut, st->len, &d, err, sizeof err) == 0) {
            for (size_t k = 0; k < d.n_frames; k++)
                assert_non_null(d.frames[k].function);
            hs_stack_decoded_free(&d);
        }
    }
    free(mut);
    /* decode then encode gives the same bytes */
    assert_int_equal(hs_stack_decode(st->data, st->len, &d, err, sizeof err), 0);
    void *re;
    size_t rl;
    assert_int_equal(hs_stack_encode(d.frames, d.n_frames, d.labels, d.n_labels, &re, &rl, err, sizeof err), 0);
    assert_int_equal(rl, st->len);
    assert_memory_equal(re, st->data, rl);
    free(re);
    hs_stack_decoded_free(&d);
    hs_stack_parts_free(parts);
    hs_profile_free(p);
}

static void test_profile_id(void **state)
{
    (void)state;
    hs_store_label lb[1] = {{"instance", "a"}};
    hs_store_profile m = {.service = "svc", .type = "cpu", .version = "1", .labels = lb, .n_labels = 1,
                          .start_ns = 5, .duration_ns = 10};
    char a[33], b[33], c[33], d[33];
    hs_stack_profile_id("body", 4, &m, a);
    hs_stack_profile_id("body", 4, &m, b);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_equal(a, b);
    hs_stack_profile_id("bodz", 4, &m, c);
    assert_string_not_equal(a, c);
    lb[0].value = "b";
    hs_stack_profile_id("body", 4, &m, d);
    assert_string_not_equal(a, d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_is_xxh3),
        cmocka_unit_test(test_record_bytes),
        cmocka_unit_test(test_decompose_deterministic),
        cmocka_unit_test(test_inline_and_unnamed_frames),
        cmocka_unit_test(test_unnamed_build_id),
        cmocka_unit_test(test_build_profile),
        cmocka_unit_test(test_options_and_limits),
        cmocka_unit_test(test_malformed_records),
        cmocka_unit_test(test_profile_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
