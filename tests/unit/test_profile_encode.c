/* test_profile_encode.c — the direct wire encoder (encode.c) against
 * protobuf-c's generated packer, the oracle it replaced: the same bytes,
 * byte for byte, for edge cases (empty profile, zero and negative values,
 * varints at every length boundary, labels with num and unit, empty and
 * long strings, many sample types, deep stacks) and random profiles; parts
 * that concatenate to the whole; the gzip of a large profile as several
 * members, read back by zlib, by our decoder and equal to the agent's
 * one-member zlib encoding once inflated; that gzip at several part sizes
 * and thread counts (one member a part, the same bytes inflated), of
 * incompressible parts, and a sink failing mid-way (no call after it, every
 * thread gone). */
#include <dirent.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "profile/profile_internal.h"

typedef Perftools__Profiles__Profile pb_profile;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ---- the oracle: p as a protobuf-c message tree, packed ---- */

static void *xcalloc(size_t n, size_t size)
{
    void *q = calloc(n ? n : 1, size);
    assert_non_null(q);
    return q;
}

static Perftools__Profiles__ValueType *pb_vt(const hs_value_type *vt)
{
    Perftools__Profiles__ValueType *m = xcalloc(1, sizeof *m);
    perftools__profiles__value_type__init(m);
    m->type = vt->type;
    m->unit = vt->unit;
    return m;
}

/* Packs p with protobuf-c: its bytes in a malloc'd buffer. */
static unsigned char *oracle_pack(const hs_profile *p, size_t *len)
{
    pb_profile m;
    perftools__profiles__profile__init(&m);
    m.n_sample_type = p->n_sample_types;
    m.sample_type = xcalloc(p->n_sample_types, sizeof *m.sample_type);
    for (size_t i = 0; i < p->n_sample_types; i++)
        m.sample_type[i] = pb_vt(&p->sample_types[i]);
    m.n_sample = p->n_samples;
    m.sample = xcalloc(p->n_samples, sizeof *m.sample);
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        Perftools__Profiles__Sample *ps = m.sample[i] = xcalloc(1, sizeof *ps);
        perftools__profiles__sample__init(ps);
        ps->n_location_id = s->n_locations;
        ps->location_id = s->location_ids;
        ps->n_value = p->n_sample_types;
        ps->value = s->values;
        ps->n_label = s->n_labels;
        ps->label = xcalloc(s->n_labels, sizeof *ps->label);
        for (size_t j = 0; j < s->n_labels; j++) {
            Perftools__Profiles__Label *l = ps->label[j] = xcalloc(1, sizeof *l);
            perftools__profiles__label__init(l);
            l->key = s->labels[j].key;
            l->str = s->labels[j].str;
            l->num = s->labels[j].num;
            l->num_unit = s->labels[j].num_unit;
        }
    }
    m.n_mapping = p->n_mappings;
    m.mapping = xcalloc(p->n_mappings, sizeof *m.mapping);
    for (size_t i = 0; i < p->n_mappings; i++) {
        const hs_mapping *hm = &p->mappings[i];
        Perftools__Profiles__Mapping *pm = m.mapping[i] = xcalloc(1, sizeof *pm);
        perftools__profiles__mapping__init(pm);
        pm->id = hm->id;
        pm->memory_start = hm->memory_start;
        pm->memory_limit = hm->memory_limit;
        pm->file_offset = hm->file_offset;
        pm->filename = hm->filename;
        pm->build_id = hm->build_id;
        pm->has_functions = hm->has_functions;
        pm->has_filenames = hm->has_filenames;
        pm->has_line_numbers = hm->has_line_numbers;
        pm->has_inline_frames = hm->has_inline_frames;
    }
    m.n_location = p->n_locations;
    m.location = xcalloc(p->n_locations, sizeof *m.location);
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        Perftools__Profiles__Location *pl = m.location[i] = xcalloc(1, sizeof *pl);
        perftools__profiles__location__init(pl);
        pl->id = l->id;
        pl->mapping_id = l->mapping_id;
        pl->address = l->address;
        pl->is_folded = l->is_folded;
        pl->n_line = l->n_lines;
        pl->line = xcalloc(l->n_lines, sizeof *pl->line);
        for (size_t j = 0; j < l->n_lines; j++) {
            Perftools__Profiles__Line *ln = pl->line[j] = xcalloc(1, sizeof *ln);
            perftools__profiles__line__init(ln);
            ln->function_id = l->lines[j].function_id;
            ln->line = l->lines[j].line;
            ln->column = l->lines[j].column;
        }
    }
    m.n_function = p->n_functions;
    m.function = xcalloc(p->n_functions, sizeof *m.function);
    for (size_t i = 0; i < p->n_functions; i++) {
        const hs_function *f = &p->functions[i];
        Perftools__Profiles__Function *pf = m.function[i] = xcalloc(1, sizeof *pf);
        perftools__profiles__function__init(pf);
        pf->id = f->id;
        pf->name = f->name;
        pf->system_name = f->system_name;
        pf->filename = f->filename;
        pf->start_line = f->start_line;
    }
    m.n_string_table = p->n_strings;
    m.string_table = p->strings;
    m.drop_frames = p->drop_frames;
    m.keep_frames = p->keep_frames;
    m.time_nanos = p->time_nanos;
    m.duration_nanos = p->duration_nanos;
    /* the model's "no period type" is type = unit = 0 (what codec.c wrote) */
    m.period_type = p->period_type.type || p->period_type.unit ? pb_vt(&p->period_type) : NULL;
    m.period = p->period;
    m.n_comment = p->n_comments;
    m.comment = p->comments;
    m.default_sample_type = p->default_sample_type;

    *len = perftools__profiles__profile__get_packed_size(&m);
    unsigned char *buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    assert_int_equal(perftools__profiles__profile__pack(&m, buf), *len);

    for (size_t i = 0; i < m.n_sample_type; i++)
        free(m.sample_type[i]);
    for (size_t i = 0; i < m.n_sample; i++) {
        for (size_t j = 0; j < m.sample[i]->n_label; j++)
            free(m.sample[i]->label[j]);
        free(m.sample[i]->label);
        free(m.sample[i]);
    }
    for (size_t i = 0; i < m.n_mapping; i++)
        free(m.mapping[i]);
    for (size_t i = 0; i < m.n_location; i++) {
        for (size_t j = 0; j < m.location[i]->n_line; j++)
            free(m.location[i]->line[j]);
        free(m.location[i]->line);
        free(m.location[i]);
    }
    for (size_t i = 0; i < m.n_function; i++)
        free(m.function[i]);
    free(m.sample_type);
    free(m.sample);
    free(m.mapping);
    free(m.location);
    free(m.function);
    free(m.period_type);
    return buf;
}

/* ---- helpers ---- */

static unsigned char *encode_raw(const hs_profile *p, size_t *len)
{
    unsigned char *buf = NULL;
    assert_int_equal(hs_profile_encode_part(p, 0, SIZE_MAX, &buf, len), 0);
    assert_non_null(buf);
    return buf;
}

/* Our bytes are protobuf-c's; parts of any size concatenate to them; the
 * decoded bytes encode to the same bytes again. */
static void assert_encodes_as_protobuf_c(const hs_profile *p)
{
    size_t n, want_n;
    unsigned char *got = encode_raw(p, &n), *want = oracle_pack(p, &want_n);
    assert_int_equal(n, want_n);
    assert_memory_equal(got, want, n);

    size_t sizes[] = {1, 40, 1000}, n_parts;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t *cuts = hs_profile_pb_plan(p, sizes[k], &n_parts);
        assert_non_null(cuts);
        assert_true(n_parts >= 1);
        size_t at = 0, from = 0;
        for (size_t i = 0; i < n_parts; i++) {
            assert_true(cuts[i] > from || (i == 0 && cuts[i] >= from));
            unsigned char *part;
            size_t plen;
            assert_int_equal(hs_profile_encode_part(p, from, cuts[i], &part, &plen), 0);
            assert_true(at + plen <= n);
            assert_memory_equal(part, got + at, plen);
            at += plen;
            from = cuts[i];
            free(part);
        }
        assert_int_equal(at, n);
        free(cuts);
    }

    if (p->n_strings > 0 && p->strings[0][0] == '\0') { /* else not a decodable profile */
        char err[256] = "";
        hs_profile *q = hs_profile_decode(got, n, err, sizeof err);
        if (!q)
            fail_msg("decode of our encoding failed: %s", err);
        size_t n2;
        unsigned char *again = encode_raw(q, &n2);
        assert_int_equal(n2, n);
        assert_memory_equal(again, got, n);
        free(again);
        hs_profile_free(q);
    }
    free(got);
    free(want);
}

/* Inflates every gzip member of in (zlib); the count of members in *members. */
static unsigned char *gunzip_all(const unsigned char *in, size_t len, size_t *outlen, int *members)
{
    size_t cap = len * 4 + 4096, used = 0;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    *members = 0;
    for (;;) {
        if (used == cap) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
        z.next_out = out + used;
        z.avail_out = (uInt)(cap - used);
        int zr = inflate(&z, Z_NO_FLUSH);
        used = cap - z.avail_out;
        if (zr == Z_STREAM_END) {
            (*members)++;
            if (z.avail_in == 0)
                break;
            assert_int_equal(inflateReset(&z), Z_OK);
        } else {
            assert_true(zr == Z_OK || zr == Z_BUF_ERROR);
            assert_true(z.avail_in > 0 || z.avail_out == 0);
        }
    }
    inflateEnd(&z);
    *outlen = used;
    return out;
}

static hs_profile *build_edges(void)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    assert_int_equal(hs_profile_add_sample_type(p, "space", "bytes"), 1);
    hs_profile_set_period(p, "", "nanoseconds", -1); /* unit only; negative period */
    p->time_nanos = INT64_MIN;
    p->duration_nanos = INT64_MAX;
    p->drop_frames = hs_profile_str(p, "");
    p->keep_frames = hs_profile_str(p, "k");
    hs_profile_add_comment(p, "");
    hs_profile_add_comment(p, "a comment");
    char longs[20000];
    memset(longs, 'x', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    uint64_t m = hs_profile_add_mapping(p, 0, UINT64_MAX, (uint64_t)1 << 56, longs, "");
    assert_true(m != 0);
    p->mappings[0].has_inline_frames = true;
    longs[200] = '\0'; /* a 200-byte string: a two-byte length */
    uint64_t f1 = hs_profile_add_function(p, longs, "", "", -5);
    uint64_t f2 = hs_profile_add_function(p, "f", "f", "f.c", 0);
    hs_line lines[] = {{f1, -1, INT64_MIN}, {f2, 0, 0}, {f1, 127, 128}};
    uint64_t l0 = hs_profile_add_location(p, 0, 0, NULL, 0);
    uint64_t l1 = hs_profile_add_location(p, m, 0x7f, lines, 3);
    uint64_t l2 = hs_profile_add_location(p, m, ((uint64_t)1 << 63) + 5, lines + 1, 1);
    p->locations[1].is_folded = true;
    static const uint64_t boundaries[] = {0, 1, 127, 128, 16383, 16384, 2097151, 2097152,
                                          ((uint64_t)1 << 56) - 1, (uint64_t)1 << 56, UINT64_MAX};
    for (size_t i = 0; i < sizeof boundaries / sizeof *boundaries; i++) {
        int64_t v[2] = {(int64_t)boundaries[i], -(int64_t)boundaries[i]};
        hs_label lb[] = {{hs_profile_str(p, "n"), 0, (int64_t)boundaries[i], hs_profile_str(p, "bytes")},
                         {hs_profile_str(p, "s"), hs_profile_str(p, "v"), 0, 0},
                         {0, 0, 0, 0}};
        uint64_t st[] = {l1, l2, l0};
        assert_int_equal(hs_profile_add_sample(p, st, 1 + i % 3, v, lb, i % 4), 0);
    }
    int64_t zero[2] = {0, 0};
    assert_int_equal(hs_profile_add_sample(p, NULL, 0, zero, NULL, 0), 0);
    /* a stack of 17000 frames: its packed ids pass 16383 bytes (a 3-byte length) */
    enum { DEEP = 17000 };
    uint64_t *deep = malloc(DEEP * sizeof *deep);
    assert_non_null(deep);
    for (size_t i = 0; i < DEEP; i++)
        deep[i] = i % 2 ? l1 : l2;
    assert_int_equal(hs_profile_add_sample(p, deep, DEEP, zero, NULL, 0), 0);
    free(deep);
    p->default_sample_type = hs_profile_str(p, "space");
    return p;
}

/* ---- tests ---- */

static void test_empty(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    assert_encodes_as_protobuf_c(p);
    size_t n;
    unsigned char *raw = encode_raw(p, &n);
    assert_int_equal(n, 2); /* string_table[0] = "": written even when empty */
    assert_int_equal(raw[0], 6 << 3 | 2);
    assert_int_equal(raw[1], 0);
    free(raw);
    p->period_type.unit = hs_profile_str(p, "u");
    assert_encodes_as_protobuf_c(p);
    hs_profile_free(p);
}

static void test_edges(void **state)
{
    (void)state;
    hs_profile *p = build_edges();
    assert_encodes_as_protobuf_c(p);
    hs_profile_free(p);
}

/* The first sample has labels and no stack (it once crashed the decoder:
 * a copy from a scratch buffer not yet allocated). */
static void test_labels_without_stack(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    assert_int_equal(hs_profile_add_sample_type(p, "k", "k"), 0);
    int64_t v = 1;
    hs_label lb = {hs_profile_str(p, "k"), 0, 0, 0};
    assert_int_equal(hs_profile_add_sample(p, NULL, 0, &v, &lb, 1), 0);
    size_t n;
    unsigned char *raw = encode_raw(p, &n);
    static const unsigned char want[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x01, 0x12, 0x07, 0x12, 0x01,
                                         0x01, 0x1a, 0x02, 0x08, 0x01, 0x32, 0x00, 0x32, 0x01, 0x6b};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(raw, want, n);
    free(raw);
    assert_encodes_as_protobuf_c(p); /* which decodes it */
    hs_profile_free(p);
}

/* 300 sample types: the packed values of a sample pass 127 bytes. */
static void test_many_sample_types(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    enum { NT = 300 };
    for (int i = 0; i < NT; i++) {
        char t[16];
        snprintf(t, sizeof t, "t%d", i);
        assert_int_equal(hs_profile_add_sample_type(p, t, "count"), i);
    }
    uint64_t f = hs_profile_add_function(p, "main", "main", "m.c", 1);
    hs_line ln = {f, 3, 0};
    uint64_t l = hs_profile_add_location(p, 0, 0x1000, &ln, 1);
    int64_t v[NT];
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < NT; i++)
            v[i] = (int64_t)(rng() >> (rng() % 64)) * (i % 2 ? -1 : 1);
        assert_int_equal(hs_profile_add_sample(p, &l, 1, v, NULL, 0), 0);
    }
    assert_encodes_as_protobuf_c(p);
    hs_profile_free(p);
}

/* A random profile: random counts, values of every size, labels. */
static hs_profile *build_random(void)
{
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    size_t nt = rng() % 4, nf = 1 + rng() % 20, nl = 1 + rng() % 30, ns = rng() % 60;
    char s[32];
    for (size_t i = 0; i < nt; i++) {
        snprintf(s, sizeof s, "type%zu", i);
        assert_true(hs_profile_add_sample_type(p, s, rng() % 2 ? "count" : "") >= 0);
    }
    uint64_t m = rng() % 2 ? hs_profile_add_mapping(p, rng(), rng(), rng() >> (rng() % 64), "lib.so", "id") : 0;
    uint64_t *fids = malloc(nf * sizeof *fids), *lids = malloc(nl * sizeof *lids);
    assert_true(fids && lids);
    for (size_t i = 0; i < nf; i++) {
        snprintf(s, sizeof s, "fn%zu", i);
        fids[i] = hs_profile_add_function(p, s, rng() % 2 ? s : "", "src.c", (int64_t)(rng() >> (rng() % 64)));
    }
    for (size_t i = 0; i < nl; i++) {
        hs_line lines[3];
        size_t n = rng() % 4;
        for (size_t j = 0; j < n; j++)
            lines[j] = (hs_line){fids[rng() % nf], (int64_t)(rng() >> (rng() % 64)), (int64_t)(rng() % 200) - 100};
        lids[i] = hs_profile_add_location(p, rng() % 2 ? m : 0, rng() >> (rng() % 64), lines, n);
        p->locations[i].is_folded = rng() % 5 == 0;
    }
    for (size_t i = 0; i < ns; i++) {
        uint64_t st[50];
        int64_t v[4];
        hs_label lb[3];
        size_t depth = rng() % 50, nlab = rng() % 4;
        for (size_t j = 0; j < depth; j++)
            st[j] = lids[rng() % nl];
        for (size_t j = 0; j < nt; j++)
            v[j] = (int64_t)(rng() >> (rng() % 64));
        for (size_t j = 0; j < nlab; j++) {
            snprintf(s, sizeof s, "key%zu", j);
            lb[j] = (hs_label){hs_profile_str(p, s), rng() % 2 ? hs_profile_str(p, "val") : 0,
                               (int64_t)(rng() >> (rng() % 64)), rng() % 2 ? hs_profile_str(p, "ms") : 0};
        }
        assert_int_equal(hs_profile_add_sample(p, st, depth, v, lb, nlab < 3 ? nlab : 0), 0);
    }
    if (rng() % 2)
        hs_profile_set_period(p, "cpu", "nanoseconds", (int64_t)(rng() >> (rng() % 64)));
    p->time_nanos = (int64_t)rng();
    p->duration_nanos = (int64_t)(rng() >> (rng() % 64));
    if (rng() % 2)
        hs_profile_add_comment(p, "c");
    p->default_sample_type = nt && rng() % 2 ? p->sample_types[0].type : 0;
    free(fids);
    free(lids);
    return p;
}

static void test_random(void **state)
{
    (void)state;
    for (int i = 0; i < 300; i++) {
        hs_profile *p = build_random();
        assert_encodes_as_protobuf_c(p);
        hs_profile_free(p);
    }
}

/* A CPU profile of ns samples over nloc locations, DEPTH frames each. */
static hs_profile *build_cpu(int nloc, int ns)
{
    enum { DEPTH = 10 };
    hs_profile *p = hs_profile_new();
    assert_int_equal(hs_profile_add_sample_type(p, "samples", "count"), 0);
    uint64_t f = hs_profile_add_function(p, "fn", "fn", "f.c", 1);
    for (int i = 0; i < nloc; i++) {
        hs_line ln = {f, i, 0};
        assert_true(hs_profile_add_location(p, 0, (uint64_t)i * 16, &ln, 1) != 0);
    }
    uint64_t st[DEPTH];
    for (int i = 0; i < ns; i++) {
        int64_t v = (int64_t)(rng() % 1000);
        for (int d = 0; d < DEPTH; d++)
            st[d] = rng() % (uint64_t)nloc + 1;
        assert_int_equal(hs_profile_add_sample(p, st, DEPTH, &v, NULL, 0), 0);
    }
    return p;
}

/* Over 2 MiB encoded: several gzip members (zlib reads them all), whose
 * bytes are the raw encoding and the agent's zlib encoding's; the decoder
 * reads it back to the same encoding. A small profile: one member. */
static void test_gzip_members(void **state)
{
    (void)state;
    hs_profile *p = build_cpu(50000, 120000);
    size_t raw_n, gz_n, zl_n, got_n, zgot_n;
    unsigned char *raw = encode_raw(p, &raw_n);
    assert_true(raw_n > ((size_t)4 << 20));
    void *gz, *zl;
    char err[256] = "";
    assert_int_equal(hs_profile_encode(p, &gz, &gz_n, err, sizeof err), 0);
    assert_int_equal(hs_profile_encode_zlib(p, &zl, &zl_n, err, sizeof err), 0);
    int members, zmembers;
    unsigned char *got = gunzip_all(gz, gz_n, &got_n, &members), *zgot = gunzip_all(zl, zl_n, &zgot_n, &zmembers);
    assert_true(members >= 2);
    assert_int_equal(zmembers, 1);
    assert_int_equal(got_n, raw_n);
    assert_memory_equal(got, raw, raw_n);
    assert_int_equal(zgot_n, raw_n);
    assert_memory_equal(zgot, raw, raw_n);
    assert_true(gz_n < raw_n * 3 / 4);
    hs_profile *q = hs_profile_decode(gz, gz_n, err, sizeof err);
    if (!q)
        fail_msg("decode failed: %s", err);
    size_t again_n;
    unsigned char *again = encode_raw(q, &again_n);
    assert_int_equal(again_n, raw_n);
    assert_memory_equal(again, raw, raw_n);
    free(again);
    hs_profile_free(q);
    free(raw);
    free(gz);
    free(zl);
    free(got);
    free(zgot);
    hs_profile_free(p);

    p = build_edges();
    raw = encode_raw(p, &raw_n);
    assert_int_equal(hs_profile_encode(p, &gz, &gz_n, err, sizeof err), 0);
    got = gunzip_all(gz, gz_n, &got_n, &members);
    assert_int_equal(members, 1);
    assert_int_equal(got_n, raw_n);
    assert_memory_equal(got, raw, raw_n);
    free(raw);
    free(gz);
    free(got);
    hs_profile_free(p);
}

/* ---- hs_profile_encode_gz: parts, threads, the sink ---- */

typedef struct {
    unsigned char *buf;
    size_t len, cap;
    int calls, fail_at; /* fail_at: the call that fails (-1: none) */
} mem_sink;

static int mem_sink_put(void *ctx, const void *buf, size_t len)
{
    mem_sink *m = ctx;
    if (m->calls++ == m->fail_at)
        return -1;
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2;
        m->buf = realloc(m->buf, m->cap);
        assert_non_null(m->buf);
    }
    memcpy(m->buf + m->len, buf, len);
    m->len += len;
    return 0;
}

/* encode_gz of p at `part` bytes a part on `threads` threads inflates to
 * raw, one gzip member per planned part. */
static void assert_gz_parts(const hs_profile *p, const unsigned char *raw, size_t raw_n, size_t part,
                            int threads)
{
    size_t n_parts;
    size_t *cuts = hs_profile_pb_plan(p, part, &n_parts);
    assert_non_null(cuts);
    free(cuts);
    mem_sink m = {NULL, 0, 0, 0, -1};
    char err[256] = "";
    assert_int_equal(hs_profile_encode_gz(p, part, threads, mem_sink_put, &m, err, sizeof err), 0);
    assert_int_equal(m.calls, (int)n_parts); /* one call a member */
    size_t got_n;
    int members;
    unsigned char *got = gunzip_all(m.buf, m.len, &got_n, &members);
    assert_int_equal(members, (int)n_parts);
    assert_int_equal(got_n, raw_n);
    assert_memory_equal(got, raw, raw_n);
    free(got);
    free(m.buf);
}

static void test_gzip_parts_threads(void **state)
{
    (void)state;
    hs_profile *p = build_cpu(3000, 20000);
    size_t raw_n;
    unsigned char *raw = encode_raw(p, &raw_n);
    assert_true(raw_n > 300000);
    size_t parts[] = {500, 4096, 65536, 200000, (size_t)1 << 20, SIZE_MAX};
    int threads[] = {1, 2, 4};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
            assert_gz_parts(p, raw, raw_n, parts[i], threads[t]);
    free(raw);
    hs_profile_free(p);

    /* a field a part (a planned size of 1 byte), the edge cases' profile */
    p = build_edges();
    raw = encode_raw(p, &raw_n);
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
        assert_gz_parts(p, raw, raw_n, 1, threads[t]);
    free(raw);
    hs_profile_free(p);

    /* an empty profile: one part, or two a field a part (its string "" and
     * the scalars: the plan never has none) */
    p = hs_profile_new();
    raw = encode_raw(p, &raw_n);
    size_t n_parts;
    size_t *cuts = hs_profile_pb_plan(p, SIZE_MAX, &n_parts);
    assert_int_equal(n_parts, 1);
    free(cuts);
    cuts = hs_profile_pb_plan(p, 1, &n_parts);
    assert_int_equal(n_parts, 2);
    free(cuts);
    assert_gz_parts(p, raw, raw_n, SIZE_MAX, 2);
    assert_gz_parts(p, raw, raw_n, 1, 2);
    free(raw);
    hs_profile_free(p);
}

/* Random strings do not compress: each part is stored, a few bytes more
 * than the raw part, and inflates to it. */
static void test_gzip_incompressible(void **state)
{
    (void)state;
    hs_profile *p = hs_profile_new();
    char s[4001];
    for (int i = 0; i < 600; i++) {
        for (size_t j = 0; j + 1 < sizeof s; j++)
            s[j] = (char)(rng() % 255 + 1);
        s[sizeof s - 1] = '\0';
        assert_true(hs_profile_str(p, s) > 0);
    }
    size_t raw_n;
    unsigned char *raw = encode_raw(p, &raw_n);
    assert_true(raw_n > 2000000);
    assert_gz_parts(p, raw, raw_n, 100000, 2);
    mem_sink m = {NULL, 0, 0, 0, -1};
    char err[256] = "";
    assert_int_equal(hs_profile_encode_gz(p, 100000, 2, mem_sink_put, &m, err, sizeof err), 0);
    assert_true(m.len > raw_n - raw_n / 50); /* it did not compress */
    assert_true(m.len < raw_n + raw_n / 100);
    free(m.buf);
    free(raw);
    hs_profile_free(p);
}

/* The threads of this process (entries of /proc/self/task). */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A sink failing at its first, second or a later call: "write error",
 * no call after the failing one, and every thread of the encoder joined
 * before it returns (none left a moment later, no call either). */
static void test_gzip_sink_error(void **state)
{
    (void)state;
    hs_profile *p = build_cpu(3000, 20000);
    size_t n_parts;
    size_t *cuts = hs_profile_pb_plan(p, 4096, &n_parts);
    assert_non_null(cuts);
    free(cuts);
    assert_true(n_parts > 50);
    int fail_at[] = {0, 1, 7, (int)n_parts - 1};
    int threads[] = {1, 2, 4};
    int before = count_threads(); /* 1, or 2 with TSan's own */
    for (size_t i = 0; i < sizeof fail_at / sizeof *fail_at; i++)
        for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
            mem_sink m = {NULL, 0, 0, 0, fail_at[i]};
            char err[256] = "";
            assert_int_equal(hs_profile_encode_gz(p, 4096, threads[t], mem_sink_put, &m, err, sizeof err), -1);
            assert_string_equal(err, "write error");
            assert_int_equal(m.calls, fail_at[i] + 1);
            usleep(20000);
            assert_int_equal(m.calls, fail_at[i] + 1);
            assert_int_equal(count_threads(), before);
            free(m.buf);
        }
    /* one part: the one-member path */
    mem_sink m = {NULL, 0, 0, 0, 0};
    char err[256] = "";
    assert_int_equal(hs_profile_encode_gz(p, SIZE_MAX, 2, mem_sink_put, &m, err, sizeof err), -1);
    assert_string_equal(err, "write error");
    assert_int_equal(m.calls, 1);
    hs_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_labels_without_stack),
        cmocka_unit_test(test_many_sample_types),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_gzip_members),
        cmocka_unit_test(test_gzip_parts_threads),
        cmocka_unit_test(test_gzip_incompressible),
        cmocka_unit_test(test_gzip_sink_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
