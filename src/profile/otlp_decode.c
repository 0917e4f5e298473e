/* otlp_decode.c — an OTLP ExportProfilesServiceRequest (protobuf, or JSON
 * through otlp_json.c) -> pprof profiles (otlp.h). The request is unpacked
 * by protobuf-c's generated code (proto/otlp/), every reference checked
 * (nothing is converted before the whole request has passed), then the
 * OTLP profiles of one resource and scope with the same time, period and
 * attributes are joined into one pprof profile, a sample type each. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strtab.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "profile/otlp.h"
#include "profile/otlp_internal.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles RProf;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles SProf;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

#define AV(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x

typedef struct {
    const OtlpRequest *rq;
    const Dict *d;
    char *err;
    size_t errlen;
} chk;

__attribute__((format(printf, 2, 3))) static int bad(chk *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return HS_OTLP_BAD;
}

/* index v of a table of n entries named table, referred to by what */
#define CHECK_IX(c, v, n, table, ...)                                                                    \
    do {                                                                                                 \
        if ((v) < 0 || (size_t)(v) >= (n)) {                                                             \
            char where_[320];                                                                            \
            snprintf(where_, sizeof where_, __VA_ARGS__);                                                \
            return bad(c, "%s: %" PRId64 " is out of range (%s has %zu entries)", where_, (int64_t)(v), \
                       table, (size_t)(n));                                                              \
        }                                                                                                \
    } while (0)

static int check_value(chk *c, const AnyValue *v, const char *where, size_t i)
{
    if (v && v->value_case == AV(STRING_VALUE_STRINDEX))
        CHECK_IX(c, v->string_value_strindex, c->d->n_string_table, "string_table", "%s[%zu].value.stringValueStrindex",
                 where, i);
    return 0;
}

static int check_attr_list(chk *c, const int32_t *ix, size_t n, const char *fmt, size_t a, size_t b)
{
    char where[160];
    for (size_t i = 0; i < n; i++) {
        if (ix[i] < 0 || (size_t)ix[i] >= c->d->n_attribute_table) {
            snprintf(where, sizeof where, fmt, a, b);
            return bad(c, "%s.attribute_indices[%zu]: %" PRId32 " is out of range (attribute_table has %zu entries)",
                       where, i, ix[i], c->d->n_attribute_table);
        }
    }
    return 0;
}

/* The dictionary: tables present with their zero entry first, every
 * reference in range. */
static int check_dict(chk *c)
{
    const Dict *d = c->d;
    size_t ns = d->n_string_table;
    if (ns == 0 || d->string_table[0][0])
        return bad(c, "dictionary.string_table[0] must be \"\" (entry 0 of every table is the zero value)");
    if (!d->n_mapping_table || !d->n_location_table || !d->n_function_table || !d->n_attribute_table ||
        !d->n_stack_table)
        return bad(c, "dictionary.%s is empty: entry 0 (the zero value) must be present",
                   !d->n_mapping_table    ? "mapping_table"
                   : !d->n_location_table ? "location_table"
                   : !d->n_function_table ? "function_table"
                   : !d->n_attribute_table ? "attribute_table"
                                           : "stack_table");
    const Mapping *m0 = d->mapping_table[0];
    if (m0->memory_start || m0->memory_limit || m0->file_offset || m0->filename_strindex || m0->n_attribute_indices)
        return bad(c, "dictionary.mapping_table[0] is not the zero value");
    const Location *l0 = d->location_table[0];
    if (l0->mapping_index || l0->address || l0->n_lines || l0->n_attribute_indices)
        return bad(c, "dictionary.location_table[0] is not the zero value");
    const Function *f0 = d->function_table[0];
    if (f0->name_strindex || f0->system_name_strindex || f0->filename_strindex || f0->start_line)
        return bad(c, "dictionary.function_table[0] is not the zero value");
    if (d->attribute_table[0]->key_strindex || d->attribute_table[0]->unit_strindex ||
        (d->attribute_table[0]->value && d->attribute_table[0]->value->value_case != AV(_NOT_SET)))
        return bad(c, "dictionary.attribute_table[0] is not the zero value");
    if (d->stack_table[0]->n_location_indices)
        return bad(c, "dictionary.stack_table[0] is not the zero value");
    for (size_t i = 0; i < d->n_link_table; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Link *l = d->link_table[i];
        if ((l->trace_id.len != 0 && l->trace_id.len != 16) || (l->span_id.len != 0 && l->span_id.len != 8))
            return bad(c, "dictionary.link_table[%zu]: trace_id is 16 bytes and span_id 8 (got %zu and %zu)", i,
                       l->trace_id.len, l->span_id.len);
        bool nonzero = false;
        for (size_t k = 0; k < l->trace_id.len; k++)
            nonzero |= l->trace_id.data[k] != 0;
        for (size_t k = 0; k < l->span_id.len; k++)
            nonzero |= l->span_id.data[k] != 0;
        if (i == 0 && nonzero)
            return bad(c, "dictionary.link_table[0] is not the zero value");
    }
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const Mapping *m = d->mapping_table[i];
        CHECK_IX(c, m->filename_strindex, ns, "string_table", "dictionary.mapping_table[%zu].filename_strindex", i);
        int st = check_attr_list(c, m->attribute_indices, m->n_attribute_indices, "dictionary.mapping_table[%zu]", i, 0);
        if (st)
            return st;
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const Location *l = d->location_table[i];
        CHECK_IX(c, l->mapping_index, d->n_mapping_table, "mapping_table",
                 "dictionary.location_table[%zu].mapping_index", i);
        for (size_t j = 0; j < l->n_lines; j++)
            CHECK_IX(c, l->lines[j]->function_index, d->n_function_table, "function_table",
                     "dictionary.location_table[%zu].lines[%zu].function_index", i, j);
        int st = check_attr_list(c, l->attribute_indices, l->n_attribute_indices, "dictionary.location_table[%zu]", i, 0);
        if (st)
            return st;
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const Function *f = d->function_table[i];
        CHECK_IX(c, f->name_strindex, ns, "string_table", "dictionary.function_table[%zu].name_strindex", i);
        CHECK_IX(c, f->system_name_strindex, ns, "string_table", "dictionary.function_table[%zu].system_name_strindex", i);
        CHECK_IX(c, f->filename_strindex, ns, "string_table", "dictionary.function_table[%zu].filename_strindex", i);
    }
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        const Attr *a = d->attribute_table[i];
        CHECK_IX(c, a->key_strindex, ns, "string_table", "dictionary.attribute_table[%zu].key_strindex", i);
        CHECK_IX(c, a->unit_strindex, ns, "string_table", "dictionary.attribute_table[%zu].unit_strindex", i);
        int st = check_value(c, a->value, "dictionary.attribute_table", i);
        if (st)
            return st;
    }
    for (size_t i = 0; i < d->n_stack_table; i++)
        for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
            CHECK_IX(c, d->stack_table[i]->location_indices[j], d->n_location_table, "location_table",
                     "dictionary.stack_table[%zu].location_indices[%zu]", i, j);
    return 0;
}

static int check_vt(chk *c, const ValueType *vt, const char *what, size_t r, size_t s, size_t p)
{
    if (!vt)
        return 0;
    CHECK_IX(c, vt->type_strindex, c->d->n_string_table, "string_table",
             "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu].%s.type_strindex", r, s, p, what);
    CHECK_IX(c, vt->unit_strindex, c->d->n_string_table, "string_table",
             "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu].%s.unit_strindex", r, s, p, what);
    return 0;
}

static int check_profiles(chk *c)
{
    const OtlpRequest *rq = c->rq;
    const Dict *d = c->d;
    char where[120];
    for (size_t r = 0; r < rq->n_resource_profiles; r++) {
        const RProf *rp = rq->resource_profiles[r];
        if (rp->resource)
            for (size_t i = 0; i < rp->resource->n_attributes; i++) {
                const KeyValue *kv = rp->resource->attributes[i];
                CHECK_IX(c, kv->key_strindex, d->n_string_table, "string_table",
                         "resource_profiles[%zu].resource.attributes[%zu].key_strindex", r, i);
                if (kv->value && kv->value->value_case == AV(STRING_VALUE_STRINDEX))
                    CHECK_IX(c, kv->value->string_value_strindex, d->n_string_table, "string_table",
                             "resource_profiles[%zu].resource.attributes[%zu].value.string_value_strindex", r, i);
            }
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const SProf *sp = rp->scope_profiles[s];
            for (size_t p = 0; p < sp->n_profiles; p++) {
                const Prof *pr = sp->profiles[p];
                int st = check_vt(c, pr->sample_type, "sample_type", r, s, p);
                if (!st)
                    st = check_vt(c, pr->period_type, "period_type", r, s, p);
                if (st)
                    return st;
                snprintf(where, sizeof where, "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]", r, s, p);
                for (size_t i = 0; i < pr->n_attribute_indices; i++)
                    CHECK_IX(c, pr->attribute_indices[i], d->n_attribute_table, "attribute_table",
                             "%s.attribute_indices[%zu]", where, i);
                if (pr->profile_id.len != 0 && pr->profile_id.len != 16)
                    return bad(c, "%s.profile_id: %zu bytes, not 16", where, pr->profile_id.len);
                for (size_t i = 0; i < pr->n_samples; i++) {
                    const Sample *sm = pr->samples[i];
                    CHECK_IX(c, sm->stack_index, d->n_stack_table, "stack_table", "%s.samples[%zu].stack_index", where, i);
                    CHECK_IX(c, sm->link_index, d->n_link_table ? d->n_link_table : 1, "link_table",
                             "%s.samples[%zu].link_index", where, i);
                    for (size_t k = 0; k < sm->n_attribute_indices; k++)
                        CHECK_IX(c, sm->attribute_indices[k], d->n_attribute_table, "attribute_table",
                                 "%s.samples[%zu].attribute_indices[%zu]", where, i, k);
                    if (!sm->n_values && !sm->n_timestamps_unix_nano)
                        return bad(c, "%s.samples[%zu]: neither values nor timestamps", where, i);
                    if (sm->n_values && sm->n_timestamps_unix_nano && sm->n_values != sm->n_timestamps_unix_nano)
                        return bad(c, "%s.samples[%zu]: %zu values but %zu timestamps", where, i, sm->n_values,
                                   sm->n_timestamps_unix_nano);
                    for (size_t k = 0; k < sm->n_values; k++)
                        if (sm->values[k] < 0)
                            return bad(c, "%s.samples[%zu].values[%zu]: negative (%" PRId64 ")", where, i, k,
                                       sm->values[k]);
                }
            }
        }
    }
    return 0;
}

/* ---- conversion ---- */

static const char *dstr(const Dict *d, int32_t i)
{
    return i > 0 && (size_t)i < d->n_string_table ? d->string_table[i] : "";
}

static void hexs(const unsigned char *b, size_t n, char *out)
{
    static const char x[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = x[b[i] >> 4];
        out[2 * i + 1] = x[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* An AnyValue as text (for a label or a resource attribute): NULL if it
 * has none. Returned in buf (cap bytes). */
static const char *value_text(const Dict *d, const AnyValue *v, char *buf, size_t cap)
{
    if (!v)
        return NULL;
    switch (v->value_case) {
    case AV(STRING_VALUE):
        return v->string_value;
    case AV(STRING_VALUE_STRINDEX):
        return dstr(d, v->string_value_strindex);
    case AV(BOOL_VALUE):
        return v->bool_value ? "true" : "false";
    case AV(INT_VALUE):
        snprintf(buf, cap, "%" PRId64, v->int_value);
        return buf;
    case AV(DOUBLE_VALUE):
        snprintf(buf, cap, "%.17g", v->double_value);
        return buf;
    case AV(BYTES_VALUE):
        if (v->bytes_value.len * 2 + 1 > cap)
            return NULL;
        hexs(v->bytes_value.data, v->bytes_value.len, buf);
        return buf;
    case AV(ARRAY_VALUE): {
        size_t n = 0;
        buf[0] = '\0';
        for (size_t i = 0; v->array_value && i < v->array_value->n_values; i++) {
            char one[64];
            const char *t = value_text(d, v->array_value->values[i], one, sizeof one);
            if (t)
                n += (size_t)snprintf(buf + (n < cap ? n : cap - 1), n < cap ? cap - n : 1, "%s%s", i ? "," : "", t);
        }
        return buf;
    }
    default:
        return NULL;
    }
}

/* An OTLP attribute list's entry by key, or NULL. */
static const Attr *find_attr(const Dict *d, const int32_t *ix, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (ix[i] > 0 && strcmp(dstr(d, d->attribute_table[ix[i]]->key_strindex), key) == 0)
            return d->attribute_table[ix[i]];
    return NULL;
}

static bool attr_true(const Dict *d, const int32_t *ix, size_t n, const char *key)
{
    const Attr *a = find_attr(d, ix, n, key);
    return a && a->value && a->value->value_case == AV(BOOL_VALUE) && a->value->bool_value;
}

typedef struct {
    const Dict *d;
    hs_profile *p;
    uint64_t *map_id, *fn_id, *loc_id; /* OTLP index -> pprof id, 0: not yet */
    int oom;
} conv;

static uint64_t conv_mapping(conv *v, int32_t i)
{
    if (i <= 0)
        return 0;
    if (v->map_id[i])
        return v->map_id[i];
    const Mapping *m = v->d->mapping_table[i];
    char buf[300];
    const Attr *b = find_attr(v->d, m->attribute_indices, m->n_attribute_indices, HS_OTLP_ATTR_BUILD_ID);
    const char *bid = b ? value_text(v->d, b->value, buf, sizeof buf) : NULL;
    uint64_t id = hs_profile_add_mapping(v->p, m->memory_start, m->memory_limit, m->file_offset,
                                         dstr(v->d, m->filename_strindex), bid ? bid : "");
    if (!id) {
        v->oom = 1;
        return 0;
    }
    hs_mapping *hm = &v->p->mappings[v->p->n_mappings - 1];
    hm->has_functions = attr_true(v->d, m->attribute_indices, m->n_attribute_indices, HS_OTLP_ATTR_HAS_FUNCTIONS);
    hm->has_filenames = attr_true(v->d, m->attribute_indices, m->n_attribute_indices, HS_OTLP_ATTR_HAS_FILENAMES);
    hm->has_line_numbers = attr_true(v->d, m->attribute_indices, m->n_attribute_indices, HS_OTLP_ATTR_HAS_LINE_NUMBERS);
    hm->has_inline_frames =
        attr_true(v->d, m->attribute_indices, m->n_attribute_indices, HS_OTLP_ATTR_HAS_INLINE_FRAMES);
    return v->map_id[i] = id;
}

static uint64_t conv_function(conv *v, int32_t i)
{
    if (v->fn_id[i])
        return v->fn_id[i];
    const Function *f = v->d->function_table[i];
    uint64_t id = hs_profile_add_function(v->p, dstr(v->d, f->name_strindex), dstr(v->d, f->system_name_strindex),
                                          dstr(v->d, f->filename_strindex), f->start_line);
    if (!id)
        v->oom = 1;
    return v->fn_id[i] = id;
}

static uint64_t conv_location(conv *v, int32_t i)
{
    if (v->loc_id[i])
        return v->loc_id[i];
    const Location *l = v->d->location_table[i];
    hs_line stackbuf[16], *lines = l->n_lines <= 16 ? stackbuf : malloc(l->n_lines * sizeof *lines);
    if (!lines) {
        v->oom = 1;
        return 0;
    }
    for (size_t j = 0; j < l->n_lines; j++)
        lines[j] = (hs_line){conv_function(v, l->lines[j]->function_index), l->lines[j]->line, l->lines[j]->column};
    uint64_t id = hs_profile_add_location(v->p, conv_mapping(v, l->mapping_index), l->address, lines, l->n_lines);
    if (lines != stackbuf)
        free(lines);
    if (!id) {
        v->oom = 1;
        return 0;
    }
    v->p->locations[v->p->n_locations - 1].is_folded =
        attr_true(v->d, l->attribute_indices, l->n_attribute_indices, HS_OTLP_ATTR_IS_FOLDED);
    return v->loc_id[i] = id;
}

/* ---- time slices: per-sample timestamps kept to HS_OTLP_SLICE_NS ----
 * A group whose samples' timestamps fall in more than one slice becomes a
 * profile per slice (its time and duration the slice's, within the OTLP
 * profile's own window), plus one with the OTLP profile's window for the
 * values that have no timestamp, so a query of a time range gets the
 * samples taken in it. */
typedef struct {
    int64_t width;  /* ns; a multiple of HS_OTLP_SLICE_NS */
    int64_t index;  /* the slice [index * width, (index + 1) * width) */
    bool undated;   /* the values without a timestamp instead */
} slice;

/* The slice of timestamp ts (not 0). */
static int64_t slice_of(uint64_t ts, int64_t width)
{
    return (int64_t)(ts / (uint64_t)width);
}

/* Whether value k of sample s (any k when it has no timestamps) belongs to
 * slice sl. */
static bool in_slice(const Sample *s, size_t k, const slice *sl)
{
    if (!s->n_timestamps_unix_nano || !s->timestamps_unix_nano[k])
        return sl->undated;
    return !sl->undated && slice_of(s->timestamps_unix_nano[k], sl->width) == sl->index;
}

/* The slices of group prs[0..n): 0 when every timestamp falls in one
 * slice (the group stays one profile), else the number written to
 * out[0..HS_OTLP_MAX_SLICES + 1), the slice of undated values first when
 * there are any. Wider slices when the timestamps span more than
 * HS_OTLP_MAX_SLICES of them. */
static size_t group_slices(Prof *const *prs, size_t n, slice *out)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    bool undated = false;
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < prs[t]->n_samples; i++) {
            const Sample *s = prs[t]->samples[i];
            undated |= !s->n_timestamps_unix_nano;
            for (size_t k = 0; k < s->n_timestamps_unix_nano; k++) {
                uint64_t ts = s->timestamps_unix_nano[k];
                undated |= !ts;
                if (ts && ts < lo)
                    lo = ts;
                if (ts > hi)
                    hi = ts;
            }
        }
    if (!hi)
        return 0;
    int64_t width = HS_OTLP_SLICE_NS;
    while ((uint64_t)(slice_of(hi, width) - slice_of(lo, width)) >= HS_OTLP_MAX_SLICES)
        width *= 2;
    if (slice_of(hi, width) == slice_of(lo, width))
        return 0;
    bool used[HS_OTLP_MAX_SLICES] = {0};
    int64_t first = slice_of(lo, width);
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < prs[t]->n_samples; i++) {
            const Sample *s = prs[t]->samples[i];
            for (size_t k = 0; k < s->n_timestamps_unix_nano; k++)
                if (s->timestamps_unix_nano[k])
                    used[slice_of(s->timestamps_unix_nano[k], width) - first] = true;
        }
    size_t m = 0;
    if (undated)
        out[m++] = (slice){.width = width, .undated = true};
    for (int64_t j = 0; j < HS_OTLP_MAX_SLICES; j++)
        if (used[j])
            out[m++] = (slice){.width = width, .index = first + j};
    return m;
}

/* One pprof profile from the OTLP profiles prs[0..n) (one sample type
 * each): the values of slice sl only when sl is not NULL. */
static int conv_group(const Dict *d, Prof *const *prs, size_t n, const slice *sl, size_t max_samples, hs_profile **out,
                      char *err, size_t errlen)
{
    conv v = {.d = d};
    hs_strtab keys = {0};
    int64_t *vals = NULL;
    size_t cap = 0;
    const Sample **first = NULL; /* each joined sample's first OTLP sample */
    hs_label *labels = NULL;
    uint64_t *locs = NULL;
    int rc = HS_OTLP_NOMEM;
    v.p = hs_profile_new();
    v.map_id = calloc(d->n_mapping_table, sizeof *v.map_id);
    v.fn_id = calloc(d->n_function_table, sizeof *v.fn_id);
    v.loc_id = calloc(d->n_location_table, sizeof *v.loc_id);
    if (!v.p || !v.map_id || !v.fn_id || !v.loc_id || hs_strtab_init(&keys))
        goto done;
    /* every mapping, in the table's order: pprof's first mapping is the
     * main binary (a shared dictionary's other mappings cost only a row) */
    for (size_t i = 1; i < d->n_mapping_table; i++)
        if (!conv_mapping(&v, (int32_t)i))
            goto done;
    for (size_t t = 0; t < n; t++) {
        const ValueType *st = prs[t]->sample_type;
        if (hs_profile_add_sample_type(v.p, st ? dstr(d, st->type_strindex) : "", st ? dstr(d, st->unit_strindex) : "") < 0)
            goto done;
    }
    const Prof *p0 = prs[0];
    if (p0->period_type || p0->period)
        hs_profile_set_period(v.p, p0->period_type ? dstr(d, p0->period_type->type_strindex) : "",
                              p0->period_type ? dstr(d, p0->period_type->unit_strindex) : "", p0->period);
    v.p->time_nanos = (int64_t)p0->time_unix_nano;
    v.p->duration_nanos = (int64_t)p0->duration_nano;
    if (sl && !sl->undated) { /* the slice, within the profile's window when it has one */
        int64_t a0 = sl->index * sl->width, a1 = a0 + sl->width;
        int64_t w0 = v.p->time_nanos, w1 = w0 + v.p->duration_nanos;
        if (w0 > a0 && w0 < a1)
            a0 = w0;
        if (v.p->duration_nanos > 0 && w1 > a0 && w1 < a1)
            a1 = w1;
        v.p->time_nanos = a0;
        v.p->duration_nanos = a1 - a0;
    }
    const Attr *a;
    if ((a = find_attr(d, p0->attribute_indices, p0->n_attribute_indices, HS_OTLP_ATTR_COMMENT)) && a->value) {
        if (a->value->value_case == AV(ARRAY_VALUE) && a->value->array_value) {
            for (size_t i = 0; i < a->value->array_value->n_values; i++) {
                char buf[64];
                const char *t = value_text(d, a->value->array_value->values[i], buf, sizeof buf);
                if (t)
                    hs_profile_add_comment(v.p, t);
            }
        } else {
            char buf[64];
            const char *t = value_text(d, a->value, buf, sizeof buf);
            if (t)
                hs_profile_add_comment(v.p, t);
        }
    }
    const char *const fkeys[3] = {HS_OTLP_ATTR_DROP_FRAMES, HS_OTLP_ATTR_KEEP_FRAMES, HS_OTLP_ATTR_DEFAULT_TYPE};
    int64_t *fdst[3] = {&v.p->drop_frames, &v.p->keep_frames, &v.p->default_sample_type};
    for (int k = 0; k < 3; k++)
        if ((a = find_attr(d, p0->attribute_indices, p0->n_attribute_indices, fkeys[k]))) {
            char buf[64];
            const char *t = value_text(d, a->value, buf, sizeof buf);
            if (t && (*fdst[k] = hs_profile_str(v.p, t)) < 0)
                goto done;
        }
    /* samples joined by identity: stack, sorted attribute indices, link */
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < prs[t]->n_samples; i++) {
            const Sample *s = prs[t]->samples[i];
            int64_t sum = 0;
            bool any = !sl;
            if (s->n_values) {
                for (size_t k = 0; k < s->n_values; k++)
                    if (!sl || in_slice(s, k, sl)) {
                        any = true;
                        if (__builtin_add_overflow(sum, s->values[k], &sum))
                            goto overflow;
                    }
            } else {
                for (size_t k = 0; k < s->n_timestamps_unix_nano; k++)
                    if (!sl || in_slice(s, k, sl)) {
                        any = true;
                        sum++;
                    }
            }
            if (!any)
                continue;
            size_t na = s->n_attribute_indices, klen = (na + 2) * sizeof(int32_t);
            int32_t kb[32], *key = na + 2 <= 32 ? kb : malloc(klen);
            if (!key)
                goto done;
            key[0] = s->stack_index;
            key[1] = s->link_index;
            if (na) /* attribute_indices is NULL when there are none */
                memcpy(key + 2, s->attribute_indices, na * sizeof(int32_t));
            for (size_t x = 3; x < na + 2; x++) /* insertion sort: lists are short */
                for (size_t y = x; y > 2 && key[y - 1] > key[y]; y--) {
                    int32_t tmp = key[y];
                    key[y] = key[y - 1];
                    key[y - 1] = tmp;
                }
            size_t before = hs_strtab_count(&keys);
            uint32_t id = hs_strtab_intern_len(&keys, (const char *)key, klen);
            if (key != kb)
                free(key);
            if (id == UINT32_MAX)
                goto done;
            if (id >= cap) {
                if (max_samples && id >= max_samples) {
                    snprintf(err, errlen, "more than %zu samples in one profile", max_samples);
                    rc = HS_OTLP_BAD;
                    goto done;
                }
                size_t nc = cap ? 2 * cap : 64;
                int64_t *nv = realloc(vals, nc * n * sizeof *nv);
                if (!nv)
                    goto done;
                vals = nv;
                memset(vals + cap * n, 0, (nc - cap) * n * sizeof *nv);
                const Sample **nf = realloc(first, nc * sizeof *nf);
                if (!nf)
                    goto done;
                first = nf;
                cap = nc;
            }
            if (id == before)
                first[id] = s;
            if (__builtin_add_overflow(vals[id * n + t], sum, &vals[id * n + t]))
                goto overflow;
        }
    size_t nsamples = hs_strtab_count(&keys);
    for (size_t id = 0; id < nsamples; id++) {
        const Sample *s = first[id];
        const Opentelemetry__Proto__Profiles__V1development__Stack *stk = d->stack_table[s->stack_index];
        uint64_t *nl = realloc(locs, (stk->n_location_indices + 1) * sizeof *locs);
        hs_label *nlab = realloc(labels, (s->n_attribute_indices + 2) * sizeof *labels);
        if (nl)
            locs = nl;
        if (nlab)
            labels = nlab;
        if (!nl || !nlab)
            goto done;
        for (size_t k = 0; k < stk->n_location_indices; k++)
            if (!(locs[k] = conv_location(&v, stk->location_indices[k])))
                goto done;
        size_t nlabels = 0;
        for (size_t k = 0; k < s->n_attribute_indices; k++) {
            if (s->attribute_indices[k] == 0)
                continue;
            const Attr *at = d->attribute_table[s->attribute_indices[k]];
            hs_label l = {.key = hs_profile_str(v.p, dstr(d, at->key_strindex)),
                          .num_unit = hs_profile_str(v.p, dstr(d, at->unit_strindex))};
            if (at->value && at->value->value_case == AV(INT_VALUE)) {
                l.num = at->value->int_value;
            } else {
                char buf[256];
                const char *t = value_text(d, at->value, buf, sizeof buf);
                l.str = hs_profile_str(v.p, t ? t : "");
                l.num_unit = 0;
            }
            if (l.key < 0 || l.str < 0 || l.num_unit < 0)
                goto done;
            labels[nlabels++] = l;
        }
        if (s->link_index > 0) {
            const Opentelemetry__Proto__Profiles__V1development__Link *lk = d->link_table[s->link_index];
            char hex[33];
            if (lk->trace_id.len == 16) {
                hexs(lk->trace_id.data, 16, hex);
                labels[nlabels++] = (hs_label){.key = hs_profile_str(v.p, HS_OTLP_LABEL_TRACE_ID),
                                               .str = hs_profile_str(v.p, hex)};
            }
            if (lk->span_id.len == 8) {
                hexs(lk->span_id.data, 8, hex);
                labels[nlabels++] = (hs_label){.key = hs_profile_str(v.p, HS_OTLP_LABEL_SPAN_ID),
                                               .str = hs_profile_str(v.p, hex)};
            }
        }
        if (hs_profile_add_sample(v.p, locs, stk->n_location_indices, vals + id * n, labels, nlabels) != 0)
            goto done;
    }
    if (v.oom)
        goto done;
    *out = v.p;
    v.p = NULL;
    rc = 0;
    goto done;
overflow:
    snprintf(err, errlen, "sample values overflow 64 bits");
    rc = HS_OTLP_BAD;
done:
    if (rc == HS_OTLP_NOMEM)
        snprintf(err, errlen, "out of memory converting OTLP");
    hs_profile_free(v.p);
    free(v.map_id);
    free(v.fn_id);
    free(v.loc_id);
    free(vals);
    free(first);
    free(labels);
    free(locs);
    hs_strtab_free(&keys);
    return rc;
}

static bool same_vt(const Dict *d, const ValueType *a, const ValueType *b)
{
    return strcmp(a ? dstr(d, a->type_strindex) : "", b ? dstr(d, b->type_strindex) : "") == 0 &&
           strcmp(a ? dstr(d, a->unit_strindex) : "", b ? dstr(d, b->unit_strindex) : "") == 0;
}

/* Whether profile q may join the group whose first profile is g0 (and
 * whose members are g[0..n)). */
static bool joins(const Dict *d, Prof *const *g, size_t n, const Prof *q)
{
    const Prof *g0 = g[0];
    if (g0->time_unix_nano != q->time_unix_nano || g0->duration_nano != q->duration_nano ||
        g0->period != q->period || !same_vt(d, g0->period_type, q->period_type) ||
        g0->n_attribute_indices != q->n_attribute_indices ||
        (q->n_attribute_indices && /* none: the lists may be NULL, no memcmp of them */
         memcmp(g0->attribute_indices, q->attribute_indices, q->n_attribute_indices * sizeof(int32_t)) != 0) ||
        strcmp(g0->original_payload_format, q->original_payload_format) != 0 ||
        g0->original_payload.len != q->original_payload.len ||
        (q->original_payload.len &&
         memcmp(g0->original_payload.data, q->original_payload.data, q->original_payload.len) != 0))
        return false;
    for (size_t i = 0; i < n; i++)
        if (same_vt(d, g[i]->sample_type, q->sample_type))
            return false; /* a sample type once per profile */
    return true;
}

static char *kv_label(const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value);
    char *s = malloc(kl + vl + 2);
    if (s) {
        memcpy(s, key, kl);
        s[kl] = '=';
        memcpy(s + kl + 1, value, vl + 1);
    }
    return s;
}

static int push_label(hs_otlp_profile *o, const char *key, const char *value)
{
    char **nl = realloc(o->labels, (o->n_labels + 1) * sizeof *nl);
    if (!nl)
        return -1;
    o->labels = nl;
    if (!(nl[o->n_labels] = kv_label(key, value)))
        return -1;
    o->n_labels++;
    return 0;
}

static bool is_pprof_key(const char *k)
{
    return strncmp(k, "pprof.", 6) == 0;
}

/* The metadata of group g[0..n) of resource rp into o. */
static int group_meta(const Dict *d, const RProf *rp, Prof *const *g, size_t n, hs_otlp_profile *o)
{
    char buf[256];
    const char *service = NULL, *exe = NULL;
    o->n_otlp = n;
    if (rp->resource)
        for (size_t i = 0; i < rp->resource->n_attributes; i++) {
            const KeyValue *kv = rp->resource->attributes[i];
            const char *key = kv->key && *kv->key ? kv->key : dstr(d, kv->key_strindex);
            const char *val = value_text(d, kv->value, buf, sizeof buf);
            if (!*key || !val)
                continue;
            if (strcmp(key, "service.name") == 0) {
                if (!(o->service = strdup(val)))
                    return -1;
                service = o->service;
            } else if (strcmp(key, "service.version") == 0) {
                if (!(o->version = strdup(val)))
                    return -1;
            } else {
                if (strcmp(key, "process.executable.name") == 0)
                    exe = rp->resource->attributes[i]->value->value_case == AV(STRING_VALUE)
                              ? rp->resource->attributes[i]->value->string_value
                              : NULL;
                if (push_label(o, key, val) != 0)
                    return -1;
            }
        }
    if (!service) { /* the OpenTelemetry SDKs' default */
        char def[300];
        snprintf(def, sizeof def, "unknown_service%s%.250s", exe ? ":" : "", exe ? exe : "");
        if (!(o->service = strdup(def)))
            return -1;
    }
    const Prof *p0 = g[0];
    for (size_t i = 0; i < p0->n_attribute_indices; i++) {
        if (p0->attribute_indices[i] == 0)
            continue;
        const Attr *a = d->attribute_table[p0->attribute_indices[i]];
        const char *key = dstr(d, a->key_strindex);
        const char *val = value_text(d, a->value, buf, sizeof buf);
        if (*key && val && !is_pprof_key(key) && push_label(o, key, val) != 0)
            return -1;
    }
    for (size_t i = 0; i < n && !o->id[0]; i++) {
        bool zero = true;
        for (size_t k = 0; k < g[i]->profile_id.len; k++)
            zero &= g[i]->profile_id.data[k] == 0;
        if (g[i]->profile_id.len == 16 && !zero)
            hexs(g[i]->profile_id.data, 16, o->id);
    }
    if (n == 1 && g[0]->sample_type && strcmp(dstr(d, g[0]->sample_type->type_strindex), "samples") == 0 &&
        g[0]->period_type && strcmp(dstr(d, g[0]->period_type->type_strindex), "cpu") == 0)
        o->type = "cpu";
    if (strcasecmp(p0->original_payload_format, "pprof") == 0 && p0->original_payload.len) {
        if (!(o->original = malloc(p0->original_payload.len)))
            return -1;
        memcpy(o->original, p0->original_payload.data, p0->original_payload.len);
        o->original_len = p0->original_payload.len;
    }
    return 0;
}

void hs_otlp_batch_free(hs_otlp_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        hs_otlp_profile *o = &b->p[i];
        hs_profile_free(o->profile);
        free(o->service);
        free(o->version);
        for (size_t k = 0; k < o->n_labels; k++)
            free(o->labels[k]);
        free(o->labels);
        free(o->original);
    }
    free(b->p);
    memset(b, 0, sizeof *b);
}

bool hs_otlp_is_json(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i < len && p[i] == '{';
}

int hs_otlp_from_request(const OtlpRequest *rq, size_t max_samples, hs_otlp_batch *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t r = 0; r < rq->n_resource_profiles; r++)
        for (size_t s = 0; s < rq->resource_profiles[r]->n_scope_profiles; s++)
            total += rq->resource_profiles[r]->scope_profiles[s]->n_profiles;
    out->n_otlp = total;
    if (total == 0)
        return 0; /* an empty request is a success */
    if (!rq->dictionary) {
        snprintf(err, errlen, "the request has profiles but no dictionary");
        return HS_OTLP_BAD;
    }
    chk c = {.rq = rq, .d = rq->dictionary, .err = err, .errlen = errlen};
    int st = check_dict(&c);
    if (!st)
        st = check_profiles(&c);
    if (st)
        return st;
    const Dict *d = rq->dictionary;
    Prof **g = malloc(total * sizeof *g);
    size_t cap = total;
    out->p = calloc(cap, sizeof *out->p);
    slice sl[HS_OTLP_MAX_SLICES + 1];
    if (!g || !out->p) {
        free(g);
        snprintf(err, errlen, "out of memory converting OTLP");
        hs_otlp_batch_free(out);
        return HS_OTLP_NOMEM;
    }
    size_t group = 0;
    for (size_t r = 0; r < rq->n_resource_profiles && !st; r++) {
        const RProf *rp = rq->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles && !st; s++) {
            const SProf *sp = rp->scope_profiles[s];
            char *used = calloc(sp->n_profiles + 1, 1);
            if (!used) {
                st = HS_OTLP_NOMEM;
                snprintf(err, errlen, "out of memory converting OTLP");
                break;
            }
            for (size_t i = 0; i < sp->n_profiles && !st; i++) {
                if (used[i])
                    continue;
                size_t n = 0;
                g[n++] = sp->profiles[i];
                for (size_t j = i + 1; j < sp->n_profiles; j++)
                    if (!used[j] && joins(d, g, n, sp->profiles[j])) {
                        g[n++] = sp->profiles[j];
                        used[j] = 1;
                    }
                /* a pprof original payload is stored as it is: no slices */
                bool original = strcasecmp(g[0]->original_payload_format, "pprof") == 0 && g[0]->original_payload.len;
                size_t nsl = original ? 0 : group_slices(g, n, sl);
                for (size_t k = 0; k < (nsl ? nsl : 1) && !st; k++) {
                    if (out->n == cap) {
                        hs_otlp_profile *np = realloc(out->p, 2 * cap * sizeof *np);
                        if (!np) {
                            st = HS_OTLP_NOMEM;
                            snprintf(err, errlen, "out of memory converting OTLP");
                            break;
                        }
                        memset(np + cap, 0, cap * sizeof *np);
                        out->p = np;
                        cap *= 2;
                    }
                    hs_otlp_profile *o = &out->p[out->n++];
                    o->group = group;
                    if (group_meta(d, rp, g, n, o) != 0) {
                        st = HS_OTLP_NOMEM;
                        snprintf(err, errlen, "out of memory converting OTLP");
                    } else {
                        st = conv_group(d, g, n, nsl ? &sl[k] : NULL, max_samples, &o->profile, err, errlen);
                    }
                    if (nsl && o->id[0] && !sl[k].undated) /* one id per slice, the same on a resend */
                        snprintf(o->id + 16, 17, "%016" PRIx64, (uint64_t)strtoull(o->id + 16, NULL, 16) ^ (uint64_t)(sl[k].index + 1));
                }
                group++;
            }
            free(used);
        }
    }
    free(g);
    if (st)
        hs_otlp_batch_free(out);
    return st;
}

int hs_otlp_decode(const void *data, size_t len, bool json, size_t max_samples, hs_otlp_batch *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    OtlpRequest *rq = NULL;
    int st;
    if (json) {
        if ((st = hs_otlp_json_request(data, len, &rq, err, errlen)))
            return st;
    } else {
        rq = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
            NULL, len, data);
        if (!rq) {
            snprintf(err, errlen, "not an OTLP ExportProfilesServiceRequest (protobuf)");
            return HS_OTLP_BAD;
        }
    }
    st = hs_otlp_from_request(rq, max_samples, out, err, errlen);
    protobuf_c_message_free_unpacked(&rq->base, NULL);
    return st;
}
