/* test_profile_codec.c — the profile model and the pprof codec: lossless
 * round trips (gzipped and raw), arbitrary ids, validation of every
 * reference, bounded decompression, a few thousand corrupt, random and
 * mutated inputs that must each give NULL or a consistent profile, and the
 * direct wire decoder against protobuf-c's generated unpacker on the same
 * mutated bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "profile/profile.h"
#include "profile/profile_internal.h"

/* ---- helpers ---- */

static hs_profile *build_sample_profile(void)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    assert_int_equal(hs_profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
    assert_int_equal(hs_profile_add_sample_type(p, "alloc_space", "bytes"), 2);
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    hs_profile_add_comment(p, "first comment");
    hs_profile_add_comment(p, "#hidden comment");
    p->default_sample_type = hs_profile_str(p, "cpu");
    p->drop_frames = hs_profile_str(p, "runtime\\..*");
    p->keep_frames = hs_profile_str(p, "main");
    p->time_nanos = 1700000000123456789LL;
    p->duration_nanos = 1500000000;

    uint64_t m1 = hs_profile_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/bin/prog", "abcdef");
    uint64_t m2 = hs_profile_add_mapping(p, 0x7f0000, 0x7f8000, 0, "/lib/libc.so.6", "");
    assert_true(m1 == 1 && m2 == 2);
    p->mappings[0].has_functions = p->mappings[0].has_filenames = true;
    p->mappings[0].has_line_numbers = p->mappings[0].has_inline_frames = true;

    uint64_t fmain = hs_profile_add_function(p, "main", "main", "prog.c", 10);
    uint64_t fwork = hs_profile_add_function(p, "work", "_Z4workv", "prog.c", 20);
    uint64_t finl = hs_profile_add_function(p, "inlined", "inlined", "util.h", 5);
    uint64_t fqs = hs_profile_add_function(p, "qsort", "", "", 0);
    assert_int_equal(hs_profile_add_function(p, "work", "_Z4workv", "prog.c", 20), fwork);

    hs_line l_main[] = {{fmain, 12, 3}};
    hs_line l_work[] = {{finl, 7, 0}, {fwork, 25, 9}}; /* inlined first */
    hs_line l_qs[] = {{fqs, 0, 0}};
    uint64_t lmain = hs_profile_add_location(p, m1, 0x401000, l_main, 1);
    uint64_t lwork = hs_profile_add_location(p, m1, 0x401100, l_work, 2);
    uint64_t lqs = hs_profile_add_location(p, m2, 0x7f1000, l_qs, 1);
    uint64_t lraw = hs_profile_add_location(p, 0, 0xdeadbeef, NULL, 0);
    p->locations[3].is_folded = true;

    uint64_t st1[] = {lwork, lmain};
    uint64_t st2[] = {lqs, lwork, lmain};
    uint64_t st3[] = {lraw};
    int64_t v1[] = {3, 30000000, 0}, v2[] = {1, 10000000, 4096}, v3[] = {-2, 5, 7};
    hs_label labels[] = {{hs_profile_str(p, "thread"), hs_profile_str(p, "worker-1"), 0, 0},
                         {hs_profile_str(p, "bytes"), 0, 4096, hs_profile_str(p, "bytes")}};
    assert_int_equal(hs_profile_add_sample(p, st1, 2, v1, labels, 2), 0);
    assert_int_equal(hs_profile_add_sample(p, st2, 3, v2, NULL, 0), 0);
    assert_int_equal(hs_profile_add_sample(p, st3, 1, v3, labels, 1), 0);
    assert_int_equal(hs_profile_add_sample(p, NULL, 0, v1, NULL, 0), 0);
    return p;
}

static void *encode(const hs_profile *p, size_t *len)
{
    void *buf = NULL;
    char err[256] = "";
    assert_int_equal(hs_profile_encode(p, &buf, len, err, sizeof err), 0);
    assert_non_null(buf);
    return buf;
}

static unsigned char *gunzip(const void *in, size_t len, size_t *outlen)
{
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    size_t cap = len * 20 + 1024;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    *outlen = cap - z.avail_out;
    inflateEnd(&z);
    return out;
}

static hs_profile *decode_ok(const void *buf, size_t len)
{
    char err[256] = "";
    hs_profile *p = hs_profile_decode(buf, len, err, sizeof err);
    if (!p)
        fail_msg("decode failed: %s", err);
    return p;
}

static void expect_decode_error(const void *buf, size_t len, const char *needle)
{
    char err[256] = "";
    hs_profile *p = hs_profile_decode(buf, len, err, sizeof err);
    if (p) {
        hs_profile_free(p);
        fail_msg("decode of bad input succeeded (expected '%s')", needle);
    }
    if (!strstr(err, needle))
        fail_msg("error '%s' does not mention '%s'", err, needle);
    assert_null(strchr(err, '\n'));
}

static void assert_str_idx_eq(const hs_profile *a, int64_t ia, const hs_profile *b, int64_t ib)
{
    assert_string_equal(hs_profile_string(a, ia), hs_profile_string(b, ib));
}

static void assert_samples_equal(const hs_profile *a, const hs_profile *b)
{
    assert_int_equal(a->n_samples, b->n_samples);
    for (size_t i = 0; i < a->n_samples; i++) {
        const hs_sample *x = &a->samples[i], *y = &b->samples[i];
        assert_int_equal(x->n_locations, y->n_locations);
        for (size_t j = 0; j < x->n_locations; j++)
            assert_int_equal(x->location_ids[j], y->location_ids[j]);
        for (size_t j = 0; j < a->n_sample_types; j++)
            assert_int_equal(x->values[j], y->values[j]);
        assert_int_equal(x->n_labels, y->n_labels);
        for (size_t j = 0; j < x->n_labels; j++) {
            assert_str_idx_eq(a, x->labels[j].key, b, y->labels[j].key);
            assert_str_idx_eq(a, x->labels[j].str, b, y->labels[j].str);
            assert_int_equal(x->labels[j].num, y->labels[j].num);
            assert_str_idx_eq(a, x->labels[j].num_unit, b, y->labels[j].num_unit);
        }
    }
}

static void assert_tables_equal(const hs_profile *a, const hs_profile *b)
{
    assert_int_equal(a->n_mappings, b->n_mappings);
    for (size_t i = 0; i < a->n_mappings; i++) {
        const hs_mapping *x = &a->mappings[i], *y = &b->mappings[i];
        assert_true(x->id == y->id && x->memory_start == y->memory_start &&
                    x->memory_limit == y->memory_limit && x->file_offset == y->file_offset);
        assert_str_idx_eq(a, x->filename, b, y->filename);
        assert_str_idx_eq(a, x->build_id, b, y->build_id);
        assert_true(x->has_functions == y->has_functions && x->has_filenames == y->has_filenames &&
                    x->has_line_numbers == y->has_line_numbers &&
                    x->has_inline_frames == y->has_inline_frames);
    }
    assert_int_equal(a->n_functions, b->n_functions);
    for (size_t i = 0; i < a->n_functions; i++) {
        const hs_function *x = &a->functions[i], *y = &b->functions[i];
        assert_int_equal(x->id, y->id);
        assert_str_idx_eq(a, x->name, b, y->name);
        assert_str_idx_eq(a, x->system_name, b, y->system_name);
        assert_str_idx_eq(a, x->filename, b, y->filename);
        assert_int_equal(x->start_line, y->start_line);
    }
    assert_int_equal(a->n_locations, b->n_locations);
    for (size_t i = 0; i < a->n_locations; i++) {
        const hs_location *x = &a->locations[i], *y = &b->locations[i];
        assert_true(x->id == y->id && x->mapping_id == y->mapping_id && x->address == y->address);
        assert_int_equal(x->is_folded, y->is_folded);
        assert_int_equal(x->n_lines, y->n_lines);
        for (size_t j = 0; j < x->n_lines; j++)
            assert_true(x->lines[j].function_id == y->lines[j].function_id &&
                        x->lines[j].line == y->lines[j].line &&
                        x->lines[j].column == y->lines[j].column);
    }
}

/* Everything, including the exact string table. */
static void assert_profiles_equal(const hs_profile *a, const hs_profile *b)
{
    assert_int_equal(a->n_strings, b->n_strings);
    for (size_t i = 0; i < a->n_strings; i++)
        assert_string_equal(a->strings[i], b->strings[i]);
    assert_int_equal(a->n_sample_types, b->n_sample_types);
    for (size_t i = 0; i < a->n_sample_types; i++)
        assert_true(a->sample_types[i].type == b->sample_types[i].type &&
                    a->sample_types[i].unit == b->sample_types[i].unit);
    assert_true(a->period_type.type == b->period_type.type &&
                a->period_type.unit == b->period_type.unit && a->period == b->period);
    assert_int_equal(a->n_comments, b->n_comments);
    for (size_t i = 0; i < a->n_comments; i++)
        assert_int_equal(a->comments[i], b->comments[i]);
    assert_int_equal(a->drop_frames, b->drop_frames);
    assert_int_equal(a->keep_frames, b->keep_frames);
    assert_int_equal(a->time_nanos, b->time_nanos);
    assert_int_equal(a->duration_nanos, b->duration_nanos);
    assert_int_equal(a->default_sample_type, b->default_sample_type);
    assert_tables_equal(a, b);
    assert_samples_equal(a, b);
}

/* A decoded profile must be internally consistent. */
static void assert_consistent(const hs_profile *p)
{
    assert_true(p->n_strings >= 1);
    assert_string_equal(p->strings[0], "");
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t j = 0; j < p->samples[i].n_locations; j++)
            assert_non_null(hs_profile_location(p, p->samples[i].location_ids[j]));
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        assert_ptr_equal(hs_profile_location(p, l->id), l);
        for (size_t j = 0; j < l->n_lines; j++)
            assert_non_null(hs_profile_function(p, l->lines[j].function_id));
        if (l->mapping_id)
            assert_non_null(hs_profile_mapping(p, l->mapping_id));
    }
    for (size_t i = 0; i < p->n_functions; i++)
        assert_true((uint64_t)p->functions[i].name < p->n_strings);
}

/* Appending protobuf fields to an encoded message adds to it (proto semantics). */
static unsigned char *append_bytes(const unsigned char *raw, size_t len, const unsigned char *extra,
                                   size_t elen)
{
    unsigned char *b = malloc(len + elen);
    assert_non_null(b);
    memcpy(b, raw, len);
    memcpy(b + len, extra, elen);
    return b;
}

/* ---- tests ---- */

static void test_builder(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    assert_int_equal(hs_profile_str(p, "main"), hs_profile_str(p, "main"));
    assert_int_equal(hs_profile_str(p, ""), 0);
    assert_string_equal(hs_profile_string(p, -1), "");
    assert_string_equal(hs_profile_string(p, 1 << 30), "");
    assert_int_equal(p->n_functions, 4);
    assert_int_equal(hs_profile_sample_index(p, "alloc_space"), 2);
    assert_int_equal(hs_profile_sample_index(p, "1"), 1);
    assert_int_equal(hs_profile_sample_index(p, "3"), -1);
    assert_int_equal(hs_profile_sample_index(p, "nope"), -1);
    assert_int_equal(hs_profile_default_index(p), 1);
    p->default_sample_type = 0;
    assert_int_equal(hs_profile_default_index(p), 2);
    assert_null(hs_profile_location(p, 0));
    assert_null(hs_profile_location(p, 99));
    assert_int_equal(hs_profile_location(p, 2)->n_lines, 2);
    hs_line nl[] = {{1, 99, 0}};
    assert_int_equal(hs_profile_set_location_lines(p, 4, nl, 1), 0);
    assert_int_equal(hs_profile_location(p, 4)->lines[0].line, 99);
    assert_int_equal(hs_profile_set_location_lines(p, 77, nl, 1), -1);
    assert_int_equal(hs_profile_add_sample_type(p, "late", "count"), -1);
    hs_profile_free(p);
}

static void test_round_trip_gzip(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    size_t len;
    unsigned char *buf = encode(p, &len);
    assert_true(len > 2 && buf[0] == 0x1f && buf[1] == 0x8b);
    hs_profile *q = decode_ok(buf, len);
    assert_profiles_equal(p, q);
    assert_consistent(q);
    /* and again: decode(encode(decode(x))) is stable */
    size_t len2;
    void *buf2 = encode(q, &len2);
    hs_profile *r = decode_ok(buf2, len2);
    assert_profiles_equal(p, r);
    free(buf);
    free(buf2);
    hs_profile_free(p);
    hs_profile_free(q);
    hs_profile_free(r);
}

static void test_round_trip_raw(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    size_t len, rawlen;
    void *buf = encode(p, &len);
    unsigned char *raw = gunzip(buf, len, &rawlen);
    hs_profile *q = decode_ok(raw, rawlen);
    assert_profiles_equal(p, q);
    assert_true(hs_profile_locations_dense(q));
    assert_ptr_equal(hs_profile_location_at(q, 4, true), &q->locations[3]);
    assert_null(hs_profile_location_at(q, 0, true));
    assert_null(hs_profile_location_at(q, 5, true));
    free(buf);
    free(raw);
    hs_profile_free(p);
    hs_profile_free(q);
}

static hs_profile *build_many_samples(size_t n);

/* A profile that fits one 4 KiB block as it is is stored in the gzip
 * (no Huffman trees to build), a larger one compressed; both read back. */
static void test_small_stored_large_compressed(void **state)
{
    (void)state;
    hs_profile *small = build_sample_profile(), *large = build_many_samples(3000);
    size_t slen, srawlen, llen, lrawlen;
    unsigned char *sbuf = encode(small, &slen), *lbuf = encode(large, &llen);
    unsigned char *sraw = gunzip(sbuf, slen, &srawlen), *lraw = gunzip(lbuf, llen, &lrawlen);
    assert_true(srawlen + 64 <= 4096);
    assert_true(slen > srawlen && slen <= 4096);
    assert_memory_equal(sraw, sbuf + slen - 8 - srawlen, srawlen); /* the bytes as they are, before the trailer */
    assert_true(lrawlen > 4096);
    assert_true(llen < lrawlen / 2);
    hs_profile *q = decode_ok(sbuf, slen), *r = decode_ok(lbuf, llen);
    assert_profiles_equal(small, q);
    assert_profiles_equal(large, r);
    free(sbuf);
    free(lbuf);
    free(sraw);
    free(lraw);
    hs_profile_free(small);
    hs_profile_free(large);
    hs_profile_free(q);
    hs_profile_free(r);
}

/* Ids chosen by another producer: sparse, huge, out of order. */
static void test_arbitrary_ids(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    const uint64_t k = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < p->n_locations; i++)
        p->locations[i].id *= k;
    for (size_t i = 0; i < p->n_functions; i++)
        p->functions[i].id = UINT64_MAX - p->functions[i].id;
    for (size_t i = 0; i < p->n_mappings; i++)
        p->mappings[i].id += 1000;
    for (size_t i = 0; i < p->n_locations; i++) {
        hs_location *l = &p->locations[i];
        if (l->mapping_id)
            l->mapping_id += 1000;
        for (size_t j = 0; j < l->n_lines; j++)
            l->lines[j].function_id = UINT64_MAX - l->lines[j].function_id;
    }
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t j = 0; j < p->samples[i].n_locations; j++)
            p->samples[i].location_ids[j] *= k;
    size_t len;
    void *buf = encode(p, &len);
    hs_profile *q = decode_ok(buf, len);
    assert_profiles_equal(p, q);
    assert_consistent(q);
    assert_ptr_equal(hs_profile_location(q, 2 * k), &q->locations[1]);
    assert_ptr_equal(hs_profile_function(q, UINT64_MAX - 3), &q->functions[2]);
    assert_ptr_equal(hs_profile_mapping(q, 1002), &q->mappings[1]);
    assert_null(hs_profile_location(q, 2));
    assert_false(hs_profile_locations_dense(q));
    assert_ptr_equal(hs_profile_location_at(q, 2 * k, false), &q->locations[1]);
    assert_null(hs_profile_location_at(q, 2, false));
    /* adding to a decoded profile with sparse ids keeps lookups working */
    hs_line ln[] = {{UINT64_MAX - 1, 1, 0}};
    uint64_t nid = hs_profile_add_location(q, 1001, 0x1234, ln, 1);
    assert_true(nid != 0);
    assert_int_equal(hs_profile_location(q, nid)->address, 0x1234);
    assert_ptr_equal(hs_profile_location(q, 3 * k), &q->locations[2]);
    uint64_t fid = hs_profile_add_function(q, "brand_new", "", "", 0);
    assert_non_null(hs_profile_function(q, fid));
    assert_int_equal(hs_profile_add_function(q, "main", "main", "prog.c", 10), UINT64_MAX - 1);
    free(buf);
    hs_profile_free(p);
    hs_profile_free(q);
}

/* Encode p after `mutate` broke it; decoding must fail naming the problem. */
static void expect_bad_model(void (*mutate)(hs_profile *), const char *needle)
{
    hs_profile *p = build_sample_profile();
    mutate(p);
    size_t len;
    void *buf = encode(p, &len);
    expect_decode_error(buf, len, needle);
    free(buf);
    hs_profile_free(p);
}

static void bad_sample_loc(hs_profile *p) { p->samples[1].location_ids[0] = 424242; }
/* with ids 1..n a reference is checked by its range: both ends */
static void bad_sample_loc0(hs_profile *p) { p->samples[1].location_ids[1] = 0; }
static void bad_sample_loc_past(hs_profile *p) { p->samples[0].location_ids[0] = p->n_locations + 1; }
/* sparse ids (10, 20, ...): a reference within 1..n that no location has */
static void bad_sample_loc_sparse(hs_profile *p)
{
    for (size_t i = 0; i < p->n_locations; i++)
        p->locations[i].id *= 10;
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t j = 0; j < p->samples[i].n_locations; j++)
            p->samples[i].location_ids[j] *= 10;
    p->samples[1].location_ids[2] = 2;
}
static void bad_line_func(hs_profile *p) { p->locations[1].lines[0].function_id = 77; }
static void bad_loc_mapping(hs_profile *p) { p->locations[0].mapping_id = 9; }
static void bad_func_name(hs_profile *p) { p->functions[0].name = (int64_t)p->n_strings; }
static void bad_func_file(hs_profile *p) { p->functions[1].filename = -1; }
static void bad_label(hs_profile *p) { p->samples[0].labels[0].str = 1 << 20; }
static void bad_sample_type(hs_profile *p) { p->sample_types[1].unit = 5000; }
static void bad_mapping_file(hs_profile *p) { p->mappings[1].filename = 5000; }
static void bad_comment(hs_profile *p) { p->comments[0] = 5000; }
static void bad_default_type(hs_profile *p) { p->default_sample_type = 5000; }
static void bad_period_type(hs_profile *p) { p->period_type.type = 5000; }
static void dup_location_id(hs_profile *p) { p->locations[2].id = p->locations[0].id; }
static void zero_function_id(hs_profile *p) { p->functions[3].id = 0; }
static void dup_mapping_id(hs_profile *p) { p->mappings[1].id = 1; }
static void nonempty_string0(hs_profile *p) { p->strings[0] = "oops"; }

static void test_bad_references(void **state)
{
    (void)state;
    expect_bad_model(bad_sample_loc, "unknown location");
    expect_bad_model(bad_sample_loc0, "unknown location 0");
    expect_bad_model(bad_sample_loc_past, "unknown location 5");
    expect_bad_model(bad_sample_loc_sparse, "unknown location 2");
    expect_bad_model(bad_line_func, "unknown function");
    expect_bad_model(bad_loc_mapping, "unknown mapping");
    expect_bad_model(bad_func_name, "string index");
    expect_bad_model(bad_func_file, "string index");
    expect_bad_model(bad_label, "string index");
    expect_bad_model(bad_sample_type, "string index");
    expect_bad_model(bad_mapping_file, "string index");
    expect_bad_model(bad_comment, "string index");
    expect_bad_model(bad_default_type, "string index");
    expect_bad_model(bad_period_type, "string index");
    expect_bad_model(dup_location_id, "duplicate location id");
    expect_bad_model(zero_function_id, "function id");
    expect_bad_model(dup_mapping_id, "duplicate mapping id");
    expect_bad_model(nonempty_string0, "string_table[0]");
}

static void test_value_count_mismatch(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    size_t len, rawlen;
    void *buf = encode(p, &len);
    unsigned char *raw = gunzip(buf, len, &rawlen);
    /* one more sample_type (field 1): every sample now has too few values */
    static const unsigned char extra_type[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x01};
    unsigned char *b = append_bytes(raw, rawlen, extra_type, sizeof extra_type);
    expect_decode_error(b, rawlen + sizeof extra_type, "values, expected 4");
    free(b);
    /* a sample (field 2) with one value only */
    static const unsigned char short_sample[] = {0x12, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x05};
    b = append_bytes(raw, rawlen, short_sample, sizeof short_sample);
    expect_decode_error(b, rawlen + sizeof short_sample, "has 1 values, expected 3");
    free(b);
    /* a well-formed extra sample decodes */
    static const unsigned char good_sample[] = {0x12, 0x08, 0x0a, 0x01, 0x01,
                                                0x12, 0x03, 0x01, 0x02, 0x03};
    b = append_bytes(raw, rawlen, good_sample, sizeof good_sample);
    hs_profile *q = decode_ok(b, rawlen + sizeof good_sample);
    assert_int_equal(q->n_samples, p->n_samples + 1);
    assert_int_equal(q->samples[p->n_samples].values[2], 3);
    hs_profile_free(q);
    free(b);
    free(buf);
    free(raw);
    hs_profile_free(p);
}

static void test_empty_and_minimal(void **state)
{
    (void)state;
    expect_decode_error("", 0, "empty");
    /* an empty string table is tolerated (strings[0] is "") */
    static const unsigned char only_time[] = {0x48, 0x05};
    hs_profile *p = decode_ok(only_time, sizeof only_time);
    assert_int_equal(p->time_nanos, 5);
    assert_int_equal(p->n_strings, 1);
    hs_profile_free(p);
    /* a new profile round-trips */
    p = hs_profile_new();
    size_t len;
    void *buf = encode(p, &len);
    hs_profile *q = decode_ok(buf, len);
    assert_profiles_equal(p, q);
    free(buf);
    hs_profile_free(p);
    hs_profile_free(q);
}

static void test_truncated(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    size_t len, rawlen;
    unsigned char *buf = encode(p, &len);
    unsigned char *raw = gunzip(buf, len, &rawlen);
    char err[256];
    for (size_t n = 1; n < len; n++) {
        err[0] = 0;
        hs_profile *q = hs_profile_decode(buf, n, err, sizeof err);
        assert_null(q); /* gzip trailer missing: always an error */
        assert_true(err[0] != 0);
    }
    for (size_t n = 0; n < rawlen; n++) {
        hs_profile *q = hs_profile_decode(raw, n, err, sizeof err);
        if (q) {
            assert_consistent(q);
            hs_profile_free(q);
        }
    }
    free(buf);
    free(raw);
    hs_profile_free(p);
}

static uint64_t rng_state = 0x1234567887654321ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fuzz_one(const unsigned char *b, size_t n, size_t *ok)
{
    char err[256] = "";
    hs_profile *q = hs_profile_decode(b, n, err, sizeof err);
    if (q) {
        assert_consistent(q);
        size_t elen;
        void *e = encode(q, &elen); /* whatever decodes also re-encodes */
        free(e);
        hs_profile_free(q);
        (*ok)++;
    } else {
        assert_true(err[0] != 0);
        assert_null(strchr(err, '\n'));
    }
}

static void test_fuzz_random_and_mutated(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    size_t len, rawlen, ok = 0;
    unsigned char *gz = encode(p, &len);
    unsigned char *raw = gunzip(gz, len, &rawlen);
    unsigned char *b = malloc(rawlen + len + 4096);
    assert_non_null(b);
    for (int i = 0; i < 2000; i++) { /* random bytes, with and without gzip magic */
        size_t n = rng() % 512;
        for (size_t j = 0; j < n; j++)
            b[j] = (unsigned char)rng();
        if (i % 4 == 0 && n >= 2) {
            b[0] = 0x1f;
            b[1] = 0x8b;
        }
        fuzz_one(b, n, &ok);
    }
    for (int i = 0; i < 3000; i++) { /* valid files with a few bytes changed */
        const unsigned char *src = i % 3 == 0 ? gz : raw;
        size_t n = i % 3 == 0 ? len : rawlen;
        memcpy(b, src, n);
        int flips = 1 + (int)(rng() % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = rng() % n;
            switch (rng() % 3) {
            case 0: b[at] ^= (unsigned char)(1u << (rng() % 8)); break;
            case 1: b[at] = (unsigned char)rng(); break;
            default: b[at] = (unsigned char)(rng() % 2 ? 0xff : 0x00); break;
            }
        }
        if (rng() % 4 == 0)
            n -= rng() % n;
        fuzz_one(b, n, &ok);
    }
    assert_true(ok > 0); /* some mutations keep the file valid */
    free(b);
    free(gz);
    free(raw);
    hs_profile_free(p);
}

/* A profile whose samples take every path of the decoder: label-less ones
 * (one packed id run, one packed value run: the fast path) over a few
 * stacks that repeat, labelled ones, empty ones; ids above 127, so their
 * varints take two bytes. */
static hs_profile *build_many_samples(size_t n)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    assert_int_equal(hs_profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
    uint64_t m = hs_profile_add_mapping(p, 0x400000, 0x500000, 0, "/bin/x", "");
    enum { NLOC = 300 };
    uint64_t loc[NLOC];
    for (size_t i = 0; i < NLOC; i++) {
        char name[32];
        snprintf(name, sizeof name, "fn%zu", i % 170);
        hs_line ln = {hs_profile_add_function(p, name, name, "x.c", (int64_t)(i % 170)), (int64_t)i, 0};
        loc[i] = hs_profile_add_location(p, m, 0x400000 + i * 4, &ln, 1);
        assert_true(loc[i] != 0);
    }
    hs_label lab = {hs_profile_str(p, "thread"), hs_profile_str(p, "w1"), 0, 0};
    for (size_t s = 0; s < n; s++) {
        uint64_t st[8];
        size_t shape = s % 5, depth = s % 7 == 6 ? 0 : 1 + (shape * 3) % 8;
        for (size_t k = 0; k < depth; k++)
            st[k] = loc[(shape * 61 + k * 37 + 200) % NLOC];
        int64_t v[2] = {(int64_t)(s % 3), (int64_t)(s * 1000003)};
        assert_int_equal(hs_profile_add_sample(p, st, depth, v, s % 4 == 3 ? &lab : NULL, s % 4 == 3), 0);
    }
    return p;
}

/* Our decoder accepted b[0..n): protobuf-c must too, and read the same. */
static void assert_same_as_protobuf_c(const unsigned char *b, size_t n, const hs_profile *q)
{
    Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, n, b);
    if (!m)
        fail_msg("decoded %zu bytes that protobuf-c rejects", n);
    assert_int_equal(q->n_samples, m->n_sample);
    for (size_t i = 0; i < q->n_samples; i++) {
        const hs_sample *s = &q->samples[i];
        const Perftools__Profiles__Sample *ms = m->sample[i];
        assert_int_equal(s->n_locations, ms->n_location_id);
        for (size_t k = 0; k < s->n_locations; k++)
            assert_int_equal(s->location_ids[k], ms->location_id[k]);
        assert_int_equal(q->n_sample_types, ms->n_value);
        for (size_t k = 0; k < ms->n_value; k++)
            assert_int_equal(s->values[k], ms->value[k]);
        assert_int_equal(s->n_labels, ms->n_label);
        for (size_t k = 0; k < s->n_labels; k++)
            assert_true(s->labels[k].key == ms->label[k]->key && s->labels[k].str == ms->label[k]->str &&
                        s->labels[k].num == ms->label[k]->num &&
                        s->labels[k].num_unit == ms->label[k]->num_unit);
    }
    assert_int_equal(q->n_locations, m->n_location);
    for (size_t i = 0; i < q->n_locations; i++) {
        const hs_location *l = &q->locations[i];
        const Perftools__Profiles__Location *ml = m->location[i];
        assert_true(l->id == ml->id && l->mapping_id == ml->mapping_id && l->address == ml->address &&
                    l->is_folded == (ml->is_folded != 0));
        assert_int_equal(l->n_lines, ml->n_line);
        for (size_t k = 0; k < l->n_lines; k++)
            assert_true(l->lines[k].function_id == ml->line[k]->function_id &&
                        l->lines[k].line == ml->line[k]->line && l->lines[k].column == ml->line[k]->column);
    }
    assert_int_equal(q->n_functions, m->n_function);
    for (size_t i = 0; i < q->n_functions; i++)
        assert_true(q->functions[i].id == m->function[i]->id && q->functions[i].name == m->function[i]->name &&
                    q->functions[i].filename == m->function[i]->filename &&
                    q->functions[i].start_line == m->function[i]->start_line);
    assert_int_equal(q->n_mappings, m->n_mapping);
    for (size_t i = 0; i < q->n_mappings; i++)
        assert_true(q->mappings[i].id == m->mapping[i]->id &&
                    q->mappings[i].memory_start == m->mapping[i]->memory_start &&
                    q->mappings[i].filename == m->mapping[i]->filename);
    assert_int_equal(q->n_strings, m->n_string_table);
    for (size_t i = 1; i < q->n_strings; i++)
        assert_string_equal(q->strings[i], m->string_table[i]);
    perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_decode_vs_protobuf_c(void **state)
{
    (void)state;
    hs_profile *p = build_many_samples(400);
    size_t len, rawlen, ok = 0;
    unsigned char *gz = encode(p, &len);
    unsigned char *raw = gunzip(gz, len, &rawlen);
    unsigned char *b = malloc(rawlen);
    assert_non_null(b);
    char err[256];
    for (int i = 0; i < 6000; i++) {
        size_t n = rawlen;
        memcpy(b, raw, n);
        int flips = i == 0 ? 0 : 1 + (int)(rng() % 3);
        for (int f = 0; f < flips; f++) {
            size_t at = rng() % n;
            switch (rng() % 4) {
            case 0: b[at] ^= (unsigned char)(1u << (rng() % 8)); break;
            case 1: b[at] = (unsigned char)rng(); break;
            case 2: b[at] = (unsigned char)(b[at] | 0x80); break; /* a varint runs on */
            default: b[at] = (unsigned char)(b[at] & 0x7f); break; /* a varint stops early */
            }
        }
        if (rng() % 8 == 0)
            n -= rng() % n;
        hs_profile *q = hs_profile_decode(b, n, err, sizeof err);
        if (!q)
            continue;
        assert_same_as_protobuf_c(b, n, q);
        hs_profile_free(q);
        ok++;
    }
    assert_true(ok > 100); /* most single changes of a value keep the file valid */
    free(b);
    free(gz);
    free(raw);
    hs_profile_free(p);
}

static uint64_t read_varint(const unsigned char *b, size_t *i)
{
    uint64_t v = 0;
    for (unsigned sh = 0;; sh += 7) {
        unsigned char c = b[(*i)++];
        v |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80))
            return v;
    }
}

/* The top-level fields of raw[0..n) that are not samples, then the samples:
 * the same profile (repeated fields keep their order) with the other part
 * of a two-thread decode first. */
static unsigned char *rest_first(const unsigned char *raw, size_t n)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    size_t w = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n;) {
            size_t at = i;
            uint64_t tag = read_varint(raw, &i), v = read_varint(raw, &i); /* value or length */
            if ((tag & 7) == 2)
                i += v;
            if (((tag >> 3) == 2) == (pass == 1)) {
                memcpy(b + w, raw + at, i - at);
                w += i - at;
            }
        }
    assert_int_equal(w, n);
    return b;
}

/* Pass 2 on two threads gives what one gives, error messages included,
 * on thousands of mutated files, with the samples first (as encoders write
 * them) or last. */
static void test_two_threads_as_one(void **state)
{
    (void)state;
    hs_profile *p = build_many_samples(400);
    size_t len, rawlen, ok = 0, failed = 0;
    unsigned char *gz = encode(p, &len);
    unsigned char *raw = gunzip(gz, len, &rawlen);
    unsigned char *alt = rest_first(raw, rawlen);
    assert_memory_not_equal(alt, raw, rawlen);
    unsigned char *b = malloc(rawlen);
    assert_non_null(b);
    char e1[256], e2[256];
    for (int i = 0; i < 6000; i++) {
        size_t n = rawlen;
        memcpy(b, i % 2 ? alt : raw, n);
        int flips = i < 2 ? 0 : 1 + (int)(rng() % 3);
        for (int f = 0; f < flips; f++) {
            size_t at = rng() % n;
            switch (rng() % 4) {
            case 0: b[at] ^= (unsigned char)(1u << (rng() % 8)); break;
            case 1: b[at] = (unsigned char)rng(); break;
            case 2: b[at] = (unsigned char)(b[at] | 0x80); break;
            default: b[at] = (unsigned char)(b[at] & 0x7f); break;
            }
        }
        if (rng() % 8 == 0)
            n -= rng() % n;
        e1[0] = e2[0] = 0;
        hs_profile *q1 = hs_profile_decode_pb_threads(b, n, false, 1, e1, sizeof e1);
        hs_profile *q2 = hs_profile_decode_pb_threads(b, n, false, 2, e2, sizeof e2);
        assert_true((q1 == NULL) == (q2 == NULL));
        if (!q1) {
            assert_string_equal(e1, e2);
            failed++;
            continue;
        }
        assert_profiles_equal(q1, q2);
        size_t c1, c2;
        for (size_t k = 0; k < q1->n_samples; k++)
            assert_int_equal(hs_profile_sample_stack(q1, k, &c1), hs_profile_sample_stack(q2, k, &c2));
        hs_profile_free(q1);
        hs_profile_free(q2);
        ok++;
    }
    assert_true(ok > 100 && failed > 100); /* both outcomes were compared */
    free(b);
    free(alt);
    free(gz);
    free(raw);
    hs_profile_free(p);
}

/* ---- the gunzip on a thread, decoded behind it (hs_feed) ---- */

/* raw[0..n) gzipped by zlib as `members` members (cut at equal sizes), the
 * odd ones with a header that has a name, a comment, an extra field and a
 * header CRC. */
static unsigned char *gzip_members(const unsigned char *raw, size_t n, size_t members, size_t *len)
{
    size_t cap = n + n / 2 + 4096 + members * 256, used = 0;
    unsigned char *gz = malloc(cap);
    assert_non_null(gz);
    for (size_t m = 0; m < members; m++) {
        size_t from = n * m / members, to = n * (m + 1) / members;
        z_stream z = {0};
        assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
        gz_header h = {0};
        if (m % 2) {
            h.name = (Bytef *)"profile.pb";
            h.comment = (Bytef *)"a comment";
            h.extra = (Bytef *)"ex";
            h.extra_len = 2;
            h.hcrc = 1;
            assert_int_equal(deflateSetHeader(&z, &h), Z_OK);
        }
        z.next_in = (unsigned char *)raw + from;
        z.avail_in = (uInt)(to - from);
        z.next_out = gz + used;
        z.avail_out = (uInt)(cap - used);
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        used = cap - z.avail_out;
        deflateEnd(&z);
    }
    *len = used;
    return gz;
}

/* The profile of build_many_samples without labels before sample
 * `plain` (the feed decodes label-less samples while the input is
 * inflated, and stops at the first other). */
static hs_profile *build_plain_then_labelled(size_t n, size_t plain)
{
    hs_profile *p = build_many_samples(n);
    for (size_t i = 0; i < plain && i < p->n_samples; i++)
        p->samples[i].n_labels = 0;
    return p;
}

/* raw with one more sample_type field (a copy of its first) at the end:
 * its samples then have a value too few. */
static unsigned char *type_after_samples(const unsigned char *raw, size_t n, size_t *len)
{
    size_t i = 0;
    uint64_t tag = read_varint(raw, &i), flen = read_varint(raw, &i);
    assert_int_equal(tag, 1 << 3 | 2);
    i += flen;
    unsigned char *b = append_bytes(raw, n, raw, i);
    *len = n + i;
    return b;
}

/* Whole, then decoded, against inflated on a thread and decoded behind it
 * (publishing every `step` bytes): the same profile, or the same error. */
static void feed_as_whole(const unsigned char *gz, size_t n, size_t step, size_t *ok, size_t *failed)
{
    char e1[256] = "", e2[256] = "";
    hs_profile *q1 = hs_profile_decode_gz_mode(gz, n, false, 0, e1, sizeof e1);
    hs_profile *q2 = hs_profile_decode_gz_mode(gz, n, true, step, e2, sizeof e2);
    if ((q1 == NULL) != (q2 == NULL))
        fail_msg("whole: %s, fed: %s", q1 ? "ok" : e1, q2 ? "ok" : e2);
    if (!q1) {
        /* a bad gzip stream: the whole-buffer gunzip (gunzip.c) names what
         * zlib found ("truncated gzip data", "corrupt gzip data (...)"),
         * the thread's ISA-L says "corrupt or truncated gzip data" */
        if (strstr(e1, "gzip data") && !strstr(e1, "expands") && !strstr(e1, "over the limit"))
            assert_non_null(strstr(e2, "gzip data"));
        else
            assert_string_equal(e1, e2);
        (*failed)++;
        return;
    }
    assert_profiles_equal(q1, q2);
    size_t c1, c2;
    for (size_t k = 0; k < q1->n_samples; k++)
        assert_int_equal(hs_profile_sample_stack(q1, k, &c1), hs_profile_sample_stack(q2, k, &c2));
    assert_int_equal(c1, c2);
    hs_profile_free(q1);
    hs_profile_free(q2);
    (*ok)++;
}

/* The feed gives what the whole-buffer gunzip and decode give, errors
 * included: on profiles whose samples are decoded behind the inflate
 * (across blocks of values), stop at a labelled one (the first, or a
 * later one), come after the rest,
 * or have a sample type after them; with their protobuf bytes mutated, or
 * their gzip bytes (one member or several, headers with every optional
 * part), or cut; published in steps from one byte up. */
static void test_feed_as_whole(void **state)
{
    (void)state;
    static const size_t steps[] = {1, 7, 100, 4096, 65536, 0};
    hs_profile *p = build_plain_then_labelled(9000, 8500);
    size_t len, rawlen, ok = 0, failed = 0, n_raw[4];
    unsigned char *gz = encode(p, &len);
    unsigned char *raw[4];
    raw[0] = gunzip(gz, len, &rawlen);
    n_raw[0] = n_raw[2] = rawlen;
    raw[1] = type_after_samples(raw[0], rawlen, &n_raw[1]);
    raw[2] = rest_first(raw[0], rawlen);
    hs_profile *q = build_many_samples(300); /* labelled from sample 3 on, */
    q->samples[0].labels = q->samples[3].labels; /* and the first */
    q->samples[0].n_labels = q->samples[3].n_labels;
    free(gz);
    gz = encode(q, &len);
    raw[3] = gunzip(gz, len, &n_raw[3]);
    free(gz);
    hs_profile_free(q);
    for (int i = 0; i < 1600; i++) {
        int v = i % 4;
        size_t n = n_raw[v], members = 1 + rng() % 3, glen;
        unsigned char *b = malloc(n);
        assert_non_null(b);
        memcpy(b, raw[v], n);
        int flips = i < 8 ? 0 : (int)(rng() % 3);
        for (int f = 0; f < flips; f++)
            b[rng() % n] ^= (unsigned char)(1u << (rng() % 8));
        unsigned char *g = gzip_members(b, n, members, &glen);
        if (i >= 8 && rng() % 2) { /* the gzip bytes: header, data, trailer */
            size_t at = rng() % 4 == 0 ? rng() % 32 : rng() % 4 == 0 ? glen - 1 - rng() % 8 : rng() % glen;
            g[at] ^= (unsigned char)(1u << (rng() % 8));
        }
        if (i >= 8 && rng() % 6 == 0)
            glen -= rng() % glen;
        feed_as_whole(g, glen, steps[rng() % (sizeof steps / sizeof *steps)], &ok, &failed);
        free(g);
        free(b);
    }
    assert_true(ok > 200 && failed > 200); /* both outcomes were compared */
    for (int v = 0; v < 4; v++)
        free(raw[v]);
    hs_profile_free(p);
}

/* A small gzip file that inflates to hundreds of MB of zeros is refused. */
static void test_gzip_bomb(void **state)
{
    (void)state;
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
    static unsigned char zeros[1 << 20];
    size_t cap = 1 << 20, used = 0;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    for (int i = 0; i < 300; i++) {
        z.next_in = zeros;
        z.avail_in = sizeof zeros;
        do {
            z.next_out = out + used;
            z.avail_out = (uInt)(cap - used);
            assert_true(deflate(&z, i == 299 ? Z_FINISH : Z_NO_FLUSH) != Z_STREAM_ERROR);
            used = cap - z.avail_out;
        } while (z.avail_out == 0 || z.avail_in > 0);
    }
    deflateEnd(&z);
    assert_true(used < (1 << 20));
    expect_decode_error(out, used, "expands more than 200x");
    char err[256] = "";
    assert_null(hs_profile_decode_gz_mode(out, used, true, 0, err, sizeof err)); /* on a thread too */
    assert_non_null(strstr(err, "expands more than 200x"));
    free(out);
}

static void test_write_and_read_file(void **state)
{
    (void)state;
    hs_profile *p = build_sample_profile();
    char dir[] = "/tmp/hs_codec_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256] = "";
    snprintf(path, sizeof path, "%s/out.pb.gz", dir);
    assert_int_equal(hs_profile_write_file(p, path, err, sizeof err), 0);
    assert_int_equal(hs_profile_write_file(p, path, err, sizeof err), 0); /* overwrite */
    hs_profile *q = hs_profile_read_file(path, err, sizeof err);
    assert_non_null(q);
    assert_profiles_equal(p, q);
    hs_profile_free(q);
    /* a regular file is read into a mapping of its size and one byte (no
     * growing), and released once decoded */
    hs_profile_input in;
    assert_int_equal(hs_profile_input_read(path, &in, err, sizeof err), 0);
    assert_true(in.len > 0 && in.map_len == in.len + 1);
    q = hs_profile_decode_input(&in, err, sizeof err);
    assert_non_null(q);
    assert_null(in.data);
    assert_profiles_equal(p, q);
    hs_profile_free(q);
    assert_int_equal(hs_profile_input_read(dir, &in, err, sizeof err), -1);
    assert_string_equal(err, "is a directory");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope/x.pb.gz", dir);
    assert_int_equal(hs_profile_write_file(p, missing, err, sizeof err), -1);
    assert_null(hs_profile_read_file(missing, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
    assert_null(hs_profile_read_file(dir, err, sizeof err));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0); /* no temp file left behind */
    hs_profile_free(p);
}

/* Many samples and locations: bulk storage and dense id lookups. */
static void test_large(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    enum { NFN = 5000, NLOC = 20000, NS = 100000, DEPTH = 12 };
    for (int i = 0; i < NFN; i++) {
        char name[32];
        snprintf(name, sizeof name, "fn_%d", i);
        assert_int_equal(hs_profile_add_function(p, name, name, "f.c", i), (uint64_t)i + 1);
    }
    for (int i = 0; i < NLOC; i++) {
        hs_line ln = {(uint64_t)(i % NFN) + 1, i, 0};
        assert_int_equal(hs_profile_add_location(p, 0, (uint64_t)i * 4, &ln, 1), (uint64_t)i + 1);
    }
    uint64_t st[DEPTH];
    for (int i = 0; i < NS; i++) {
        int64_t v = i;
        for (int d = 0; d < DEPTH; d++)
            st[d] = rng() % NLOC + 1;
        assert_int_equal(hs_profile_add_sample(p, st, DEPTH, &v, NULL, 0), 0);
    }
    size_t len;
    void *buf = encode(p, &len);
    hs_profile *q = decode_ok(buf, len);
    assert_profiles_equal(p, q);
    assert_int_equal(hs_profile_location(q, NLOC)->address, (NLOC - 1) * 4);
    free(buf);
    hs_profile_free(p);
    hs_profile_free(q);
}

/* The wire forms protobuf allows decode alike: packed or unpacked repeated
 * varints, several chunks of one field, a period_type given twice (the
 * last wins), unknown fields of every wire type, a bool of any wire type; samples whose packed location ids are
 * byte-identical share one read-only array; bad framing names the byte. */
static void test_wire_forms(void **state)
{
    (void)state;
    static const unsigned char raw[] = {
        0x32, 0x00,                   /* string_table[0] = "" */
        0x32, 0x01, 's',              /* 1 "s" */
        0x32, 0x01, 'c',              /* 2 "c" */
        0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {1, 2} */
        0x22, 0x02, 0x08, 0x01,       /* location {id 1} */
        0x22, 0x07, 0x08, 0x02, 0x2d, 0, 0, 0, 1, /* location {id 2, is_folded as fixed32} */
        0x12, 0x06, 0x0a, 0x02, 0x01, 0x02, 0x10, 0x05, /* sample: ids packed [1 2], value 5 */
        0x12, 0x06, 0x0a, 0x02, 0x01, 0x02, 0x10, 0x07, /* the same ids, value 7 */
        0x12, 0x07, 0x08, 0x01, 0x0a, 0x01, 0x02, 0x10, 0x09, /* ids 1 then packed [2] */
        0x5a, 0x02, 0x08, 0x01,       /* period_type {type 1} */
        0x5a, 0x02, 0x10, 0x02,       /* period_type {unit 2}: replaces it, as in protobuf-c */
        0xf8, 0x07, 0x2a,             /* unknown field 127, varint */
        0x7d, 0x01, 0x02, 0x03, 0x04, /* unknown field 15, fixed32 */
        0x79, 1, 2, 3, 4, 5, 6, 7, 8, /* unknown field 15, fixed64 */
        0x6a, 0x02, 0x01, 0x02,       /* comment packed [1 2] */
        0x68, 0x01,                   /* comment 1 unpacked */
    };
    hs_profile *p = decode_ok(raw, sizeof raw);
    assert_int_equal(p->n_samples, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(p->samples[i].n_locations, 2);
        assert_int_equal(p->samples[i].location_ids[0], 1);
        assert_int_equal(p->samples[i].location_ids[1], 2);
    }
    assert_ptr_equal(p->samples[0].location_ids, p->samples[1].location_ids);
    assert_int_equal(p->samples[1].values[0], 7);
    assert_int_equal(p->samples[2].values[0], 9);
    assert_int_equal(p->period_type.type, 0);
    assert_int_equal(p->period_type.unit, 2);
    assert_true(p->locations[1].is_folded);
    assert_false(p->locations[0].is_folded);
    assert_int_equal(p->n_comments, 3);
    assert_int_equal(p->comments[2], 1);
    hs_profile_free(p);
    /* owned input, gzipped: the same profile */
    hs_profile *q = decode_ok(raw, sizeof raw);
    size_t len;
    void *gz = encode(q, &len);
    char err[256] = "";
    hs_profile_input in = {gz, len, 0};
    hs_profile *r = hs_profile_decode_input(&in, err, sizeof err); /* frees gz */
    assert_non_null(r);
    assert_null(in.data);
    assert_profiles_equal(q, r);
    hs_profile_free(q);
    hs_profile_free(r);
    void *junk = malloc(3);
    assert_non_null(junk);
    memcpy(junk, "\x1f\x8b\x08", 3);
    in = (hs_profile_input){junk, 3, 0};
    assert_null(hs_profile_decode_input(&in, err, sizeof err)); /* frees junk too */
    assert_null(in.data);
    /* bad framing */
    static const unsigned char wrong_type[] = {0x08, 0x01}; /* sample_type as a varint */
    expect_decode_error(wrong_type, sizeof wrong_type, "wrong wire type at byte 1");
    static const unsigned char group[] = {0x7b, 0x0c}; /* a group (unknown field 15) */
    expect_decode_error(group, sizeof group, "unsupported wire type");
    static const unsigned char past_end[] = {0x12, 0x05, 0x0a};
    expect_decode_error(past_end, sizeof past_end, "length past the end at byte 1");
    static const unsigned char long_varint[] = {0x48, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect_decode_error(long_varint, sizeof long_varint, "longer than 10 bytes");
    static const unsigned char field0[] = {0x00, 0x01};
    expect_decode_error(field0, sizeof field0, "bad field number");
    static const unsigned char nested_bad[] = {0x0a, 0x02, 0x0a, 0x00}; /* ValueType.type as bytes */
    expect_decode_error(nested_bad, sizeof nested_bad, "not a pprof profile");
}

/* Shared id arrays are keyed by the packed bytes: a labelled sample (the
 * general path) and a label-less one (the fast path) with the same bytes
 * share one array; a run that is a prefix of another, or that spells the
 * same ids with a longer varint, still decodes to its own ids. */
static void test_shared_by_bytes(void **state)
{
    (void)state;
    static const unsigned char raw[] = {
        0x32, 0x00,                   /* string_table[0] = "" */
        0x32, 0x01, 'k',              /* 1 "k" */
        0x0a, 0x02, 0x08, 0x01,       /* sample_type {type 1} */
        0x22, 0x02, 0x08, 0x01,       /* location {id 1} */
        0x22, 0x02, 0x08, 0x02,       /* location {id 2} */
        0x12, 0x0a, 0x0a, 0x02, 0x01, 0x02, 0x10, 0x03, 0x1a, 0x02, 0x08, 0x01, /* [1 2] label k */
        0x12, 0x06, 0x0a, 0x02, 0x01, 0x02, 0x10, 0x05, /* [1 2] */
        0x12, 0x05, 0x0a, 0x01, 0x01, 0x10, 0x06,       /* [1]: a prefix of those bytes */
        0x12, 0x07, 0x0a, 0x03, 0x81, 0x00, 0x02, 0x10, 0x07, /* [1 2], 1 in two bytes */
        0x12, 0x06, 0x0a, 0x02, 0x02, 0x01, 0x10, 0x08, /* [2 1] */
        0x12, 0x05, 0x0a, 0x01, 0x01, 0x10, 0x09,       /* [1] again */
    };
    hs_profile *p = decode_ok(raw, sizeof raw);
    assert_int_equal(p->n_samples, 6);
    static const size_t n[] = {2, 2, 1, 2, 2, 1};
    static const uint64_t ids[][2] = {{1, 2}, {1, 2}, {1, 0}, {1, 2}, {2, 1}, {1, 0}};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(p->samples[i].n_locations, n[i]);
        for (size_t j = 0; j < n[i]; j++)
            assert_int_equal(p->samples[i].location_ids[j], ids[i][j]);
        assert_int_equal(p->samples[i].values[0], i < 1 ? 3 : (int64_t)i + 4);
    }
    assert_int_equal(p->samples[0].n_labels, 1);
    assert_ptr_equal(p->samples[0].location_ids, p->samples[1].location_ids);
    assert_ptr_equal(p->samples[2].location_ids, p->samples[5].location_ids);
    assert_ptr_not_equal(p->samples[1].location_ids, p->samples[4].location_ids);
    size_t classes;
    assert_int_equal(hs_profile_sample_stack(p, 0, &classes), hs_profile_sample_stack(p, 1, NULL));
    assert_int_equal(hs_profile_sample_stack(p, 2, NULL), hs_profile_sample_stack(p, 5, NULL));
    assert_int_not_equal(hs_profile_sample_stack(p, 1, NULL), hs_profile_sample_stack(p, 4, NULL));
    assert_true(classes >= 3);
    hs_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder),
        cmocka_unit_test(test_round_trip_gzip),
        cmocka_unit_test(test_round_trip_raw),
        cmocka_unit_test(test_small_stored_large_compressed),
        cmocka_unit_test(test_arbitrary_ids),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_value_count_mismatch),
        cmocka_unit_test(test_empty_and_minimal),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_fuzz_random_and_mutated),
        cmocka_unit_test(test_decode_vs_protobuf_c),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_write_and_read_file),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_wire_forms),
        cmocka_unit_test(test_shared_by_bytes),
        cmocka_unit_test(test_two_threads_as_one),
        cmocka_unit_test(test_feed_as_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
