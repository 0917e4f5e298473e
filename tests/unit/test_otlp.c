/* test_otlp.c — OTLP profiles (profile/otlp.h): a pprof profile with
 * everything pprof has (two sample types, mappings with build IDs and
 * flags, inline frames with columns, folded locations, string and numeric
 * labels with units, trace/span labels, comments, drop/keep frames, the
 * default type, period, time) encoded by hs_otlp_encode, unpacked by
 * protobuf-c's generated code (the oracle for the wire writer: the spec's
 * layout, entry 0 of each table the zero value, one profile per type, the
 * link), decoded back by hs_otlp_decode and compared frame by frame,
 * label by label, value by value; malformed dictionaries refused with the
 * table and index named; OTLP/JSON read as the spec writes it; per-sample
 * timestamps kept as time slices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/bytes.h"
#include "profile/otlp.h"
#include "profile/otlp_internal.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;

static hs_profile *rich_profile(void)
{
    hs_profile *p = hs_profile_new();
    hs_profile_add_sample_type(p, "samples", "count");
    hs_profile_add_sample_type(p, "cpu", "nanoseconds");
    hs_profile_set_period(p, "cpu", "nanoseconds", 10000000);
    p->time_nanos = 1764580000123456789LL;
    p->duration_nanos = 10000000000LL;
    hs_profile_add_comment(p, "first comment");
    hs_profile_add_comment(p, "second comment");
    p->drop_frames = hs_profile_str(p, "^runtime\\.");
    p->keep_frames = hs_profile_str(p, "^main$");
    p->default_sample_type = hs_profile_str(p, "cpu");
    uint64_t m1 = hs_profile_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/bin/app", "abcdef0123");
    uint64_t m2 = hs_profile_add_mapping(p, 0x7f0000, 0x7f8000, 0, "/lib/libc.so.6", "");
    p->mappings[0].has_functions = p->mappings[0].has_filenames = true;
    p->mappings[0].has_line_numbers = p->mappings[0].has_inline_frames = true;
    uint64_t fmain = hs_profile_add_function(p, "main", "main", "/src/app.c", 3);
    uint64_t fwork = hs_profile_add_function(p, "work", "_Z4workv", "/src/app.c", 18);
    uint64_t finl = hs_profile_add_function(p, "helper", "_Z6helperv", "/src/h.h", 30);
    hs_line l1[] = {{fmain, 10, 2}};
    hs_line l2[] = {{finl, 31, 5}, {fwork, 22, 0}}; /* helper inlined into work */
    uint64_t a = hs_profile_add_location(p, m1, 0x401000, l1, 1);
    uint64_t b = hs_profile_add_location(p, m1, 0x402000, l2, 2);
    uint64_t c = hs_profile_add_location(p, m2, 0x7f1234, NULL, 0); /* an address only */
    p->locations[2].is_folded = true;
    hs_label lab1[] = {{hs_profile_str(p, "thread_name"), hs_profile_str(p, "worker"), 0, 0},
                       {hs_profile_str(p, "bytes"), 0, 4096, hs_profile_str(p, "bytes")}};
    hs_label lab2[] = {{hs_profile_str(p, "trace_id"), hs_profile_str(p, "5b8efff798038103d269b633813fc60c"), 0, 0},
                       {hs_profile_str(p, "span_id"), hs_profile_str(p, "eee19b7ec3c1b174"), 0, 0},
                       {hs_profile_str(p, "tid"), 0, -7, 0}};
    uint64_t s1[] = {b, a}, s2[] = {c, b, a}, s3[] = {a};
    int64_t v1[] = {3, 30000000}, v2[] = {0, 5}, v3[] = {7, 0}, v4[] = {0, 0};
    hs_profile_add_sample(p, s1, 2, v1, lab1, 2);
    hs_profile_add_sample(p, s2, 3, v2, lab2, 3);
    hs_profile_add_sample(p, s3, 1, v3, NULL, 0);
    hs_profile_add_sample(p, s1, 2, v4, lab2, 2); /* every value zero: kept (in the first type) */
    return p;
}

/* One line per sample: every frame's detail, labels sorted, values. */
static int line_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static char *canon(const hs_profile *p)
{
    hs_bytes out = {0};
    char **lines = calloc(p->n_samples + 1, sizeof *lines);
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        hs_bytes b = {0};
        for (size_t k = 0; k < s->n_locations; k++) {
            const hs_location *l = hs_profile_location(p, s->location_ids[k]);
            const hs_mapping *m = l->mapping_id ? hs_profile_mapping(p, l->mapping_id) : NULL;
            hs_bytes_printf(&b, "[%llx folded=%d map=%s/%s/%llx-%llx+%llx/%d%d%d%d", (unsigned long long)l->address,
                            l->is_folded, m ? hs_profile_string(p, m->filename) : "-",
                            m ? hs_profile_string(p, m->build_id) : "-", m ? (unsigned long long)m->memory_start : 0ULL,
                            m ? (unsigned long long)m->memory_limit : 0ULL, m ? (unsigned long long)m->file_offset : 0ULL,
                            m && m->has_functions, m && m->has_filenames, m && m->has_line_numbers,
                            m && m->has_inline_frames);
            for (size_t j = 0; j < l->n_lines; j++) {
                const hs_function *f = hs_profile_function(p, l->lines[j].function_id);
                hs_bytes_printf(&b, " %s/%s/%s:%lld@%lld:%lld", hs_profile_string(p, f->name),
                                hs_profile_string(p, f->system_name), hs_profile_string(p, f->filename),
                                (long long)f->start_line, (long long)l->lines[j].line, (long long)l->lines[j].column);
            }
            hs_bytes_str(&b, "]");
        }
        char *labs[8];
        size_t nl = s->n_labels < 8 ? s->n_labels : 8;
        for (size_t k = 0; k < nl; k++) {
            hs_bytes lb = {0};
            hs_bytes_printf(&lb, "%s=%s|%lld|%s", hs_profile_string(p, s->labels[k].key),
                            hs_profile_string(p, s->labels[k].str), (long long)s->labels[k].num,
                            hs_profile_string(p, s->labels[k].num_unit));
            labs[k] = lb.s;
        }
        qsort(labs, nl, sizeof *labs, line_cmp);
        for (size_t k = 0; k < nl; k++) {
            hs_bytes_printf(&b, " {%s}", labs[k]);
            free(labs[k]);
        }
        for (size_t v = 0; v < p->n_sample_types; v++)
            hs_bytes_printf(&b, " %lld", (long long)s->values[v]);
        lines[i] = b.s;
    }
    qsort(lines, p->n_samples, sizeof *lines, line_cmp);
    for (size_t t = 0; t < p->n_sample_types; t++)
        hs_bytes_printf(&out, "type %s/%s\n", hs_profile_string(p, p->sample_types[t].type),
                        hs_profile_string(p, p->sample_types[t].unit));
    hs_bytes_printf(&out, "period %s/%s %lld time %lld dur %lld drop %s keep %s default %s\n",
                    hs_profile_string(p, p->period_type.type), hs_profile_string(p, p->period_type.unit),
                    (long long)p->period, (long long)p->time_nanos, (long long)p->duration_nanos,
                    hs_profile_string(p, p->drop_frames), hs_profile_string(p, p->keep_frames),
                    hs_profile_string(p, p->default_sample_type));
    for (size_t i = 0; i < p->n_comments; i++)
        hs_bytes_printf(&out, "comment %s\n", hs_profile_string(p, p->comments[i]));
    hs_bytes_printf(&out, "main mapping %s\n", p->n_mappings ? hs_profile_string(p, p->mappings[0].filename) : "-");
    for (size_t i = 0; i < p->n_samples; i++) {
        hs_bytes_printf(&out, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out.s;
}

static void encode(const hs_profile *p, hs_bytes *b)
{
    char err[256];
    const char *attrs[] = {"host.name=box-1"};
    hs_otlp_resource r = {.service = "svc", .version = "1.0", .attrs = attrs, .n_attrs = 1};
    assert_int_equal(hs_otlp_encode(&p, 1, &r, b, err, sizeof err), 0);
}

static void test_round_trip(void **state)
{
    (void)state;
    hs_profile *p = rich_profile();
    hs_bytes b = {0};
    encode(p, &b);
    hs_otlp_batch batch;
    char err[512];
    assert_int_equal(hs_otlp_decode(b.p, b.n, false, 0, &batch, err, sizeof err), 0);
    assert_int_equal(batch.n, 1);
    assert_int_equal(batch.n_otlp, 2); /* one OTLP profile per sample type */
    assert_string_equal(batch.p[0].service, "svc");
    assert_string_equal(batch.p[0].version, "1.0");
    assert_int_equal(batch.p[0].n_labels, 1);
    assert_string_equal(batch.p[0].labels[0], "host.name=box-1");
    char *want = canon(p), *got = canon(batch.p[0].profile);
    if (strcmp(want, got) != 0)
        fprintf(stderr, "want:\n%s\ngot:\n%s\n", want, got);
    assert_string_equal(want, got);
    free(want);
    free(got);
    hs_otlp_batch_free(&batch);
    hs_bytes_free(&b);
    hs_profile_free(p);
}

/* The wire bytes as protobuf-c reads them: the spec's layout. */
static void test_wire_layout(void **state)
{
    (void)state;
    hs_profile *p = rich_profile();
    hs_bytes b = {0};
    encode(p, &b);
    OtlpRequest *rq =
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, b.n, b.p);
    assert_non_null(rq);
    const Dict *d = rq->dictionary;
    assert_non_null(d);
    assert_string_equal(d->string_table[0], "");
    assert_int_equal(d->mapping_table[0]->memory_start, 0);
    assert_int_equal(d->mapping_table[0]->filename_strindex, 0);
    assert_int_equal(d->location_table[0]->n_lines, 0);
    assert_int_equal(d->function_table[0]->name_strindex, 0);
    assert_int_equal(d->stack_table[0]->n_location_indices, 0);
    assert_int_equal(d->attribute_table[0]->key_strindex, 0);
    assert_int_equal(d->link_table[0]->trace_id.len, 16); /* the spec's advice */
    assert_int_equal(d->link_table[0]->span_id.len, 8);
    assert_int_equal(d->n_mapping_table, 3);
    assert_int_equal(d->n_location_table, 4);
    assert_int_equal(d->n_function_table, 4);
    assert_int_equal(d->n_link_table, 2);
    assert_int_equal(d->link_table[1]->span_id.data[0], 0xee);
    assert_int_equal(rq->n_resource_profiles, 1);
    const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
        rq->resource_profiles[0]->scope_profiles[0];
    assert_int_equal(sp->n_profiles, 2);
    const Opentelemetry__Proto__Profiles__V1development__Profile *cpu = sp->profiles[1];
    assert_string_equal(d->string_table[cpu->sample_type->type_strindex], "cpu");
    assert_int_equal(cpu->time_unix_nano, 1764580000123456789ULL);
    assert_int_equal(cpu->period, 10000000);
    assert_int_equal(cpu->n_samples, 2); /* values 30000000 and 5: the zeros are not samples of cpu */
    assert_int_equal(sp->profiles[0]->n_samples, 3); /* 3, 7 and the all-zero one */
    /* the linked sample: stack leaf first, [libc, work<-helper, main] */
    const Opentelemetry__Proto__Profiles__V1development__Sample *s = cpu->samples[1];
    assert_int_equal(s->n_values, 1);
    assert_int_equal(s->values[0], 5);
    assert_int_equal(s->link_index, 1);
    const Opentelemetry__Proto__Profiles__V1development__Stack *st = d->stack_table[s->stack_index];
    assert_int_equal(st->n_location_indices, 3);
    const Opentelemetry__Proto__Profiles__V1development__Location *leaf = d->location_table[st->location_indices[0]];
    assert_int_equal(leaf->address, 0x7f1234);
    assert_string_equal(d->string_table[d->mapping_table[leaf->mapping_index]->filename_strindex], "/lib/libc.so.6");
    const Opentelemetry__Proto__Profiles__V1development__Location *mid = d->location_table[st->location_indices[1]];
    assert_int_equal(mid->n_lines, 2);
    assert_string_equal(d->string_table[d->function_table[mid->lines[0]->function_index]->name_strindex], "helper");
    assert_int_equal(mid->lines[0]->column, 5);
    protobuf_c_message_free_unpacked(&rq->base, NULL);
    hs_bytes_free(&b);
    hs_profile_free(p);
}

/* Each malformed request: refused, the message names the table and index. */
static void expect_bad(OtlpRequest *rq, const char *want)
{
    hs_otlp_batch batch;
    char err[512] = "";
    assert_int_equal(hs_otlp_from_request(rq, 0, &batch, err, sizeof err), HS_OTLP_BAD);
    if (!strstr(err, want))
        fprintf(stderr, "message: %s\nwant: %s\n", err, want);
    assert_non_null(strstr(err, want));
    assert_int_equal(batch.n, 0);
}

static void test_malformed(void **state)
{
    (void)state;
    hs_profile *p = rich_profile();
    hs_bytes b = {0};
    encode(p, &b);
    OtlpRequest *rq =
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, b.n, b.p);
    Dict *d = rq->dictionary;
    Opentelemetry__Proto__Profiles__V1development__Profile *pr = rq->resource_profiles[0]->scope_profiles[0]->profiles[1];
    int32_t keep;

    keep = d->location_table[2]->mapping_index;
    d->location_table[2]->mapping_index = 3;
    expect_bad(rq, "dictionary.location_table[2].mapping_index: 3 is out of range (mapping_table has 3 entries)");
    d->location_table[2]->mapping_index = keep;

    keep = d->location_table[2]->lines[1]->function_index;
    d->location_table[2]->lines[1]->function_index = -1;
    expect_bad(rq, "dictionary.location_table[2].lines[1].function_index: -1 is out of range");
    d->location_table[2]->lines[1]->function_index = keep;

    keep = d->function_table[2]->system_name_strindex;
    d->function_table[2]->system_name_strindex = 100000;
    expect_bad(rq, "dictionary.function_table[2].system_name_strindex: 100000 is out of range (string_table has");
    d->function_table[2]->system_name_strindex = keep;

    keep = d->stack_table[1]->location_indices[0];
    d->stack_table[1]->location_indices[0] = 4;
    expect_bad(rq, "dictionary.stack_table[1].location_indices[0]: 4 is out of range (location_table has 4 entries)");
    d->stack_table[1]->location_indices[0] = keep;

    keep = pr->samples[0]->stack_index;
    pr->samples[0]->stack_index = 99;
    expect_bad(rq, "resource_profiles[0].scope_profiles[0].profiles[1].samples[0].stack_index: 99 is out of range");
    pr->samples[0]->stack_index = keep;

    keep = pr->samples[1]->link_index;
    pr->samples[1]->link_index = 2;
    expect_bad(rq, "profiles[1].samples[1].link_index: 2 is out of range (link_table has 2 entries)");
    pr->samples[1]->link_index = keep;

    keep = d->attribute_table[1]->key_strindex;
    d->attribute_table[1]->key_strindex = 100000;
    expect_bad(rq, "dictionary.attribute_table[1].key_strindex: 100000 is out of range");
    d->attribute_table[1]->key_strindex = keep;

    d->mapping_table[0]->memory_start = 1;
    expect_bad(rq, "dictionary.mapping_table[0] is not the zero value");
    d->mapping_table[0]->memory_start = 0;

    /* and the request as it was is fine */
    hs_otlp_batch batch;
    char err[512];
    assert_int_equal(hs_otlp_from_request(rq, 0, &batch, err, sizeof err), 0);
    hs_otlp_batch_free(&batch);
    protobuf_c_message_free_unpacked(&rq->base, NULL);
    hs_bytes_free(&b);
    hs_profile_free(p);
}

/* body (OTLP/JSON) decoded into b, or the test fails with the reason. */
static void decode_json_ok(const char *body, size_t len, hs_otlp_batch *b)
{
    char err[512];
    int st = hs_otlp_decode(body, len, true, 0, b, err, sizeof err);
    if (st)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(st, 0);
}

/* OTLP/JSON as the spec writes it. */
static void test_json(void **state)
{
    (void)state;
    static const char body[] =
        "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"j\"}}]},"
        "\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
        "\"samples\":[{\"stackIndex\":1,\"linkIndex\":1,\"values\":[\"9007199254740993\"]}],"
        "\"timeUnixNano\":\"1764580000000000001\",\"unknownKey\":{\"x\":1}}]}]}],"
        "\"dictionary\":{\"mappingTable\":[{}],\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1,\"line\":\"7\"}]}],"
        "\"functionTable\":[{},{\"nameStrindex\":3}],\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"f\"],"
        "\"attributeTable\":[{}],\"stackTable\":[{},{\"locationIndices\":[1]}],"
        "\"linkTable\":[{},{\"traceId\":\"5B8EFFF798038103D269B633813FC60C\",\"spanId\":\"eee19b7ec3c1b174\"}]}}";
    hs_otlp_batch batch;
    char err[512];
    decode_json_ok(body, sizeof body - 1, &batch);
    assert_int_equal(batch.n, 1);
    const hs_profile *p = batch.p[0].profile;
    assert_string_equal(batch.p[0].service, "j");
    assert_int_equal(p->time_nanos, 1764580000000000001LL);
    assert_int_equal(p->n_samples, 1);
    assert_int_equal(p->samples[0].values[0], 9007199254740993LL); /* above 2^53: read as a string, exactly */
    assert_int_equal(p->samples[0].n_labels, 2);
    assert_string_equal(hs_profile_string(p, p->samples[0].labels[0].str), "5b8efff798038103d269b633813fc60c");
    assert_string_equal(hs_profile_string(p, p->samples[0].labels[1].str), "eee19b7ec3c1b174");
    const hs_location *l = hs_profile_location(p, p->samples[0].location_ids[0]);
    assert_string_equal(hs_profile_string(p, hs_profile_function(p, l->lines[0].function_id)->name), "f");
    assert_int_equal(l->lines[0].line, 7);
    hs_otlp_batch_free(&batch);
    /* a wrong type names its key */
    static const char bad[] = "{\"dictionary\":{\"stringTable\":[\"\",5]}}";
    assert_int_equal(hs_otlp_decode(bad, sizeof bad - 1, true, 0, &batch, err, sizeof err), HS_OTLP_BAD);
    assert_non_null(strstr(err, "dictionary.stringTable[1]"));
}

/* Per-sample timestamps kept as time slices (otlp.h): a profile whose
 * samples fall in three 10 s slices, with undated values too, is four
 * profiles, each with its slice's values, time and duration (within the
 * profile's window) and an id of its own that a resend repeats. */
static void test_time_slices(void **state)
{
    (void)state;
    /* window [..05 s, ..35 s); slices [..00, ..10), [..10, ..20), [..30, ..40) */
    static const char body[] =
        "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
        "\"samples\":[{\"stackIndex\":1,\"values\":[\"5\"]},"
        "{\"stackIndex\":1,\"values\":[\"1\",\"2\",\"4\"],"
        "\"timestampsUnixNano\":[\"1764580006000000000\",\"1764580011000000000\",\"1764580012000000000\"]},"
        "{\"stackIndex\":2,\"timestampsUnixNano\":[\"1764580031000000000\",\"1764580032000000000\"]}],"
        "\"timeUnixNano\":\"1764580005000000000\",\"durationNano\":\"30000000000\","
        "\"profileId\":\"AAECAwQFBgcICQoLDA0ODw==\"}]}]}],"
        "\"dictionary\":{\"mappingTable\":[{}],\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1}]},"
        "{\"lines\":[{\"functionIndex\":2}]}],\"functionTable\":[{},{\"nameStrindex\":3},{\"nameStrindex\":4}],"
        "\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"f\",\"g\"],\"attributeTable\":[{}],"
        "\"stackTable\":[{},{\"locationIndices\":[1]},{\"locationIndices\":[2]}],\"linkTable\":[{}]}}";
    static const struct {
        int64_t time, duration, value;
        const char *fn, *id;
    } want[] = {
        {1764580005000000000LL, 30000000000LL, 5, "f", "000102030405060708090a0b0c0d0e0f"},
        {1764580005000000000LL, 5000000000LL, 1, "f", NULL},
        {1764580010000000000LL, 10000000000LL, 6, "f", NULL},
        {1764580030000000000LL, 5000000000LL, 2, "g", NULL},
    };
    hs_otlp_batch batch;
    decode_json_ok(body, sizeof body - 1, &batch);
    assert_int_equal(batch.n, 4);
    assert_int_equal(batch.n_otlp, 1);
    for (size_t i = 0; i < 4; i++) {
        const hs_profile *p = batch.p[i].profile;
        assert_int_equal(batch.p[i].group, 0);
        assert_int_equal(p->time_nanos, want[i].time);
        assert_int_equal(p->duration_nanos, want[i].duration);
        assert_int_equal(p->n_samples, 1);
        assert_int_equal(p->samples[0].values[0], want[i].value);
        const hs_location *l = hs_profile_location(p, p->samples[0].location_ids[0]);
        assert_string_equal(hs_profile_string(p, hs_profile_function(p, l->lines[0].function_id)->name), want[i].fn);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(batch.p[i].id, batch.p[j].id);
    }
    assert_string_equal(batch.p[0].id, want[0].id); /* the undated values keep the profile's id */
    /* slice index 176458000 (+1) xor-ed into the id's low 64 bits: the same on a resend */
    char id1[33];
    snprintf(id1, sizeof id1, "0001020304050607%016llx", 0x08090a0b0c0d0e0fULL ^ 176458001ULL);
    assert_string_equal(batch.p[1].id, id1);
    hs_otlp_batch_free(&batch);

    /* timestamps 10 000 s apart: slices widened to keep at most 64 of them;
     * a group in one slice stays one profile with its own window */
    static const char wide[] =
        "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
        "\"samples\":[{\"stackIndex\":1,\"timestampsUnixNano\":[\"1764580000000000000\",\"1764590000000000000\"]}],"
        "\"timeUnixNano\":\"1764580000000000000\"},"
        "{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
        "\"samples\":[{\"stackIndex\":1,\"timestampsUnixNano\":[\"1764580001000000000\",\"1764580002000000000\"]}],"
        "\"timeUnixNano\":\"1764580000500000000\",\"durationNano\":\"7000000000\"}]}]}],"
        "\"dictionary\":{\"mappingTable\":[{}],\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1}]}],"
        "\"functionTable\":[{},{\"nameStrindex\":3}],\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"f\"],"
        "\"attributeTable\":[{}],\"stackTable\":[{},{\"locationIndices\":[1]}],\"linkTable\":[{}]}}";
    decode_json_ok(wide, sizeof wide - 1, &batch);
    assert_int_equal(batch.n, 3);
    for (size_t i = 0; i < 2; i++) {
        const hs_profile *p = batch.p[i].profile;
        assert_int_equal(batch.p[i].group, 0);
        assert_true(p->duration_nanos > HS_OTLP_SLICE_NS && p->duration_nanos <= 10000000000000LL / 64 * 2);
        assert_int_equal(p->samples[0].values[0], 1);
    }
    assert_int_equal(batch.p[2].group, 1);
    assert_int_equal(batch.p[2].profile->time_nanos, 1764580000500000000LL);
    assert_int_equal(batch.p[2].profile->duration_nanos, 7000000000LL);
    assert_int_equal(batch.p[2].profile->samples[0].values[0], 2);
    hs_otlp_batch_free(&batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_wire_layout),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_time_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
