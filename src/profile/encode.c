/* encode.c — hs_profile -> profile.proto wire format, directly.
 *
 * The encoder of hs_profile_encode (codec.c does the gzip): no protobuf-c
 * message tree in between. The bytes are those protobuf-c's packer wrote
 * before (the unit test compares them with it): fields in number order,
 * proto3 zero scalars and empty repeated fields omitted, repeated scalars
 * packed, every length a minimal varint, period_type only when it has a
 * type or a unit.
 *
 * The top-level fields are numbered in the order they are written (sample
 * types, samples, mappings, locations, functions, strings, then the
 * scalars as one), and the encoding can be cut into parts of whole fields
 * of about a given size (hs_profile_pb_plan), each encoded on its own
 * (hs_profile_encode_part): codec.c encodes and compresses parts on several
 * threads at once. Before a field is written the buffer is given room for
 * the field's largest possible size (O(1) to bound); a nested message or
 * packed run gets a one-byte length, and in the rare case its contents pass
 * 127 bytes (a sample deeper than ~40 frames) they are moved up to make
 * room for the longer length. */
#include "profile/profile_internal.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_LEN = 2 };

/* Largest sizes: a varint, a tag (field numbers here are below 16: one
 * byte) with a length, a scalar field. */
enum { HS_VARINT_MAX = 10, HS_LEN_MAX = 1 + 5, HS_SCALAR_MAX = 1 + HS_VARINT_MAX };

#define HS_TAG(field, wt) ((unsigned char)((field) << 3 | (wt)))

typedef struct {
    unsigned char *buf; /* malloc'd */
    size_t len, cap;
} hs_enc;

static inline unsigned char *hs_put_varint(unsigned char *q, uint64_t v)
{
    while (v >= 0x80) {
        *q++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *q++ = (unsigned char)v;
    return q;
}

static size_t hs_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A singular varint field, omitted when zero (proto3). */
static inline unsigned char *hs_put_scalar(unsigned char *q, unsigned field, uint64_t v)
{
    if (!v)
        return q;
    *q++ = HS_TAG(field, WT_VARINT);
    return hs_put_varint(q, v);
}

/* Opens a length-delimited field: its tag and a one-byte length, which
 * hs_close sets; returns where the contents go. */
static inline unsigned char *hs_open(unsigned char *q, unsigned field)
{
    *q++ = HS_TAG(field, WT_LEN);
    return q + 1;
}

/* Closes the field opened at `start` (what hs_open returned) whose contents
 * end at q; returns the new end. */
static inline unsigned char *hs_close(unsigned char *start, unsigned char *q)
{
    size_t n = (size_t)(q - start);
    if (n < 0x80) {
        start[-1] = (unsigned char)n;
        return q;
    }
    size_t extra = hs_varint_len(n) - 1;
    memmove(start + extra, start, n);
    (void)hs_put_varint(start - 1, n);
    return q + extra;
}

/* A packed repeated varint field, omitted when empty. */
static inline unsigned char *hs_put_packed(unsigned char *q, unsigned field, const uint64_t *v, size_t n)
{
    if (!n)
        return q;
    unsigned char *start = hs_open(q, field);
    q = start;
    for (size_t i = 0; i < n; i++)
        q = hs_put_varint(q, v[i]);
    return hs_close(start, q);
}

/* Room for `need` more bytes (the buffer grows by doubling): where they
 * go, or NULL when out of memory. */
static unsigned char *hs_enc_room(hs_enc *e, size_t need)
{
    if (e->cap - e->len >= need)
        return e->buf + e->len;
    if (need > SIZE_MAX - e->len || HS_VEC_RESERVE(e->buf, e->cap, e->len + need))
        return NULL;
    return e->buf + e->len;
}

static void hs_enc_done(hs_enc *e, const unsigned char *q)
{
    e->len = (size_t)(q - e->buf);
}

static unsigned char *hs_put_value_type(unsigned char *q, unsigned field, const hs_value_type *vt)
{
    unsigned char *start = hs_open(q, field);
    q = hs_put_scalar(start, 1, (uint64_t)vt->type);
    q = hs_put_scalar(q, 2, (uint64_t)vt->unit);
    return hs_close(start, q);
}

static int hs_enc_sample(hs_enc *e, const hs_profile *p, const hs_sample *s)
{
    size_t need = HS_LEN_MAX + HS_LEN_MAX + s->n_locations * HS_VARINT_MAX + HS_LEN_MAX +
                  p->n_sample_types * HS_VARINT_MAX + s->n_labels * (HS_LEN_MAX + 4 * HS_SCALAR_MAX);
    unsigned char *q = hs_enc_room(e, need);
    if (!q)
        return -1;
    unsigned char *start = hs_open(q, 2);
    q = hs_put_packed(start, 1, s->location_ids, s->n_locations);
    q = hs_put_packed(q, 2, (const uint64_t *)s->values, p->n_sample_types);
    for (size_t i = 0; i < s->n_labels; i++) {
        const hs_label *l = &s->labels[i];
        unsigned char *ls = hs_open(q, 3);
        q = hs_put_scalar(ls, 1, (uint64_t)l->key);
        q = hs_put_scalar(q, 2, (uint64_t)l->str);
        q = hs_put_scalar(q, 3, (uint64_t)l->num);
        q = hs_put_scalar(q, 4, (uint64_t)l->num_unit);
        q = hs_close(ls, q);
    }
    hs_enc_done(e, hs_close(start, q));
    return 0;
}

static int hs_enc_mapping(hs_enc *e, const hs_mapping *m)
{
    unsigned char *q = hs_enc_room(e, HS_LEN_MAX + 10 * HS_SCALAR_MAX);
    if (!q)
        return -1;
    unsigned char *start = hs_open(q, 3);
    q = hs_put_scalar(start, 1, m->id);
    q = hs_put_scalar(q, 2, m->memory_start);
    q = hs_put_scalar(q, 3, m->memory_limit);
    q = hs_put_scalar(q, 4, m->file_offset);
    q = hs_put_scalar(q, 5, (uint64_t)m->filename);
    q = hs_put_scalar(q, 6, (uint64_t)m->build_id);
    q = hs_put_scalar(q, 7, m->has_functions);
    q = hs_put_scalar(q, 8, m->has_filenames);
    q = hs_put_scalar(q, 9, m->has_line_numbers);
    q = hs_put_scalar(q, 10, m->has_inline_frames);
    hs_enc_done(e, hs_close(start, q));
    return 0;
}

static int hs_enc_location(hs_enc *e, const hs_location *l)
{
    unsigned char *q = hs_enc_room(e, HS_LEN_MAX + 4 * HS_SCALAR_MAX + l->n_lines * (HS_LEN_MAX + 3 * HS_SCALAR_MAX));
    if (!q)
        return -1;
    unsigned char *start = hs_open(q, 4);
    q = hs_put_scalar(start, 1, l->id);
    q = hs_put_scalar(q, 2, l->mapping_id);
    q = hs_put_scalar(q, 3, l->address);
    for (size_t i = 0; i < l->n_lines; i++) {
        unsigned char *ls = hs_open(q, 4);
        q = hs_put_scalar(ls, 1, l->lines[i].function_id);
        q = hs_put_scalar(q, 2, (uint64_t)l->lines[i].line);
        q = hs_put_scalar(q, 3, (uint64_t)l->lines[i].column);
        q = hs_close(ls, q);
    }
    q = hs_put_scalar(q, 5, l->is_folded);
    hs_enc_done(e, hs_close(start, q));
    return 0;
}

static int hs_enc_function(hs_enc *e, const hs_function *f)
{
    unsigned char *q = hs_enc_room(e, HS_LEN_MAX + 5 * HS_SCALAR_MAX);
    if (!q)
        return -1;
    unsigned char *start = hs_open(q, 5);
    q = hs_put_scalar(start, 1, f->id);
    q = hs_put_scalar(q, 2, (uint64_t)f->name);
    q = hs_put_scalar(q, 3, (uint64_t)f->system_name);
    q = hs_put_scalar(q, 4, (uint64_t)f->filename);
    q = hs_put_scalar(q, 5, (uint64_t)f->start_line);
    hs_enc_done(e, hs_close(start, q));
    return 0;
}

/* A string_table entry (written even when empty: it is a repeated field). */
static int hs_enc_string(hs_enc *e, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    unsigned char *q = hs_enc_room(e, HS_LEN_MAX + n);
    if (!q)
        return -1;
    *q++ = HS_TAG(6, WT_LEN);
    q = hs_put_varint(q, n);
    memcpy(q, s, n);
    hs_enc_done(e, q + n);
    return 0;
}

/* Fields 7..14. */
static int hs_enc_tail(hs_enc *e, const hs_profile *p)
{
    unsigned char *q = hs_enc_room(e, 6 * HS_SCALAR_MAX + HS_LEN_MAX + 2 * HS_SCALAR_MAX + HS_LEN_MAX +
                                          p->n_comments * HS_VARINT_MAX);
    if (!q)
        return -1;
    q = hs_put_scalar(q, 7, (uint64_t)p->drop_frames);
    q = hs_put_scalar(q, 8, (uint64_t)p->keep_frames);
    q = hs_put_scalar(q, 9, (uint64_t)p->time_nanos);
    q = hs_put_scalar(q, 10, (uint64_t)p->duration_nanos);
    if (p->period_type.type || p->period_type.unit)
        q = hs_put_value_type(q, 11, &p->period_type);
    q = hs_put_scalar(q, 12, (uint64_t)p->period);
    q = hs_put_packed(q, 13, (const uint64_t *)p->comments, p->n_comments);
    q = hs_put_scalar(q, 14, (uint64_t)p->default_sample_type);
    hs_enc_done(e, q);
    return 0;
}

/* The top-level fields by number (see the top): section k holds fields
 * [start[k], start[k+1]). */
enum { S_TYPES, S_SAMPLES, S_MAPPINGS, S_LOCATIONS, S_FUNCTIONS, S_STRINGS, S_TAIL, S_END };

static void hs_sections(const hs_profile *p, size_t start[S_END + 1])
{
    size_t n[S_END] = {p->n_sample_types, p->n_samples, p->n_mappings, p->n_locations,
                       p->n_functions, p->n_strings, 1};
    start[0] = 0;
    for (int k = 0; k < S_END; k++)
        start[k + 1] = start[k] + n[k];
}

/* Top-level field i of section k (index j in it). */
static int hs_enc_field(hs_enc *e, const hs_profile *p, int k, size_t j)
{
    unsigned char *q;
    switch (k) {
    case S_TYPES:
        if (!(q = hs_enc_room(e, HS_LEN_MAX + 2 * HS_SCALAR_MAX)))
            return -1;
        hs_enc_done(e, hs_put_value_type(q, 1, &p->sample_types[j]));
        return 0;
    case S_SAMPLES:
        /* the shared id arrays are all over the model: fetch ahead */
        if (j + 4 < p->n_samples)
            __builtin_prefetch(p->samples[j + 4].location_ids);
        return hs_enc_sample(e, p, &p->samples[j]);
    case S_MAPPINGS: return hs_enc_mapping(e, &p->mappings[j]);
    case S_LOCATIONS: return hs_enc_location(e, &p->locations[j]);
    case S_FUNCTIONS: return hs_enc_function(e, &p->functions[j]);
    case S_STRINGS: return hs_enc_string(e, p->strings[j]);
    default: return hs_enc_tail(e, p);
    }
}

/* About the encoded size of field j of section k (a guess to cut parts
 * by: three bytes a varint). */
static size_t hs_field_guess(const hs_profile *p, int k, size_t j)
{
    switch (k) {
    case S_TYPES: return 6;
    case S_SAMPLES: {
        const hs_sample *s = &p->samples[j];
        return 8 + 3 * (s->n_locations + p->n_sample_types) + 12 * s->n_labels;
    }
    case S_MAPPINGS: return 40;
    case S_LOCATIONS: return 14 + 10 * p->locations[j].n_lines;
    case S_FUNCTIONS: return 16;
    case S_STRINGS: return 2 + (p->strings[j] ? strlen(p->strings[j]) : 0);
    default: return 64 + 3 * p->n_comments;
    }
}

size_t *hs_profile_pb_plan(const hs_profile *p, size_t size, size_t *n_parts)
{
    size_t start[S_END + 1], n = 0, cap = 0, acc = 0;
    size_t *cuts = NULL;
    hs_sections(p, start);
    for (int k = 0; k < S_END; k++)
        for (size_t j = 0; j < start[k + 1] - start[k]; j++) {
            acc += hs_field_guess(p, k, j);
            if (acc >= size || start[k] + j + 1 == start[S_END]) {
                if (HS_VEC_RESERVE(cuts, cap, n + 1) != 0) {
                    free(cuts);
                    return NULL;
                }
                cuts[n++] = start[k] + j + 1;
                acc = 0;
            }
        }
    *n_parts = n;
    return cuts;
}

int hs_profile_encode_part_into(const hs_profile *p, size_t from, size_t to, unsigned char **buf,
                                size_t *cap, size_t *len)
{
    size_t start[S_END + 1];
    hs_sections(p, start);
    hs_enc e = {*buf, 0, *cap};
    int rc = 0;
    for (int k = 0; k < S_END && rc == 0; k++) {
        size_t a = from > start[k] ? from : start[k], b = to < start[k + 1] ? to : start[k + 1];
        for (size_t i = a; i < b && rc == 0; i++)
            rc = hs_enc_field(&e, p, k, i - start[k]);
    }
    if (rc == 0 && !hs_enc_room(&e, 1)) /* a buffer even when the part is empty */
        rc = -1;
    *buf = e.buf; /* grown or not, still the caller's */
    *cap = e.cap;
    *len = rc == 0 ? e.len : 0;
    return rc;
}

int hs_profile_encode_part(const hs_profile *p, size_t from, size_t to, unsigned char **out,
                           size_t *outlen)
{
    unsigned char *buf = NULL;
    size_t cap = 0;
    if (hs_profile_encode_part_into(p, from, to, &buf, &cap, outlen) != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}
