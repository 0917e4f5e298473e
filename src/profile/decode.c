/* decode.c — profile.proto wire format -> hs_profile, directly.
 *
 * The decoder of hs_profile_decode (codec.c does the gunzip): no protobuf-c
 * message tree in between. Two passes over the bytes:
 *  1. the top-level fields are walked once to check the framing and count
 *     strings, sample types, samples, mappings, functions and locations, so
 *     every table is allocated once at its final size and string indices
 *     can be validated as they are read, whatever the field order;
 *  2. each field is decoded straight into the model. Varints of up to three
 *     bytes take a fast path; strings are copied once into the profile's
 *     arena.
 * Samples with equal location ids share one (read-only) array: a CPU
 * profile of a million samples holds far fewer distinct stacks, and the
 * arrays were most of its memory. The arrays are found by a sample's packed
 * id bytes (hs_stack_index: their hash, then a memcmp with the bytes the
 * array was decoded from, kept until the decoding ends), hashed and fetched
 * into the cache a few samples ahead; a label-less sample in the usual form
 * (one packed id run, one packed value run) whose bytes an earlier sample
 * had costs no decoding of its ids at all (hs_dec_sample_fast).
 * Every sample's values live in one block. When the input is the gunzip's
 * own mapping, the pages already read are handed back as the model grows.
 * On an input of 1 MiB or more, pass 2 runs on two threads: this one
 * decodes the samples, another everything else (strings, locations,
 * functions, mappings: disjoint parts of the model, the other's arena
 * joined to the profile's at the end); of two errors, the one of the
 * earlier field is reported, as one pass in file order would.
 * A large gzip input is decoded while it is inflated: decode_feed.c, which
 * calls the steps here (decode_internal.h).
 *
 * Wire semantics are protobuf-c's, which did this before (checked against
 * it on thousands of mutated files): unknown fields are skipped, repeated
 * scalars are accepted packed or not (several chunks concatenate), a
 * singular message seen twice replaces the first, a bool takes any wire
 * type; a known field with another wrong wire type, a group, a field
 * number 0, a tag over 5 bytes, a varint over 10 or a length past the end
 * is an error. Every string index is validated here; ids and id references
 * after reindexing.
 * Errors: NULL with one line ("not a pprof profile (...)" for bad framing). */
#include "profile/decode_internal.h"
#include "base/hashmap.h"
#include "base/vec.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int hs_stack_index_grow(hs_stack_index *x)
{
    size_t cap = x->cap ? x->cap * 2 : 1024;
    hs_stack_slot *s = cap <= SIZE_MAX / sizeof *s ? hs_table_calloc(cap, sizeof *s) : NULL;
    if (!s)
        return -1;
    for (size_t i = 0; i < x->cap; i++) /* old slot order keeps the probing order */
        if (x->s[i].key) {
            size_t j = x->s[i].h & (cap - 1);
            while (s[j].key)
                j = (j + 1) & (cap - 1);
            s[j] = x->s[i];
        }
    free(x->s);
    x->s = s;
    x->cap = cap;
    return 0;
}

/* An empty index with room for about `hint` / 2 arrays before it grows
 * (a table large enough for half the samples' stacks to be distinct: the
 * doublings from 1024 slots up were 3% of decoding the benchmark profile;
 * slots never probed are pages never touched). */
int hs_stack_index_init(hs_stack_index *x, size_t hint)
{
    size_t cap = 1024;
    while (cap < hint && cap <= SIZE_MAX / 2 / sizeof *x->s)
        cap *= 2;
    x->s = hs_table_calloc(cap, sizeof *x->s);
    x->cap = x->s ? cap : 0;
    x->n = 0;
    return x->s ? 0 : -1;
}

static int hs_stack_index_add(hs_stack_index *x, uint64_t h, hs_stack_key *key)
{
    if ((x->n + 1) * 2 > x->cap && hs_stack_index_grow(x) != 0)
        return -1;
    size_t i = h & (x->cap - 1);
    while (x->s[i].key)
        i = (i + 1) & (x->cap - 1);
    x->s[i] = (hs_stack_slot){h, key};
    x->n++;
    return 0;
}

/* The next key under hash h: start with *it = SIZE_MAX; NULL when none. */
static hs_stack_key *hs_stack_index_next(const hs_stack_index *x, uint64_t h, size_t *it)
{
    if (!x->cap)
        return NULL;
    size_t mask = x->cap - 1;
    for (size_t i = *it == SIZE_MAX ? h & mask : (*it + 1) & mask; x->s[i].key; i = (i + 1) & mask)
        if (x->s[i].h == h) {
            *it = i;
            return x->s[i].key;
        }
    return NULL;
}

void hs_dec_fail(hs_dec *d, const char *fmt, ...)
{
    if (!d || d->failed) /* no decoder: a quiet read (the lookahead, the fast path) */
        return;
    d->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errlen, fmt, ap);
    va_end(ap);
}

static int hs_bad_wire(hs_dec *d, const unsigned char *at, const char *what)
{
    if (!d)
        return -1;
    return HS_FAIL(d, "not a pprof profile (protobuf decoding failed: %s at byte %zu)", what,
                   (size_t)(at - d->base));
}

/* ---- wire primitives ---- */

int hs_rd_varint_slow(hs_dec *d, hs_rd *r, uint64_t *v)
{
    uint64_t x = 0;
    const unsigned char *s = r->p;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (r->p == r->end)
            return hs_bad_wire(d, s, "truncated varint");
        unsigned char b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return hs_bad_wire(d, s, "varint longer than 10 bytes");
}

/* The next field's number and wire type; 0 at the end, 1 on a field, -1 on error. */
static inline int hs_rd_tag(hs_dec *d, hs_rd *r, uint32_t *field, int *wt)
{
    if (r->p == r->end)
        return 0;
    if (*r->p >= 8 && !(*r->p & 0x80)) { /* one byte, field number 1..15 */
        *field = *r->p >> 3;
        *wt = *r->p & 7;
        r->p++;
        return 1;
    }
    /* at most 5 bytes, the field number kept to 32 bits (as protobuf-c) */
    const unsigned char *at = r->p;
    uint64_t t;
    if (hs_rd_varint(d, r, &t) != 0)
        return -1;
    if (r->p - at > 5)
        return hs_bad_wire(d, at, "tag longer than 5 bytes");
    if ((uint32_t)(t >> 3) == 0)
        return hs_bad_wire(d, at, "bad field number");
    *field = (uint32_t)(t >> 3);
    *wt = (int)(t & 7);
    return 1;
}

/* A length-delimited field's contents. */
static inline int hs_rd_bytes(hs_dec *d, hs_rd *r, hs_rd *sub)
{
    const unsigned char *at = r->p;
    uint64_t n;
    if (hs_rd_varint(d, r, &n) != 0)
        return -1;
    if (n > (uint64_t)(r->end - r->p))
        return hs_bad_wire(d, at, "length past the end");
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

static inline int hs_rd_skip(hs_dec *d, hs_rd *r, int wt)
{
    const unsigned char *at = r->p;
    uint64_t v;
    hs_rd sub;
    switch (wt) {
    case WT_VARINT:
        return hs_rd_varint(d, r, &v);
    case WT_LEN:
        return hs_rd_bytes(d, r, &sub);
    case WT_I64:
    case WT_I32: {
        size_t n = wt == WT_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return hs_bad_wire(d, at, "truncated fixed-size field");
        r->p += n;
        return 0;
    }
    default:
        return hs_bad_wire(d, at, "unsupported wire type");
    }
}

/* A bool field: protobuf-c takes any wire type and reads true when a byte
 * of the field after its tag (a length prefix included) has a low bit set. */
static int hs_rd_bool(hs_dec *d, hs_rd *r, int wt, uint64_t *v)
{
    const unsigned char *from = r->p;
    if (hs_rd_skip(d, r, wt) != 0)
        return -1;
    *v = 0;
    for (const unsigned char *q = from; q < r->p; q++)
        if (*q & 0x7f)
            *v = 1;
    return 0;
}

/* A singular varint field: checks the wire type. */
static int hs_rd_scalar(hs_dec *d, hs_rd *r, int wt, uint64_t *v)
{
    if (wt != WT_VARINT)
        return hs_bad_wire(d, r->p, "wrong wire type");
    return hs_rd_varint(d, r, v);
}

/* Number of varints in a packed run (bytes without the continuation bit;
 * a truncated last varint is caught when it is decoded). */
static size_t hs_count_varints(const hs_rd *r)
{
    size_t n = 0;
    for (const unsigned char *q = r->p; q < r->end; q++)
        n += !(*q & 0x80);
    return n;
}

static int hs_rd_packed(hs_dec *d, hs_rd *sub, uint64_t *out, size_t *n)
{
    while (sub->p < sub->end) {
        if (hs_rd_varint(d, sub, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return 0;
}

/* ---- pass 1: framing and counts ---- */

int hs_pass1(hs_dec *d, hs_rd r, hs_counts *c)
{
    uint32_t f = 0;
    int wt = 0, t;
    while ((t = hs_rd_tag(d, &r, &f, &wt)) == 1) {
        const unsigned char *at = r.p;
        bool is_len = f <= 6 || f == 11;
        bool is_varint = f == 7 || f == 8 || f == 9 || f == 10 || f == 12 || f == 14;
        if ((is_len && wt != WT_LEN) || (is_varint && wt != WT_VARINT) ||
            (f == 13 && wt != WT_VARINT && wt != WT_LEN))
            return hs_bad_wire(d, at, "wrong wire type");
        if (f == 13 && wt == WT_LEN) {
            hs_rd sub = {0};
            if (hs_rd_bytes(d, &r, &sub) != 0)
                return -1;
            c->comments += hs_count_varints(&sub);
            continue;
        }
        if (hs_rd_skip(d, &r, wt) != 0)
            return -1;
        switch (f) {
        case 1: c->types++; break;
        case 2: c->samples++; break;
        case 3: c->mappings++; break;
        case 4: c->locations++; break;
        case 5: c->functions++; break;
        case 6: c->strings++; break;
        case 13: c->comments++; break;
        default: break;
        }
    }
    return t;
}

/* ---- pass 2: messages ---- */

static bool hs_str_ok(const hs_dec *d, uint64_t idx)
{
    return idx < d->n_strings; /* negative int64 values are huge here */
}

static int hs_dec_string(hs_dec *d, hs_rd *sub, bool first)
{
    size_t n = (size_t)(sub->end - sub->p);
    if (first) {
        if (n != 0 && sub->p[0] != '\0') /* C view: "" when it starts with NUL */
            return HS_FAIL(d, "string_table[0] is not empty");
        return 0;
    }
    char *s = hs_arena_alloc(d->arena, n + 1);
    if (!s)
        return HS_FAIL(d, "out of memory");
    memcpy(s, sub->p, n);
    s[n] = '\0';
    if (hs_profile_push_string_raw(d->p, s) != 0)
        return HS_FAIL(d, "out of memory");
    return 0;
}

/* A message whose fields 1..n are all singular varints (ValueType,
 * Mapping, Function, Line, Label), those in bit mask `bools` bools: their
 * values into v[1..n], which the caller zeroes (proto3 defaults); other
 * fields are skipped. */
static int hs_dec_scalars(hs_dec *d, hs_rd sub, uint64_t *v, uint32_t n, uint32_t bools)
{
    uint32_t f = 0;
    int wt = 0, t;
    while ((t = hs_rd_tag(d, &sub, &f, &wt)) == 1) {
        int rc;
        if (f > n)
            rc = hs_rd_skip(d, &sub, wt);
        else if (bools & (1u << f))
            rc = hs_rd_bool(d, &sub, wt, &v[f]);
        else
            rc = hs_rd_scalar(d, &sub, wt, &v[f]);
        if (rc != 0)
            return -1;
    }
    return t;
}

/* A ValueType (one seen twice replaces the first, as protobuf-c does). */
static int hs_dec_value_type(hs_dec *d, hs_rd sub, hs_value_type *vt)
{
    uint64_t v[3] = {0, 0, 0};
    if (hs_dec_scalars(d, sub, v, 2, 0) != 0)
        return -1;
    vt->type = (int64_t)v[1];
    vt->unit = (int64_t)v[2];
    return 0;
}

static bool hs_value_type_ok(const hs_dec *d, const hs_value_type *vt)
{
    return hs_str_ok(d, (uint64_t)vt->type) && hs_str_ok(d, (uint64_t)vt->unit);
}

static int hs_dec_sample_type(hs_dec *d, hs_rd sub)
{
    hs_value_type vt = {0, 0};
    if (hs_dec_value_type(d, sub, &vt) != 0)
        return -1;
    if (!hs_value_type_ok(d, &vt))
        return HS_FAIL(d, "value type has a bad string index");
    if (hs_profile_push_sample_type_raw(d->p, vt.type, vt.unit) < 0)
        return HS_FAIL(d, "out of memory");
    return 0;
}

/* comment: packed or one varint */
static int hs_dec_comments(hs_dec *d, hs_rd *r, int wt)
{
    uint64_t c;
    hs_rd sub;
    if (wt == WT_LEN) {
        if (hs_rd_bytes(d, r, &sub) != 0)
            return -1;
    } else {
        sub = *r;
        if (hs_rd_varint(d, r, &c) != 0)
            return -1;
        sub.end = r->p; /* exactly that varint */
    }
    while (sub.p < sub.end) {
        if (hs_rd_varint(d, &sub, &c) != 0)
            return -1;
        if (!hs_str_ok(d, c))
            return HS_FAIL(d, "comment has a bad string index");
        if (hs_profile_push_comment_raw(d->p, (int64_t)c) != 0)
            return HS_FAIL(d, "out of memory");
    }
    return 0;
}

static int hs_dec_mapping(hs_dec *d, hs_rd sub)
{
    uint64_t v[11] = {0};
    if (hs_dec_scalars(d, sub, v, 10, 1u << 7 | 1u << 8 | 1u << 9 | 1u << 10) != 0)
        return -1;
    hs_mapping m = {v[1], v[2], v[3], v[4], (int64_t)v[5], (int64_t)v[6],
                    v[7] != 0, v[8] != 0, v[9] != 0, v[10] != 0};
    if (!hs_str_ok(d, (uint64_t)m.filename) || !hs_str_ok(d, (uint64_t)m.build_id))
        return HS_FAIL(d, "mapping %llu has a bad string index", (unsigned long long)m.id);
    if (hs_profile_push_mapping_raw(d->p, &m) != 0)
        return HS_FAIL(d, "out of memory");
    return 0;
}

static int hs_dec_function(hs_dec *d, hs_rd sub)
{
    uint64_t v[6] = {0};
    if (hs_dec_scalars(d, sub, v, 5, 0) != 0)
        return -1;
    hs_function fn = {v[1], (int64_t)v[2], (int64_t)v[3], (int64_t)v[4], (int64_t)v[5]};
    if (!hs_str_ok(d, (uint64_t)fn.name) || !hs_str_ok(d, (uint64_t)fn.system_name) ||
        !hs_str_ok(d, (uint64_t)fn.filename))
        return HS_FAIL(d, "function %llu has a bad string index", (unsigned long long)fn.id);
    if (hs_profile_push_function_raw(d->p, &fn) != 0)
        return HS_FAIL(d, "out of memory");
    return 0;
}

static int hs_dec_line(hs_dec *d, hs_rd sub, hs_line *ln)
{
    uint64_t v[4] = {0};
    if (hs_dec_scalars(d, sub, v, 3, 0) != 0)
        return -1;
    *ln = (hs_line){v[1], (int64_t)v[2], (int64_t)v[3]};
    return 0;
}

static int hs_dec_location(hs_dec *d, hs_rd sub)
{
    hs_location l = {0};
    uint32_t f = 0;
    int wt = 0, t;
    uint64_t v;
    /* count the lines first: one arena allocation */
    hs_rd scan = sub, line;
    while ((t = hs_rd_tag(d, &scan, &f, &wt)) == 1) {
        if (f == 4 && wt != WT_LEN)
            return hs_bad_wire(d, scan.p, "wrong wire type");
        if (hs_rd_skip(d, &scan, wt) != 0)
            return -1;
        l.n_lines += f == 4;
    }
    if (t != 0)
        return -1;
    if (l.n_lines) {
        l.lines = hs_arena_alloc(d->arena, l.n_lines * sizeof *l.lines);
        if (!l.lines)
            return HS_FAIL(d, "out of memory");
    }
    size_t k = 0;
    while ((t = hs_rd_tag(d, &sub, &f, &wt)) == 1) {
        if (f == 4) {
            if (hs_rd_bytes(d, &sub, &line) != 0 || hs_dec_line(d, line, &l.lines[k++]) != 0)
                return -1;
        } else if (f == 1 || f == 2 || f == 3 || f == 5) {
            if ((f == 5 ? hs_rd_bool(d, &sub, wt, &v) : hs_rd_scalar(d, &sub, wt, &v)) != 0)
                return -1;
            if (f == 1)
                l.id = v;
            else if (f == 2)
                l.mapping_id = v;
            else if (f == 3)
                l.address = v;
            else
                l.is_folded = v != 0;
        } else if (hs_rd_skip(d, &sub, wt) != 0) {
            return -1;
        }
    }
    if (t != 0)
        return -1;
    if (hs_profile_push_location_raw(d->p, &l) != 0)
        return HS_FAIL(d, "out of memory");
    return 0;
}

static int hs_scratch(hs_dec *d, size_t n)
{
    if (n <= d->scratch_cap)
        return 0;
    size_t cap = d->scratch_cap ? d->scratch_cap : 64;
    while (cap < n)
        cap *= 2;
    uint64_t *s = realloc(d->scratch, cap * sizeof *s);
    if (!s)
        return HS_FAIL(d, "out of memory");
    d->scratch = s;
    d->scratch_cap = cap;
    return 0;
}

static int hs_dec_label(hs_dec *d, hs_rd sub, hs_label *out)
{
    uint64_t v[5] = {0};
    if (hs_dec_scalars(d, sub, v, 4, 0) != 0)
        return -1;
    *out = (hs_label){(int64_t)v[1], (int64_t)v[2], (int64_t)v[3], (int64_t)v[4]};
    if (!hs_str_ok(d, (uint64_t)out->key) || !hs_str_ok(d, (uint64_t)out->str) ||
        !hs_str_ok(d, (uint64_t)out->num_unit))
        return HS_FAIL(d, "sample label has a bad string index");
    return 0;
}

/* The hash of sample `index`'s packed ids (hashed ahead already, or now). */
static uint64_t hs_ids_hash(const hs_dec *d, size_t index, const hs_rd *ids)
{
    if (d->pf[index % HS_AHEAD_RING].ids == ids->p)
        return d->pf[index % HS_AHEAD_RING].h;
    return hs_hmap_hash_bytes(ids->p, (size_t)(ids->end - ids->p), 0);
}

/* The shared array of an earlier sample whose packed ids were the bytes
 * of `run` (hashed as h), or NULL. */
static const hs_stack_key *hs_find_shared(const hs_dec *d, uint64_t h, hs_rd run)
{
    size_t len = (size_t)(run.end - run.p);
    const hs_stack_key *k;
    for (size_t it = SIZE_MAX; (k = hs_stack_index_next(&d->stacks, h, &it));)
        if (k->len == len && memcmp(k->bytes, run.p, len) == 0)
            return k;
    return NULL;
}

/* A shared array (in the profile's arena) of ids[0..n), decoded from the
 * bytes of `run` (hashed as h) and remembered under them. */
static const hs_stack_key *hs_add_shared(hs_dec *d, uint64_t h, hs_rd run, const uint64_t *ids,
                                         size_t n)
{
    size_t len = (size_t)(run.end - run.p);
    if (d->n_classes >= UINT32_MAX - 1 || n > UINT32_MAX || len > UINT32_MAX)
        return NULL;
    uint64_t *copy = hs_arena_memdup(d->arena, ids, (n ? n : 1) * sizeof *ids);
    hs_stack_key *k = copy ? hs_arena_alloc(&d->keys, sizeof *k + len) : NULL;
    if (!k)
        return NULL;
    *k = (hs_stack_key){copy, (uint32_t)n, (uint32_t)d->n_classes++, (uint32_t)len};
    memcpy(k->bytes, run.p, len);
    if (hs_stack_index_add(&d->stacks, h, k) != 0)
        return NULL;
    return k;
}

/* The sample every encoder writes when it has no labels: one packed
 * location_id run, then one packed run of exactly n_types values. Such a
 * sample whose id bytes an earlier one had costs a hash of its bytes, a
 * lookup and a memcmp: no decoding of its ids, no copy. 1 when decoded; 0 when the sample has another form or
 * anything in it is off (hs_dec_sample then decodes it, with its errors);
 * -1 on out of memory. */
static int hs_dec_sample_fast(hs_dec *d, hs_rd sub, size_t index)
{
    hs_rd ids, vals, r = sub;
    if (r.p == r.end || *r.p++ != (1 << 3 | WT_LEN) || hs_rd_bytes(NULL, &r, &ids) != 0 ||
        r.p == r.end || *r.p++ != (2 << 3 | WT_LEN) || hs_rd_bytes(NULL, &r, &vals) != 0 ||
        r.p != r.end)
        return 0;
    uint64_t *out = (uint64_t *)d->values + (index - d->values_first) * d->n_types;
    size_t k = 0;
    for (; vals.p < vals.end; k++)
        if (k == d->n_types || hs_rd_varint(NULL, &vals, &out[k]) != 0)
            return 0;
    if (k != d->n_types)
        return 0;
    uint64_t h = hs_ids_hash(d, index, &ids);
    const hs_stack_key *shared = hs_find_shared(d, h, ids);
    if (!shared) {
        size_t n = 0;
        hs_rd run = ids;
        if (hs_scratch(d, (size_t)(ids.end - ids.p) + 1) != 0)
            return -1;
        if (hs_rd_packed(NULL, &run, d->scratch, &n) != 0)
            return 0;
        if (!(shared = hs_add_shared(d, h, ids, d->scratch, n)))
            return HS_FAIL(d, "out of memory");
    }
    d->stack_of[index] = shared->cls;
    d->p->samples[d->p->n_samples++] =
        (hs_sample){.location_ids = shared->ids, .n_locations = shared->n_ids, .values = (int64_t *)out};
    return 1;
}

int hs_dec_sample(hs_dec *d, hs_rd sub, size_t index)
{
    int fast = hs_dec_sample_fast(d, sub, index);
    if (fast != 0)
        return fast < 0 ? -1 : 0;
    hs_sample s = {0};
    uint32_t f = 0;
    int wt = 0, t;
    /* count ids, values and labels; remember a lone packed location_id run */
    size_t n_ids = 0, n_vals = 0, n_labels = 0, id_fields = 0;
    hs_rd scan = sub, chunk, ids_run = {NULL, NULL};
    while ((t = hs_rd_tag(d, &scan, &f, &wt)) == 1) {
        if ((f == 1 || f == 2) && wt == WT_LEN) {
            if (hs_rd_bytes(d, &scan, &chunk) != 0)
                return -1;
            size_t c = hs_count_varints(&chunk);
            if (f == 1) {
                n_ids += c;
                id_fields++;
                ids_run = chunk;
            } else {
                n_vals += c;
            }
            continue;
        }
        if ((f == 1 || f == 2) && wt != WT_VARINT)
            return hs_bad_wire(d, scan.p, "wrong wire type");
        if (f == 3 && wt != WT_LEN)
            return hs_bad_wire(d, scan.p, "wrong wire type");
        if (hs_rd_skip(d, &scan, wt) != 0)
            return -1;
        n_ids += f == 1;
        id_fields += f == 1;
        n_vals += f == 2;
        n_labels += f == 3;
    }
    if (t != 0)
        return -1;
    if (n_vals != d->n_types)
        return HS_FAIL(d, "sample %zu has %zu values, expected %zu", index, n_vals, d->n_types);
    bool shareable = id_fields == 1 && ids_run.p != NULL;
    hs_arena *a = d->arena;
    s.values = d->values + (index - d->values_first) * d->n_types;
    if (n_labels)
        s.labels = hs_arena_alloc(a, n_labels * sizeof *s.labels);
    if ((n_labels && !s.labels) || hs_scratch(d, n_ids + 1) != 0) /* + 1: the copy below of no ids copies one */
        return HS_FAIL(d, "out of memory");
    size_t ki = 0, kv = 0, kl = 0;
    uint64_t *vals = (uint64_t *)s.values;
    while ((t = hs_rd_tag(d, &sub, &f, &wt)) == 1) {
        if (f == 1 || f == 2) {
            uint64_t *out = f == 1 ? d->scratch : vals;
            size_t *k = f == 1 ? &ki : &kv;
            if (wt == WT_LEN) {
                if (hs_rd_bytes(d, &sub, &chunk) != 0 || hs_rd_packed(d, &chunk, out, k) != 0)
                    return -1;
            } else {
                if (hs_rd_varint(d, &sub, &out[*k]) != 0)
                    return -1;
                (*k)++;
            }
        } else if (f == 3) {
            if (hs_rd_bytes(d, &sub, &chunk) != 0 || hs_dec_label(d, chunk, &s.labels[kl++]) != 0)
                return -1;
        } else if (hs_rd_skip(d, &sub, wt) != 0) {
            return -1;
        }
    }
    if (t != 0)
        return -1;
    s.n_locations = n_ids;
    s.n_labels = n_labels;
    if (shareable) {
        /* the packed bytes are the key: equal bytes, equal ids */
        uint64_t h = hs_ids_hash(d, index, &ids_run);
        const hs_stack_key *k = hs_find_shared(d, h, ids_run);
        if (!k)
            k = hs_add_shared(d, h, ids_run, d->scratch, n_ids);
        if (k) {
            s.location_ids = k->ids;
            d->stack_of[index] = k->cls;
        }
    } else
        s.location_ids = hs_arena_memdup(a, d->scratch, (n_ids ? n_ids : 1) * sizeof *d->scratch);
    if (!s.location_ids)
        return HS_FAIL(d, "out of memory");
    d->p->samples[d->p->n_samples++] = s;
    return 0;
}

/* Give the pages of the input before `upto` back to the kernel, a few MiB
 * at a time: the model grows while the input shrinks, so the peak is not
 * their sum. Nothing behind the cursor is read again. */
void hs_release_read(hs_dec *d, const unsigned char *upto)
{
    size_t page = d->page, at = (size_t)(upto - d->base);
    if (d->rest_done) { /* nor by the other part's thread */
        size_t done = atomic_load_explicit(d->rest_done, memory_order_acquire);
        at = done < at ? done : at;
    }
    at = at < d->keep_from ? at : d->keep_from;
    at &= ~(page - 1);
    if (!d->release || at < d->released + ((size_t)4 << 20))
        return;
    /* the mapping starts page-aligned (mmap), so offsets are page offsets */
    if (madvise((void *)(uintptr_t)(d->base + d->released), at - d->released, MADV_DONTNEED) == 0)
        d->released = at;
}

/* Best effort, no errors: if a top-level sample field starts at q and its
 * first field is a packed location_id run (as every encoder writes them),
 * the run and the end of the sample. */
static bool hs_peek_sample_ids(const unsigned char *q, const unsigned char *end, hs_rd *ids,
                               const unsigned char **next)
{
    hs_rd r = {q, end}, sub;
    if (r.p == r.end || *r.p++ != (2 << 3 | WT_LEN) || hs_rd_bytes(NULL, &r, &sub) != 0)
        return false; /* (no decoder: errors are not reported) */
    *next = r.p;
    if (sub.p == sub.end || *sub.p++ != (1 << 3 | WT_LEN) || hs_rd_bytes(NULL, &sub, ids) != 0)
        return false;
    return true;
}

/* Before sample `index` (whose field ends at `here`) is decoded: the map
 * slots of the samples up to HS_AHEAD_SLOT ahead and the shared array of the
 * one HS_AHEAD_ARRAY ahead are fetched into the cache, so that the lookups
 * of hs_dec_sample do not wait for memory (they were most of the decoding
 * time of a large profile; one sample ahead was not enough). Only a hint:
 * nothing here changes what is decoded. */
void hs_prefetch_samples(hs_dec *d, size_t index, const unsigned char *here,
                         const unsigned char *end)
{
    if (d->pf_seq <= index) { /* fell behind (first sample, other fields) */
        d->pf_seq = index + 1;
        d->pf_pos = here;
    }
    while (d->pf_pos && d->pf_seq <= index + HS_AHEAD_SLOT) {
        hs_rd ids = {0};
        const unsigned char *next;
        if (!hs_peek_sample_ids(d->pf_pos, end, &ids, &next)) {
            d->pf_pos = NULL;
            break;
        }
        uint64_t h = hs_hmap_hash_bytes(ids.p, (size_t)(ids.end - ids.p), 0);
        d->pf[d->pf_seq % HS_AHEAD_RING].ids = ids.p;
        d->pf[d->pf_seq % HS_AHEAD_RING].h = h;
        if (d->stacks.cap)
            __builtin_prefetch(&d->stacks.s[h & (d->stacks.cap - 1)]);
        d->pf_pos = next;
        d->pf_seq++;
    }
    size_t j = index + HS_AHEAD_ARRAY, it = SIZE_MAX;
    const hs_stack_key *k;
    if (j < d->pf_seq && (k = hs_stack_index_next(&d->stacks, d->pf[j % HS_AHEAD_RING].h, &it)))
        __builtin_prefetch(k);
}

/* Which top-level fields a pass 2 decodes: all, or one part of them, the
 * two parts on two threads (hs_decode_parts). */
typedef enum { HS_PART_ALL, HS_PART_SAMPLES, HS_PART_REST } hs_part;

static int hs_pass2(hs_dec *d, hs_rd r, hs_part part)
{
    hs_profile *p = d->p;
    uint32_t f = 0;
    int wt = 0, t;
    bool first_string = true;
    uint64_t v;
    hs_rd sub;
    _Atomic size_t *done = part == HS_PART_REST ? d->rest_done : NULL;
    for (;;) {
        if (r.p == d->skip_from) { /* samples decoded already: their bytes may be gone */
            if (d->spec_wrong && part != HS_PART_REST) {
                d->fail_at = r.p;
                return HS_FAIL(d, "sample 0 has %zu values, expected %zu", d->spec_types, d->n_types);
            }
            r.p = d->skip_to;
        }
        d->fail_at = r.p;
        if ((t = hs_rd_tag(d, &r, &f, &wt)) != 1)
            break;
        int rc = 0;
        if (part != HS_PART_ALL && (f == 2) != (part == HS_PART_SAMPLES)) {
            if (hs_rd_skip(d, &r, wt) != 0) /* the other part's (framing checked in pass 1) */
                return -1;
            if (done)
                atomic_store_explicit(done, (size_t)(r.p - d->base), memory_order_release);
            continue;
        }
        switch (f) {
        case 1: rc = hs_rd_bytes(d, &r, &sub) || hs_dec_sample_type(d, sub); break;
        case 2:
            rc = hs_rd_bytes(d, &r, &sub);
            if (rc == 0)
                hs_prefetch_samples(d, p->n_samples, r.p, r.end);
            rc = rc || hs_dec_sample(d, sub, p->n_samples);
            break;
        case 3: rc = hs_rd_bytes(d, &r, &sub) || hs_dec_mapping(d, sub); break;
        case 4: rc = hs_rd_bytes(d, &r, &sub) || hs_dec_location(d, sub); break;
        case 5: rc = hs_rd_bytes(d, &r, &sub) || hs_dec_function(d, sub); break;
        case 6:
            rc = hs_rd_bytes(d, &r, &sub) || hs_dec_string(d, &sub, first_string);
            first_string = false;
            break;
        case 11: rc = hs_rd_bytes(d, &r, &sub) || hs_dec_value_type(d, sub, &p->period_type); break;
        case 13: rc = hs_dec_comments(d, &r, wt); break;
        case 7: case 8: case 9: case 10: case 12: case 14:
            rc = hs_rd_varint(d, &r, &v);
            switch (f) {
            case 7: p->drop_frames = (int64_t)v; break;
            case 8: p->keep_frames = (int64_t)v; break;
            case 9: p->time_nanos = (int64_t)v; break;
            case 10: p->duration_nanos = (int64_t)v; break;
            case 12: p->period = (int64_t)v; break;
            default: p->default_sample_type = (int64_t)v; break;
            }
            break;
        default: rc = hs_rd_skip(d, &r, wt); break;
        }
        if (rc != 0)
            return -1;
        if (done)
            atomic_store_explicit(done, (size_t)(r.p - d->base), memory_order_release);
        else
            hs_release_read(d, r.p);
    }
    if (t != 0)
        return -1;
    d->fail_at = r.end;
    if (done)
        atomic_store_explicit(done, (size_t)(r.end - d->base), memory_order_release);
    if (part == HS_PART_SAMPLES)
        return 0;
    if (!hs_value_type_ok(d, &p->period_type))
        return HS_FAIL(d, "value type has a bad string index");
    if (!hs_str_ok(d, (uint64_t)p->drop_frames) || !hs_str_ok(d, (uint64_t)p->keep_frames) ||
        !hs_str_ok(d, (uint64_t)p->default_sample_type))
        return HS_FAIL(d, "profile has a bad string index");
    return 0;
}

/* ---- validation of id references (after the id maps are built) ---- */

static int hs_check_refs(hs_dec *d)
{
    const hs_profile *p = d->p;
    for (size_t i = 0; i < p->n_locations; i++) {
        const hs_location *l = &p->locations[i];
        if (l->mapping_id && !hs_profile_mapping(p, l->mapping_id))
            return HS_FAIL(d, "location %llu references unknown mapping %llu",
                           (unsigned long long)l->id, (unsigned long long)l->mapping_id);
        for (size_t j = 0; j < l->n_lines; j++)
            if (!hs_profile_function(p, l->lines[j].function_id))
                return HS_FAIL(d, "location %llu references unknown function %llu",
                               (unsigned long long)l->id,
                               (unsigned long long)l->lines[j].function_id);
    }
    /* a shared id array is checked once */
    d->checked = calloc(d->n_classes + 1, 1);
    if (!d->checked)
        return HS_FAIL(d, "out of memory");
    bool dense = hs_profile_locations_dense(p);
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        uint32_t c = d->stack_of[i];
        if (c != UINT32_MAX && d->checked[c])
            continue;
        for (size_t j = 0; j < s->n_locations; j++)
            if (!hs_profile_location_at(p, s->location_ids[j], dense))
                return HS_FAIL(d, "sample %zu references unknown location %llu", i,
                               (unsigned long long)s->location_ids[j]);
        if (c != UINT32_MAX)
            d->checked[c] = 1;
    }
    return 0;
}

/* ---- pass 2 on two threads ---- */

/* Below this many bytes one thread decodes everything (a thread costs more
 * than the part it would take), unless told otherwise. */
#define HS_PARTS_MIN ((size_t)1 << 20)

/* The part of pass 2 that is not samples (strings, locations, functions,
 * mappings, the scalars), on its own thread with its own decoder state, error
 * and arena. */
typedef struct {
    hs_dec d;
    hs_rd all;
    int rc;
    hs_arena arena;
    _Atomic size_t done; /* bytes of the input it has decoded or skipped */
    char err[512];
} hs_rest_job;

static void *hs_rest_main(void *arg)
{
    hs_rest_job *j = arg;
    j->rc = hs_pass2(&j->d, j->all, HS_PART_REST);
    return NULL;
}

/* Pass 2 with the samples decoded on this thread and the rest on another
 * (they write disjoint parts of the model; the rest's arena joins the
 * profile's). The error is the one of the first field that failed, as one
 * pass in file order would report it. One thread when the input is small
 * or no thread can be started. */
static int hs_pass2_parts(hs_dec *d, hs_rd all, int threads)
{
    bool two = threads == 2 || (threads == 0 && (size_t)(all.end - all.p) >= HS_PARTS_MIN);
    hs_rest_job *j = two ? calloc(1, sizeof *j) : NULL;
    if (!j)
        return hs_pass2(d, all, HS_PART_ALL);
    j->d = (hs_dec){.base = d->base, .p = d->p, .n_strings = d->n_strings, .n_types = d->n_types,
                    .err = j->err, .errlen = sizeof j->err, .arena = &j->arena,
                    .rest_done = &j->done, .page = d->page, .keep_from = SIZE_MAX,
                    .skip_from = d->skip_from, .skip_to = d->skip_to};
    j->all = all;
    atomic_init(&j->done, 0);
    pthread_t t;
    d->rest_done = &j->done;
    if (pthread_create(&t, NULL, hs_rest_main, j) != 0) {
        d->rest_done = NULL;
        free(j);
        return hs_pass2(d, all, HS_PART_ALL);
    }
    int rc = hs_pass2(d, all, HS_PART_SAMPLES);
    int jr = pthread_join(t, NULL);
    d->rest_done = NULL;
    if (jr != 0) { /* cannot happen for a joinable thread; j may still be in use: kept */
        snprintf(d->err, d->errlen, "decoder thread: %s", strerror(jr));
        return -1;
    }
    hs_arena_adopt(d->arena, &j->arena);
    if (j->rc != 0 && (rc == 0 || j->d.fail_at < d->fail_at)) {
        snprintf(d->err, d->errlen, "%s", j->err);
        rc = -1;
    }
    free(j->d.scratch);
    free(j);
    return rc;
}

hs_profile *hs_profile_decode_pb(const unsigned char *data, size_t len, bool release, char *err,
                                 size_t errlen)
{
    return hs_profile_decode_pb_threads(data, len, release, 0, err, errlen);
}

void hs_dec_free(hs_dec *d)
{
    free(d->scratch);
    free(d->checked);
    free(d->stacks.s);
    hs_arena_free(&d->keys);
}

/* After pass 1 (c: the counts of every field; d->p holds the samples
 * decoded already, if any): the tables at their final sizes, pass 2 over
 * all, the ids checked. The profile, or NULL with d's message. */
hs_profile *hs_decode_rest(hs_dec *d, hs_rd all, const hs_counts *c, int threads)
{
    hs_profile *p = d->p;
    size_t done = p->n_samples, n = c->samples ? c->samples : 1;
    d->n_strings = c->strings ? c->strings : 1;
    d->n_types = c->types;
    d->spec_wrong = done && d->spec_types != d->n_types;
    int rc = 0;
    uint32_t *stack_of = realloc(d->stack_of, n * sizeof *stack_of);
    if (stack_of) {
        d->stack_of = stack_of;
        memset(stack_of + done, 0xff, (n - done) * sizeof *stack_of);
    }
    /* one block for the values of the samples left (a count that overflows fails) */
    size_t left = c->samples - done, n_values = left * d->n_types;
    if (d->n_types && n_values / d->n_types != left)
        n_values = SIZE_MAX;
    d->values = n_values <= SIZE_MAX / 8 ? hs_arena_alloc(hs_profile_arena(p), n_values * 8) : NULL;
    d->values_first = done;
    if (hs_profile_reserve_tables(p, d->n_strings, c->mappings, c->functions, c->locations) != 0 ||
        hs_profile_reserve_samples(p, c->samples) != 0 ||
        (!d->stacks.s && hs_stack_index_init(&d->stacks, c->samples / 2) != 0) || !stack_of ||
        !d->values)
        rc = HS_FAIL(d, "out of memory");
    if (rc == 0)
        rc = hs_pass2_parts(d, all, threads);
    if (rc == 0 && hs_profile_reindex(p, d->err, d->errlen) != 0)
        rc = -1;
    if (rc == 0)
        rc = hs_check_refs(d);
    hs_dec_free(d);
    if (rc != 0) {
        free(d->stack_of);
        hs_profile_free(p);
        return NULL;
    }
    hs_profile_set_stack_classes(p, d->stack_of, p->n_samples, d->n_classes);
    return p;
}

hs_profile *hs_profile_decode_pb_threads(const unsigned char *data, size_t len, bool release,
                                         int threads, char *err, size_t errlen)
{
    if (len == 0) {
        snprintf(err, errlen, "empty profile");
        return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    hs_dec d = {.base = data, .err = err, .errlen = errlen, .release = release && page > 0,
                .page = page > 0 ? (size_t)page : 4096, .keep_from = SIZE_MAX};
    hs_rd all = {data, data + len};
    hs_counts c = {0};
    if (hs_pass1(&d, all, &c) != 0)
        return NULL;
    if (!(d.p = hs_profile_new())) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d.arena = hs_profile_arena(d.p);
    return hs_decode_rest(&d, all, &c, threads);
}
