/* codec.c — pprof profile.proto <-> hs_profile (see profile.h).
 *
 * Decoding: optional gunzip (zlib, detected by magic, bounded in size and
 * ratio), then protobuf-c unpacks into a temporary bump arena (no per-message
 * malloc/free), then the message tree is copied into the model and every
 * string index and id reference is validated. Any failure returns NULL with
 * a one-line reason. Encoding builds a protobuf-c message tree that points
 * into the model's arrays, packs it and gzips it. */
#include "profile/profile_internal.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__ValueType pb_value_type;

/* Decoded size limits: never more than 2 GiB of protobuf; above 256 MiB the
 * gzip expansion ratio must stay under 200 (real profiles compress ~3-20x). */
#define HS_MAX_DECODED ((size_t)2 << 30)
#define HS_RATIO_FREE ((size_t)256 << 20)
#define HS_MAX_RATIO 200

#define HS_ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* ---- gzip ---- */

static bool hs_is_gzip(const unsigned char *d, size_t len)
{
    return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

static bool hs_inflate_too_big(size_t out, size_t in)
{
    if (out > HS_MAX_DECODED)
        return true;
    return out > HS_RATIO_FREE && out / HS_MAX_RATIO > in;
}

static int hs_grow_buffer(unsigned char **buf, size_t *cap)
{
    size_t ncap = *cap * 2;
    if (ncap > HS_MAX_DECODED + 1)
        ncap = HS_MAX_DECODED + 1;
    unsigned char *n = realloc(*buf, ncap);
    if (!n)
        return -1;
    *buf = n;
    *cap = ncap;
    return 0;
}

/* Inflate all gzip members of in[0..len) into a malloc'd buffer. */
static int hs_gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *outlen,
                     char *err, size_t errlen)
{
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return HS_ERR("zlib init failed");
    size_t cap = len < ((size_t)1 << 20) ? ((size_t)4 << 20) : len * 4;
    if (cap > HS_MAX_DECODED + 1)
        cap = HS_MAX_DECODED + 1;
    unsigned char *buf = malloc(cap);
    size_t used = 0, consumed = 0;
    int rc = buf ? 0 : HS_ERR("out of memory");
    while (rc == 0) {
        if (used == cap && (cap > HS_MAX_DECODED || hs_grow_buffer(&buf, &cap) != 0)) {
            rc = cap > HS_MAX_DECODED ? HS_ERR("decompressed profile larger than 2 GiB")
                                      : HS_ERR("out of memory");
            break;
        }
        size_t in_chunk = len - consumed > UINT32_MAX ? UINT32_MAX : len - consumed;
        size_t out_chunk = cap - used > UINT32_MAX ? UINT32_MAX : cap - used;
        z.next_in = (unsigned char *)in + consumed;
        z.avail_in = (uInt)in_chunk;
        z.next_out = buf + used;
        z.avail_out = (uInt)out_chunk;
        int zr = inflate(&z, Z_NO_FLUSH);
        consumed += in_chunk - z.avail_in;
        used += out_chunk - z.avail_out;
        if (hs_inflate_too_big(used, len)) {
            rc = HS_ERR("gzip data expands too much (possible decompression bomb)");
        } else if (zr == Z_STREAM_END) {
            if (consumed == len || !hs_is_gzip(in + consumed, len - consumed))
                break; /* trailing garbage after the last member is ignored, as gzip does */
            if (inflateReset(&z) != Z_OK)
                rc = HS_ERR("zlib reset failed");
        } else if (zr == Z_BUF_ERROR && consumed == len && z.avail_out > 0) {
            rc = HS_ERR("truncated gzip data");
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = HS_ERR("corrupt gzip data (%s)", z.msg ? z.msg : "inflate failed");
        }
    }
    inflateEnd(&z);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *outlen = used;
    return 0;
}

/* ---- protobuf -> model ---- */

static void *hs_pb_alloc(void *arena, size_t size) { return hs_arena_alloc(arena, size); }
static void hs_pb_free(void *arena, void *ptr)
{
    (void)arena;
    (void)ptr;
}

static bool hs_str_ok(const hs_profile *p, int64_t idx)
{
    return idx >= 0 && (uint64_t)idx < p->n_strings;
}

static int hs_copy_strings(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    if (m->n_string_table > 0 && m->string_table[0][0] != '\0')
        return HS_ERR("string_table[0] is not empty");
    hs_arena *a = hs_profile_arena(p);
    for (size_t i = 1; i < m->n_string_table; i++) {
        char *s = hs_arena_strdup(a, m->string_table[i]);
        if (!s || hs_profile_push_string_raw(p, s) != 0)
            return HS_ERR("out of memory");
    }
    return 0;
}

static int hs_copy_value_type(const hs_profile *p, const pb_value_type *v, hs_value_type *out,
                              char *err, size_t errlen)
{
    if (!hs_str_ok(p, v->type) || !hs_str_ok(p, v->unit))
        return HS_ERR("value type has a bad string index");
    out->type = v->type;
    out->unit = v->unit;
    return 0;
}

static int hs_copy_header(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->n_sample_type; i++) {
        hs_value_type vt;
        if (hs_copy_value_type(p, m->sample_type[i], &vt, err, errlen) != 0)
            return -1;
        if (hs_profile_push_sample_type_raw(p, vt.type, vt.unit) < 0)
            return HS_ERR("out of memory");
    }
    if (m->period_type && hs_copy_value_type(p, m->period_type, &p->period_type, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < m->n_comment; i++) {
        if (!hs_str_ok(p, m->comment[i]))
            return HS_ERR("comment has a bad string index");
        if (hs_profile_push_comment_raw(p, m->comment[i]) != 0)
            return HS_ERR("out of memory");
    }
    if (!hs_str_ok(p, m->drop_frames) || !hs_str_ok(p, m->keep_frames) ||
        !hs_str_ok(p, m->default_sample_type))
        return HS_ERR("profile has a bad string index");
    p->drop_frames = m->drop_frames;
    p->keep_frames = m->keep_frames;
    p->time_nanos = m->time_nanos;
    p->duration_nanos = m->duration_nanos;
    p->period = m->period;
    p->default_sample_type = m->default_sample_type;
    return 0;
}

static int hs_copy_mappings(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->n_mapping; i++) {
        const pb_mapping *pm = m->mapping[i];
        if (!hs_str_ok(p, pm->filename) || !hs_str_ok(p, pm->build_id))
            return HS_ERR("mapping %llu has a bad string index", (unsigned long long)pm->id);
        hs_mapping hm = {pm->id, pm->memory_start, pm->memory_limit, pm->file_offset,
                         pm->filename, pm->build_id, pm->has_functions, pm->has_filenames,
                         pm->has_line_numbers, pm->has_inline_frames};
        if (hs_profile_push_mapping_raw(p, &hm) != 0)
            return HS_ERR("out of memory");
    }
    return 0;
}

static int hs_copy_functions(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->n_function; i++) {
        const pb_function *f = m->function[i];
        if (!hs_str_ok(p, f->name) || !hs_str_ok(p, f->system_name) ||
            !hs_str_ok(p, f->filename))
            return HS_ERR("function %llu has a bad string index", (unsigned long long)f->id);
        hs_function hf = {f->id, f->name, f->system_name, f->filename, f->start_line};
        if (hs_profile_push_function_raw(p, &hf) != 0)
            return HS_ERR("out of memory");
    }
    return 0;
}

static int hs_copy_locations(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    hs_arena *a = hs_profile_arena(p);
    for (size_t i = 0; i < m->n_location; i++) {
        const pb_location *l = m->location[i];
        hs_location hl = {.id = l->id, .mapping_id = l->mapping_id, .address = l->address,
                          .n_lines = l->n_line, .is_folded = l->is_folded};
        if (l->n_line) {
            hl.lines = hs_arena_alloc(a, l->n_line * sizeof *hl.lines);
            if (!hl.lines)
                return HS_ERR("out of memory");
            for (size_t j = 0; j < l->n_line; j++)
                hl.lines[j] = (hs_line){l->line[j]->function_id, l->line[j]->line,
                                        l->line[j]->column};
        }
        if (hs_profile_push_location_raw(p, &hl) != 0)
            return HS_ERR("out of memory");
    }
    return 0;
}

static int hs_copy_labels(hs_profile *p, const pb_sample *s, hs_sample *out, char *err,
                          size_t errlen)
{
    out->labels = hs_arena_alloc(hs_profile_arena(p), s->n_label * sizeof *out->labels);
    if (!out->labels)
        return HS_ERR("out of memory");
    for (size_t j = 0; j < s->n_label; j++) {
        const pb_label *l = s->label[j];
        if (!hs_str_ok(p, l->key) || !hs_str_ok(p, l->str) || !hs_str_ok(p, l->num_unit))
            return HS_ERR("sample label has a bad string index");
        out->labels[j] = (hs_label){l->key, l->str, l->num, l->num_unit};
    }
    out->n_labels = s->n_label;
    return 0;
}

static int hs_copy_samples(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    if (hs_profile_reserve_samples(p, m->n_sample) != 0)
        return HS_ERR("out of memory");
    hs_arena *a = hs_profile_arena(p);
    for (size_t i = 0; i < m->n_sample; i++) {
        const pb_sample *s = m->sample[i];
        if (s->n_value != p->n_sample_types)
            return HS_ERR("sample %zu has %zu values, expected %zu", i, s->n_value,
                          p->n_sample_types);
        hs_sample hs = {.n_locations = s->n_location_id};
        hs.location_ids = hs_arena_memdup(a, s->location_id, s->n_location_id * 8);
        hs.values = hs_arena_memdup(a, s->value, s->n_value * 8);
        if (!hs.location_ids || !hs.values)
            return HS_ERR("out of memory");
        if (s->n_label && hs_copy_labels(p, s, &hs, err, errlen) != 0)
            return -1;
        p->samples[p->n_samples++] = hs;
    }
    return 0;
}

/* ---- validation of id references (after the id maps are built) ---- */

static int hs_check_locations(const hs_profile *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        if (l->mapping_id && !hs_profile_mapping(p, l->mapping_id))
            return HS_ERR("location %llu references unknown mapping %llu",
                          (unsigned long long)l->id, (unsigned long long)l->mapping_id);
        for (size_t j = 0; j < l->n_lines; j++)
            if (!hs_profile_function(p, l->lines[j].function_id))
                return HS_ERR("location %llu references unknown function %llu",
                              (unsigned long long)l->id,
                              (unsigned long long)l->lines[j].function_id);
    }
    return 0;
}

static int hs_check_samples(const hs_profile *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        for (size_t j = 0; j < s->n_locations; j++)
            if (!hs_profile_location(p, s->location_ids[j]))
                return HS_ERR("sample %zu references unknown location %llu", i,
                              (unsigned long long)s->location_ids[j]);
    }
    return 0;
}

static int hs_build_model(hs_profile *p, const pb_profile *m, char *err, size_t errlen)
{
    if (hs_profile_reserve_tables(p, m->n_string_table, m->n_mapping, m->n_function, m->n_location) != 0)
        return HS_ERR("out of memory");
    if (hs_copy_strings(p, m, err, errlen) != 0 || hs_copy_header(p, m, err, errlen) != 0 ||
        hs_copy_mappings(p, m, err, errlen) != 0 || hs_copy_functions(p, m, err, errlen) != 0 ||
        hs_copy_locations(p, m, err, errlen) != 0 || hs_copy_samples(p, m, err, errlen) != 0)
        return -1;
    if (hs_profile_reindex(p, err, errlen) != 0)
        return -1;
    return hs_check_locations(p, err, errlen) != 0 ? -1 : hs_check_samples(p, err, errlen);
}

static hs_profile *hs_decode_raw(const unsigned char *data, size_t len, char *err, size_t errlen)
{
    if (len == 0) {
        snprintf(err, errlen, "empty profile");
        return NULL;
    }
    /* protobuf-c's unpacked tree is bounded by a multiple of the input size */
    hs_arena tmp = {.limit = len * 16 + ((size_t)64 << 20)};
    ProtobufCAllocator alloc = {hs_pb_alloc, hs_pb_free, &tmp};
    pb_profile *m = perftools__profiles__profile__unpack(&alloc, len, data);
    hs_profile *p = NULL;
    if (!m) {
        snprintf(err, errlen, "not a pprof profile (protobuf decoding failed)");
    } else if (!(p = hs_profile_new())) {
        snprintf(err, errlen, "out of memory");
    } else if (hs_build_model(p, m, err, errlen) != 0) {
        hs_profile_free(p);
        p = NULL;
    }
    hs_arena_free(&tmp);
    return p;
}

hs_profile *hs_profile_decode(const void *data, size_t len, char *err, size_t errlen)
{
    const unsigned char *d = data;
    if (len > HS_MAX_DECODED) {
        snprintf(err, errlen, "profile larger than 2 GiB");
        return NULL;
    }
    if (!hs_is_gzip(d, len))
        return hs_decode_raw(d, len, err, errlen);
    unsigned char *raw;
    size_t rawlen;
    if (hs_gunzip(d, len, &raw, &rawlen, err, errlen) != 0)
        return NULL;
    hs_profile *p = hs_decode_raw(raw, rawlen, err, errlen);
    free(raw);
    return p;
}

/* ---- files ---- */

static int hs_read_all(int fd, unsigned char **out, size_t *outlen, char *err, size_t errlen)
{
    struct stat st;
    size_t cap = 1 << 16, used = 0;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
        return HS_ERR("is a directory");
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;
    if (cap > HS_MAX_DECODED + 1)
        return HS_ERR("file larger than 2 GiB");
    unsigned char *buf = malloc(cap);
    if (!buf)
        return HS_ERR("out of memory");
    for (;;) {
        if (used == cap && (cap > HS_MAX_DECODED || hs_grow_buffer(&buf, &cap) != 0)) {
            free(buf);
            return HS_ERR(cap > HS_MAX_DECODED ? "file larger than 2 GiB" : "out of memory");
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return HS_ERR("%s", strerror(e));
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    *out = buf;
    *outlen = used;
    return 0;
}

hs_profile *hs_profile_read_file(const char *path, char *err, size_t errlen)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = hs_read_all(fd, &buf, &len, err, errlen);
    if (!is_stdin)
        close(fd);
    if (rc != 0)
        return NULL;
    hs_profile *p = hs_profile_decode(buf, len, err, errlen);
    free(buf);
    return p;
}

/* ---- model -> protobuf ---- */

/* One allocation of `n` message structs plus their pointer array. */
#define HS_PB_ARRAY(a, type, n, ptrs, objs)                              \
    ((ptrs) = hs_arena_alloc((a), ((n) ? (n) : 1) * sizeof(type *)),    \
     (objs) = hs_arena_alloc((a), ((n) ? (n) : 1) * sizeof(type)),      \
     ((ptrs) && (objs)) ? 0 : -1)

static int hs_pb_value_types(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    pb_value_type *vt;
    if (HS_PB_ARRAY(a, pb_value_type, p->n_sample_types, m->sample_type, vt) != 0)
        return -1;
    for (size_t i = 0; i < p->n_sample_types; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = p->sample_types[i].type;
        vt[i].unit = p->sample_types[i].unit;
        m->sample_type[i] = &vt[i];
    }
    m->n_sample_type = p->n_sample_types;
    if (p->period_type.type || p->period_type.unit) {
        if (!(m->period_type = hs_arena_alloc(a, sizeof *m->period_type)))
            return -1;
        perftools__profiles__value_type__init(m->period_type);
        m->period_type->type = p->period_type.type;
        m->period_type->unit = p->period_type.unit;
    }
    return 0;
}

static int hs_pb_sample_labels(hs_arena *a, const hs_sample *s, pb_sample *ps)
{
    pb_label *ls;
    if (HS_PB_ARRAY(a, pb_label, s->n_labels, ps->label, ls) != 0)
        return -1;
    for (size_t j = 0; j < s->n_labels; j++) {
        perftools__profiles__label__init(&ls[j]);
        ls[j].key = s->labels[j].key;
        ls[j].str = s->labels[j].str;
        ls[j].num = s->labels[j].num;
        ls[j].num_unit = s->labels[j].num_unit;
        ps->label[j] = &ls[j];
    }
    ps->n_label = s->n_labels;
    return 0;
}

static int hs_pb_samples(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    pb_sample *ss;
    if (HS_PB_ARRAY(a, pb_sample, p->n_samples, m->sample, ss) != 0)
        return -1;
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        perftools__profiles__sample__init(&ss[i]);
        ss[i].n_location_id = s->n_locations;
        ss[i].location_id = s->location_ids;
        ss[i].n_value = p->n_sample_types;
        ss[i].value = s->values;
        if (s->n_labels && hs_pb_sample_labels(a, s, &ss[i]) != 0)
            return -1;
        m->sample[i] = &ss[i];
    }
    m->n_sample = p->n_samples;
    return 0;
}

static int hs_pb_mappings(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    pb_mapping *ms;
    if (HS_PB_ARRAY(a, pb_mapping, p->n_mappings, m->mapping, ms) != 0)
        return -1;
    for (size_t i = 0; i < p->n_mappings; i++) {
        const hs_mapping *hm = &p->mappings[i];
        perftools__profiles__mapping__init(&ms[i]);
        ms[i].id = hm->id;
        ms[i].memory_start = hm->memory_start;
        ms[i].memory_limit = hm->memory_limit;
        ms[i].file_offset = hm->file_offset;
        ms[i].filename = hm->filename;
        ms[i].build_id = hm->build_id;
        ms[i].has_functions = hm->has_functions;
        ms[i].has_filenames = hm->has_filenames;
        ms[i].has_line_numbers = hm->has_line_numbers;
        ms[i].has_inline_frames = hm->has_inline_frames;
        m->mapping[i] = &ms[i];
    }
    m->n_mapping = p->n_mappings;
    return 0;
}

static int hs_pb_location_lines(hs_arena *a, const hs_location *l, pb_location *pl)
{
    pb_line *ls;
    if (HS_PB_ARRAY(a, pb_line, l->n_lines, pl->line, ls) != 0)
        return -1;
    for (size_t j = 0; j < l->n_lines; j++) {
        perftools__profiles__line__init(&ls[j]);
        ls[j].function_id = l->lines[j].function_id;
        ls[j].line = l->lines[j].line;
        ls[j].column = l->lines[j].column;
        pl->line[j] = &ls[j];
    }
    pl->n_line = l->n_lines;
    return 0;
}

static int hs_pb_locations(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    pb_location *ls;
    if (HS_PB_ARRAY(a, pb_location, p->n_locations, m->location, ls) != 0)
        return -1;
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        perftools__profiles__location__init(&ls[i]);
        ls[i].id = l->id;
        ls[i].mapping_id = l->mapping_id;
        ls[i].address = l->address;
        ls[i].is_folded = l->is_folded;
        if (l->n_lines && hs_pb_location_lines(a, l, &ls[i]) != 0)
            return -1;
        m->location[i] = &ls[i];
    }
    m->n_location = p->n_locations;
    return 0;
}

static int hs_pb_functions(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    pb_function *fs;
    if (HS_PB_ARRAY(a, pb_function, p->n_functions, m->function, fs) != 0)
        return -1;
    for (size_t i = 0; i < p->n_functions; i++) {
        const hs_function *f = &p->functions[i];
        perftools__profiles__function__init(&fs[i]);
        fs[i].id = f->id;
        fs[i].name = f->name;
        fs[i].system_name = f->system_name;
        fs[i].filename = f->filename;
        fs[i].start_line = f->start_line;
        m->function[i] = &fs[i];
    }
    m->n_function = p->n_functions;
    return 0;
}

static int hs_pb_build(hs_arena *a, const hs_profile *p, pb_profile *m)
{
    perftools__profiles__profile__init(m);
    if (hs_pb_value_types(a, p, m) != 0 || hs_pb_samples(a, p, m) != 0 ||
        hs_pb_mappings(a, p, m) != 0 || hs_pb_locations(a, p, m) != 0 ||
        hs_pb_functions(a, p, m) != 0)
        return -1;
    m->n_string_table = p->n_strings;
    m->string_table = p->strings;
    m->drop_frames = p->drop_frames;
    m->keep_frames = p->keep_frames;
    m->time_nanos = p->time_nanos;
    m->duration_nanos = p->duration_nanos;
    m->period = p->period;
    m->n_comment = p->n_comments;
    m->comment = p->comments;
    m->default_sample_type = p->default_sample_type;
    return 0;
}

static int hs_gzip(const unsigned char *in, size_t len, void **out, size_t *outlen, char *err,
                   size_t errlen)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return HS_ERR("zlib init failed");
    size_t cap = deflateBound(&z, len) + 64;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return HS_ERR("out of memory");
    }
    size_t done_in = 0, used = 0;
    int zr = Z_OK;
    while (zr != Z_STREAM_END) {
        size_t in_chunk = len - done_in > UINT32_MAX ? UINT32_MAX : len - done_in;
        size_t out_chunk = cap - used > UINT32_MAX ? UINT32_MAX : cap - used;
        z.next_in = (unsigned char *)in + done_in;
        z.avail_in = (uInt)in_chunk;
        z.next_out = buf + used;
        z.avail_out = (uInt)out_chunk;
        zr = deflate(&z, done_in + in_chunk == len ? Z_FINISH : Z_NO_FLUSH);
        done_in += in_chunk - z.avail_in;
        used += out_chunk - z.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
            free(buf);
            deflateEnd(&z);
            return HS_ERR("gzip compression failed");
        }
    }
    deflateEnd(&z);
    *out = buf;
    *outlen = used;
    return 0;
}

int hs_profile_encode(const hs_profile *p, void **out, size_t *outlen, char *err, size_t errlen)
{
    hs_arena a = {0};
    pb_profile m;
    if (hs_pb_build(&a, p, &m) != 0) {
        hs_arena_free(&a);
        return HS_ERR("out of memory");
    }
    size_t size = perftools__profiles__profile__get_packed_size(&m);
    unsigned char *raw = malloc(size ? size : 1);
    if (!raw) {
        hs_arena_free(&a);
        return HS_ERR("out of memory");
    }
    size_t packed = perftools__profiles__profile__pack(&m, raw);
    hs_arena_free(&a);
    int rc = packed == size ? hs_gzip(raw, size, out, outlen, err, errlen)
                            : HS_ERR("protobuf encoding failed");
    free(raw);
    return rc;
}

static int hs_write_all(int fd, const unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write buf to a temp file beside path, then rename it over path: a reader
 * (or a crash of the writer) never sees half a file. No fsync: a profile is
 * worth keeping across the crash of its process, not of the machine, and an
 * fsync per file cost ~10 ms each (most of a short process's cost under the
 * agent; `hotspur record -- make` writes hundreds of files). */
static int hs_write_atomic(const char *path, const unsigned char *buf, size_t len, char *err,
                           size_t errlen)
{
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    char *tmp = malloc(n);
    if (!tmp)
        return HS_ERR("out of memory");
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return HS_ERR("%s", strerror(e));
    }
    int rc = 0;
    if (fchmod(fd, 0644) != 0 || hs_write_all(fd, buf, len) != 0)
        rc = HS_ERR("%s", strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = HS_ERR("%s", strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = HS_ERR("%s", strerror(errno));
    if (rc != 0)
        (void)unlink(tmp);
    free(tmp);
    return rc;
}

int hs_profile_write_file(const hs_profile *p, const char *path, char *err, size_t errlen)
{
    void *buf;
    size_t len;
    if (hs_profile_encode(p, &buf, &len, err, errlen) != 0)
        return -1;
    int rc;
    if (strcmp(path, "-") == 0)
        rc = hs_write_all(STDOUT_FILENO, buf, len) == 0 ? 0 : HS_ERR("%s", strerror(errno));
    else
        rc = hs_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}
