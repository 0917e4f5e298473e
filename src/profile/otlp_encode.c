/* otlp_encode.c — pprof profiles -> one OTLP ExportProfilesServiceRequest
 * (otlp.h), written straight to the wire: no protobuf-c here, the agent
 * links this. Field numbers are those of proto/otlp/ (the published
 * opentelemetry-proto files); the unit test decodes the bytes with
 * protobuf-c's generated code.
 *
 * Tables are shared by every profile of the request and deduplicated
 * through intern tables (strings, attributes, stacks, links: a binary key
 * per entry), entry 0 of each the zero value. Mappings, locations and
 * functions are each profile's own, in its order. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "profile/otlp.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static void pb_tag(hs_bytes *b, unsigned field, unsigned wt)
{
    hs_bytes_uv(b, (uint64_t)field << 3 | wt);
}

/* a varint field, omitted when zero (proto3) */
static void pb_uv(hs_bytes *b, unsigned field, uint64_t v)
{
    if (v) {
        pb_tag(b, field, WT_VARINT);
        hs_bytes_uv(b, v);
    }
}

static void pb_fixed64(hs_bytes *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    pb_tag(b, field, WT_I64);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    hs_bytes_put(b, le, 8);
}

static void pb_len(hs_bytes *b, unsigned field, const void *d, size_t n)
{
    pb_tag(b, field, WT_LEN);
    hs_bytes_uv(b, n);
    hs_bytes_put(b, d, n);
}

/* a nested message (written even when empty: a table's zero entry) */
static void pb_msg(hs_bytes *b, unsigned field, hs_bytes *sub)
{
    pb_len(b, field, sub->p, sub->n);
    sub->n = 0;
}

/* packed int32s (negative ones as 64-bit two's complement, as protobuf) */
static void pb_packed_i32(hs_bytes *b, unsigned field, const int32_t *v, size_t n, hs_bytes *tmp)
{
    if (!n)
        return;
    for (size_t i = 0; i < n; i++)
        hs_bytes_uv(tmp, (uint64_t)(int64_t)v[i]);
    pb_msg(b, field, tmp);
}

/* An attribute as its intern key: the table entry's fields. */
typedef struct {
    uint32_t key, unit;
    uint32_t kind; /* 0: the zero entry, 1: string, 2: int, 3: bool, 4: array of strings */
    uint32_t str;  /* string (kind 1), first string of the array (4) */
    int64_t num;   /* int, bool; the array's length */
} otlp_attr;

typedef struct {
    hs_strtab strs, attrs, stacks, links;
    hs_bytes tmp, tmp2, tmp3;
    int32_t *ids; /* attribute indices of the entry being written */
    size_t n_ids, cap_ids;
    int oom;
} otlp_enc;

static uint32_t enc_str(otlp_enc *e, const char *s)
{
    uint32_t id = hs_strtab_intern(&e->strs, s ? s : "");
    if (id == UINT32_MAX)
        e->oom = 1;
    return id == UINT32_MAX ? 0 : id;
}

static int32_t enc_attr(otlp_enc *e, const otlp_attr *a)
{
    uint32_t id = hs_strtab_intern_len(&e->attrs, (const char *)a, sizeof *a);
    if (id == UINT32_MAX || id > INT32_MAX) {
        e->oom = 1;
        return 0;
    }
    return (int32_t)id;
}

static void enc_push_id(otlp_enc *e, int32_t id)
{
    if (e->n_ids == e->cap_ids) {
        size_t nc = e->cap_ids ? 2 * e->cap_ids : 16;
        int32_t *n = realloc(e->ids, nc * sizeof *n);
        if (!n) {
            e->oom = 1;
            return;
        }
        e->ids = n;
        e->cap_ids = nc;
    }
    e->ids[e->n_ids++] = id;
}

static void enc_push_str_attr(otlp_enc *e, const char *key, const char *value)
{
    otlp_attr a = {.key = enc_str(e, key), .kind = 1, .str = enc_str(e, value)};
    enc_push_id(e, enc_attr(e, &a));
}

static void enc_push_bool_attr(otlp_enc *e, const char *key)
{
    otlp_attr a = {.key = enc_str(e, key), .kind = 3, .num = 1};
    enc_push_id(e, enc_attr(e, &a));
}

static bool is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

static void unhex(const char *s, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[2 * i + k];
            v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        out[i] = (unsigned char)v;
    }
}

/* An AnyValue of attribute a into b. */
static void enc_anyvalue(otlp_enc *e, const otlp_attr *a, hs_bytes *b)
{
    const char *s;
    switch (a->kind) {
    case 1:
        s = hs_strtab_get(&e->strs, a->str);
        pb_len(b, 1, s, strlen(s));
        break;
    case 2:
        pb_tag(b, 3, WT_VARINT);
        hs_bytes_uv(b, (uint64_t)a->num);
        break;
    case 3:
        pb_tag(b, 2, WT_VARINT);
        hs_bytes_uv(b, (uint64_t)a->num);
        break;
    default:
        break;
    }
}

/* The dictionary (field 2 of the request) into out. */
static void enc_dictionary(otlp_enc *e, const hs_profile *const *ps, size_t n, hs_bytes *out)
{
    hs_bytes d = {0}, m = {0}, sub = {0}, sub2 = {0};
    /* 1: mapping_table */
    pb_msg(&d, 1, &m);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < ps[k]->n_mappings; i++) {
            const hs_profile *p = ps[k];
            const hs_mapping *mp = &p->mappings[i];
            pb_uv(&m, 1, mp->memory_start);
            pb_uv(&m, 2, mp->memory_limit);
            pb_uv(&m, 3, mp->file_offset);
            pb_uv(&m, 4, enc_str(e, hs_profile_string(p, mp->filename)));
            e->n_ids = 0;
            if (mp->build_id)
                enc_push_str_attr(e, HS_OTLP_ATTR_BUILD_ID, hs_profile_string(p, mp->build_id));
            if (mp->has_functions)
                enc_push_bool_attr(e, HS_OTLP_ATTR_HAS_FUNCTIONS);
            if (mp->has_filenames)
                enc_push_bool_attr(e, HS_OTLP_ATTR_HAS_FILENAMES);
            if (mp->has_line_numbers)
                enc_push_bool_attr(e, HS_OTLP_ATTR_HAS_LINE_NUMBERS);
            if (mp->has_inline_frames)
                enc_push_bool_attr(e, HS_OTLP_ATTR_HAS_INLINE_FRAMES);
            pb_packed_i32(&m, 5, e->ids, e->n_ids, &sub);
            pb_msg(&d, 1, &m);
        }
    /* 2: location_table */
    pb_msg(&d, 2, &m);
    size_t map_base = 1, fn_base = 1;
    for (size_t k = 0; k < n; k++) {
        const hs_profile *p = ps[k];
        for (size_t i = 0; i < p->n_locations; i++) {
            const hs_location *l = &p->locations[i];
            const hs_mapping *mp = l->mapping_id ? hs_profile_mapping(p, l->mapping_id) : NULL;
            if (mp)
                pb_uv(&m, 1, map_base + (size_t)(mp - p->mappings));
            pb_uv(&m, 2, l->address);
            for (size_t j = 0; j < l->n_lines; j++) {
                const hs_function *f = hs_profile_function(p, l->lines[j].function_id);
                if (f)
                    pb_uv(&sub, 1, fn_base + (size_t)(f - p->functions));
                pb_uv(&sub, 2, (uint64_t)l->lines[j].line);
                pb_uv(&sub, 3, (uint64_t)l->lines[j].column);
                pb_msg(&m, 3, &sub);
            }
            e->n_ids = 0;
            if (l->is_folded)
                enc_push_bool_attr(e, HS_OTLP_ATTR_IS_FOLDED);
            pb_packed_i32(&m, 4, e->ids, e->n_ids, &sub);
            pb_msg(&d, 2, &m);
        }
        map_base += p->n_mappings;
        fn_base += p->n_functions;
    }
    /* 3: function_table */
    pb_msg(&d, 3, &m);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < ps[k]->n_functions; i++) {
            const hs_profile *p = ps[k];
            const hs_function *f = &p->functions[i];
            pb_uv(&m, 1, enc_str(e, hs_profile_string(p, f->name)));
            pb_uv(&m, 2, enc_str(e, hs_profile_string(p, f->system_name)));
            pb_uv(&m, 3, enc_str(e, hs_profile_string(p, f->filename)));
            pb_uv(&m, 4, (uint64_t)f->start_line);
            pb_msg(&d, 3, &m);
        }
    /* 4: link_table (entry 0: 16 and 8 zero bytes, as the spec advises) */
    for (size_t i = 0; i < hs_strtab_count(&e->links); i++) {
        const char *key = hs_strtab_get(&e->links, (uint32_t)i);
        pb_len(&m, 1, key, 16);
        pb_len(&m, 2, key + 16, 8);
        pb_msg(&d, 4, &m);
    }
    /* 6: attribute_table (before the strings: it may add some) */
    for (size_t i = 0; i < hs_strtab_count(&e->attrs); i++) {
        otlp_attr a;
        memcpy(&a, hs_strtab_get(&e->attrs, (uint32_t)i), sizeof a);
        if (a.kind) {
            pb_uv(&m, 1, a.key);
            if (a.kind == 4) { /* an array of strings: str, str+1, ... are consecutive ids */
                for (int64_t j = 0; j < a.num; j++) {
                    const char *s = hs_strtab_get(&e->strs, a.str + (uint32_t)j);
                    pb_len(&sub2, 1, s, strlen(s));
                    pb_msg(&sub, 1, &sub2); /* ArrayValue.values */
                }
                pb_msg(&sub2, 5, &sub); /* AnyValue.array_value */
                pb_msg(&m, 2, &sub2);
            } else {
                enc_anyvalue(e, &a, &sub);
                pb_msg(&m, 2, &sub);
            }
            pb_uv(&m, 3, a.unit);
        }
        pb_msg(&d, 6, &m);
    }
    /* 5: string_table */
    for (size_t i = 0; i < hs_strtab_count(&e->strs); i++) {
        const char *s = hs_strtab_get(&e->strs, (uint32_t)i);
        pb_len(&d, 5, s, strlen(s));
    }
    /* 7: stack_table */
    for (size_t i = 0; i < hs_strtab_count(&e->stacks); i++) {
        const char *key = hs_strtab_get(&e->stacks, (uint32_t)i);
        uint32_t len;
        memcpy(&len, key, sizeof len);
        int32_t *ix = malloc((len ? len : 1) * sizeof *ix);
        if (!ix) {
            e->oom = 1;
            break;
        }
        memcpy(ix, key + sizeof len, len * sizeof *ix);
        pb_packed_i32(&m, 1, ix, len, &sub);
        free(ix);
        pb_msg(&d, 7, &m);
    }
    pb_msg(out, 2, &d);
    e->oom |= d.oom | m.oom | sub.oom | sub2.oom;
    hs_bytes_free(&d);
    hs_bytes_free(&m);
    hs_bytes_free(&sub);
    hs_bytes_free(&sub2);
}

/* The stack of sample s (location table indices, leaf first) as a
 * stack_table index. The key is the length then the indices. */
static int32_t enc_stack(otlp_enc *e, const hs_profile *p, const hs_sample *s, size_t loc_base)
{
    size_t n = s->n_locations;
    char *key = malloc(sizeof(uint32_t) + n * sizeof(int32_t));
    if (!key) {
        e->oom = 1;
        return 0;
    }
    uint32_t len = (uint32_t)n;
    memcpy(key, &len, sizeof len);
    for (size_t i = 0; i < n; i++) {
        const hs_location *l = hs_profile_location(p, s->location_ids[i]);
        int32_t ix = l ? (int32_t)(loc_base + (size_t)(l - p->locations)) : 0;
        memcpy(key + sizeof len + i * sizeof ix, &ix, sizeof ix);
    }
    uint32_t id = hs_strtab_intern_len(&e->stacks, key, sizeof len + n * sizeof(int32_t));
    free(key);
    if (id == UINT32_MAX) {
        e->oom = 1;
        return 0;
    }
    return (int32_t)id;
}

/* Sample s's labels: attribute indices into e->ids, and its link. */
static int32_t enc_sample_labels(otlp_enc *e, const hs_profile *p, const hs_sample *s)
{
    unsigned char link[24] = {0};
    bool have_link = false;
    e->n_ids = 0;
    for (size_t i = 0; i < s->n_labels; i++) {
        const hs_label *l = &s->labels[i];
        const char *key = hs_profile_string(p, l->key), *str = hs_profile_string(p, l->str);
        if (l->str && strcmp(key, HS_OTLP_LABEL_TRACE_ID) == 0 && is_hex(str, 32)) {
            unhex(str, link, 16);
            have_link = true;
            continue;
        }
        if (l->str && strcmp(key, HS_OTLP_LABEL_SPAN_ID) == 0 && is_hex(str, 16)) {
            unhex(str, link + 16, 8);
            have_link = true;
            continue;
        }
        otlp_attr a = {.key = enc_str(e, key), .unit = enc_str(e, hs_profile_string(p, l->num_unit))};
        if (l->str) {
            a.kind = 1;
            a.str = enc_str(e, str);
        } else {
            a.kind = 2;
            a.num = l->num;
        }
        enc_push_id(e, enc_attr(e, &a));
    }
    if (!have_link)
        return 0;
    uint32_t id = hs_strtab_intern_len(&e->links, (const char *)link, sizeof link);
    if (id == UINT32_MAX)
        e->oom = 1;
    return id == UINT32_MAX ? 0 : (int32_t)id;
}

/* Profile attributes: what pprof has and OTLP has not. */
static void enc_profile_attrs(otlp_enc *e, const hs_profile *p)
{
    e->n_ids = 0;
    if (p->n_comments) {
        /* an array of strings: interned as consecutive new ids? Not always
         * (a comment may repeat a string): store the array's strings as
         * one attribute per comment instead when they are not consecutive */
        uint32_t first = UINT32_MAX;
        bool consecutive = true;
        for (size_t i = 0; i < p->n_comments; i++) {
            uint32_t before = (uint32_t)hs_strtab_count(&e->strs);
            uint32_t id = enc_str(e, hs_profile_string(p, p->comments[i]));
            if (i == 0)
                first = id;
            consecutive &= id == before && id == first + i;
        }
        if (consecutive) {
            otlp_attr a = {.key = enc_str(e, HS_OTLP_ATTR_COMMENT), .kind = 4, .str = first,
                           .num = (int64_t)p->n_comments};
            enc_push_id(e, enc_attr(e, &a));
        } else { /* strings seen before: one new copy each is not possible, so join them */
            hs_bytes j = {0};
            for (size_t i = 0; i < p->n_comments; i++)
                hs_bytes_printf(&j, "%s%s", i ? "\n" : "", hs_profile_string(p, p->comments[i]));
            enc_push_str_attr(e, HS_OTLP_ATTR_COMMENT, j.s ? j.s : "");
            e->oom |= j.oom;
            hs_bytes_free(&j);
        }
    }
    if (p->drop_frames)
        enc_push_str_attr(e, HS_OTLP_ATTR_DROP_FRAMES, hs_profile_string(p, p->drop_frames));
    if (p->keep_frames)
        enc_push_str_attr(e, HS_OTLP_ATTR_KEEP_FRAMES, hs_profile_string(p, p->keep_frames));
    if (p->default_sample_type)
        enc_push_str_attr(e, HS_OTLP_ATTR_DEFAULT_TYPE, hs_profile_string(p, p->default_sample_type));
}

/* The Profile messages of p (one per sample type) into scope. */
static void enc_profiles(otlp_enc *e, const hs_profile *p, size_t loc_base, const hs_otlp_resource *res,
                         hs_bytes *scope)
{
    hs_bytes prof = {0}, s = {0}, sub = {0};
    int32_t *stacks = malloc((p->n_samples ? p->n_samples : 1) * sizeof *stacks);
    int32_t *links = malloc((p->n_samples ? p->n_samples : 1) * sizeof *links);
    hs_bytes attrs = {0}; /* each sample's attribute indices, packed, as written */
    size_t *attr_off = malloc((p->n_samples + 1) * sizeof *attr_off);
    if (!stacks || !links || !attr_off) {
        e->oom = 1;
        goto out;
    }
    for (size_t i = 0; i < p->n_samples; i++) {
        stacks[i] = enc_stack(e, p, &p->samples[i], loc_base);
        links[i] = enc_sample_labels(e, p, &p->samples[i]);
        attr_off[i] = attrs.n;
        hs_bytes_put(&attrs, e->ids, e->n_ids * sizeof *e->ids);
    }
    attr_off[p->n_samples] = attrs.n;
    enc_profile_attrs(e, p);
    for (size_t t = 0; t < p->n_sample_types; t++) {
        pb_uv(&sub, 1, enc_str(e, hs_profile_string(p, p->sample_types[t].type)));
        pb_uv(&sub, 2, enc_str(e, hs_profile_string(p, p->sample_types[t].unit)));
        pb_msg(&prof, 1, &sub);
        for (size_t i = 0; i < p->n_samples; i++) {
            const hs_sample *sm = &p->samples[i];
            bool all_zero = true;
            for (size_t v = 0; v < p->n_sample_types; v++)
                all_zero &= sm->values[v] == 0;
            /* a zero value is no sample of this type, unless every value is
             * zero: then the first type keeps it */
            if (sm->values[t] == 0 && !(all_zero && t == 0))
                continue;
            pb_uv(&s, 1, (uint64_t)stacks[i]);
            size_t na = (attr_off[i + 1] - attr_off[i]) / sizeof(int32_t);
            int32_t *ids = malloc((na ? na : 1) * sizeof *ids);
            if (!ids) {
                e->oom = 1;
                goto out;
            }
            memcpy(ids, attrs.p + attr_off[i], na * sizeof *ids);
            pb_packed_i32(&s, 2, ids, na, &sub);
            free(ids);
            pb_uv(&s, 3, (uint64_t)links[i]);
            hs_bytes_uv(&sub, (uint64_t)sm->values[t]);
            pb_msg(&s, 4, &sub); /* values, packed (one) */
            pb_msg(&prof, 2, &s);
        }
        pb_fixed64(&prof, 3, (uint64_t)p->time_nanos);
        pb_uv(&prof, 4, (uint64_t)p->duration_nanos);
        if (p->period_type.type || p->period_type.unit) {
            pb_uv(&sub, 1, enc_str(e, hs_profile_string(p, p->period_type.type)));
            pb_uv(&sub, 2, enc_str(e, hs_profile_string(p, p->period_type.unit)));
            pb_msg(&prof, 5, &sub);
        }
        pb_uv(&prof, 6, (uint64_t)p->period);
        if (res && res->original && res->original_format) {
            pb_len(&prof, 9, res->original_format, strlen(res->original_format));
            pb_len(&prof, 10, res->original, res->original_len);
        }
        pb_packed_i32(&prof, 11, e->ids, e->n_ids, &sub);
        pb_msg(scope, 2, &prof);
    }
out:
    e->oom |= prof.oom | s.oom | sub.oom | attrs.oom;
    free(stacks);
    free(links);
    free(attr_off);
    hs_bytes_free(&attrs);
    hs_bytes_free(&prof);
    hs_bytes_free(&s);
    hs_bytes_free(&sub);
}

int hs_otlp_encode(const hs_profile *const *ps, size_t n, const hs_otlp_resource *res, hs_bytes *out, char *err,
                   size_t errlen)
{
    otlp_enc e = {0};
    hs_bytes rp = {0}, r = {0}, kv = {0}, v = {0}, scope = {0}, sc = {0};
    int rc = -1;
    if (hs_strtab_init(&e.strs) || hs_strtab_init(&e.attrs) || hs_strtab_init(&e.stacks) ||
        hs_strtab_init(&e.links))
        goto done;
    otlp_attr zero = {0};
    unsigned char zlink[24] = {0};
    enc_str(&e, "");
    enc_attr(&e, &zero);
    uint32_t zl = hs_strtab_intern_len(&e.links, (const char *)zlink, sizeof zlink);
    uint32_t zs = 0, zslen = 0;
    (void)zs;
    hs_strtab_intern_len(&e.stacks, (const char *)&zslen, sizeof zslen);
    if (zl == UINT32_MAX)
        goto done;
    /* the resource */
    if (res) {
        const char *keys[2] = {"service.name", "service.version"}, *vals[2] = {res->service, res->version};
        for (int i = 0; i < 2; i++)
            if (vals[i]) {
                pb_len(&kv, 1, keys[i], strlen(keys[i]));
                pb_len(&v, 1, vals[i], strlen(vals[i]));
                pb_msg(&kv, 2, &v);
                pb_msg(&r, 1, &kv);
            }
        for (size_t i = 0; i < res->n_attrs; i++) {
            const char *eq = strchr(res->attrs[i], '=');
            if (!eq)
                continue;
            pb_len(&kv, 1, res->attrs[i], (size_t)(eq - res->attrs[i]));
            pb_len(&v, 1, eq + 1, strlen(eq + 1));
            pb_msg(&kv, 2, &v);
            pb_msg(&r, 1, &kv);
        }
    }
    pb_msg(&rp, 1, &r);
    pb_len(&sc, 1, "hotspur", 7);
    pb_msg(&scope, 1, &sc);
    size_t loc_base = 1;
    for (size_t k = 0; k < n; k++) {
        enc_profiles(&e, ps[k], loc_base, res, &scope);
        loc_base += ps[k]->n_locations;
    }
    pb_msg(&rp, 2, &scope);
    pb_msg(out, 1, &rp);
    enc_dictionary(&e, ps, n, out);
    e.oom |= rp.oom | r.oom | kv.oom | v.oom | scope.oom | sc.oom | out->oom;
    rc = e.oom ? -1 : 0;
done:
    if (rc)
        snprintf(err, errlen, "out of memory encoding OTLP");
    hs_strtab_free(&e.strs);
    hs_strtab_free(&e.attrs);
    hs_strtab_free(&e.stacks);
    hs_strtab_free(&e.links);
    free(e.ids);
    hs_bytes_free(&e.tmp);
    hs_bytes_free(&e.tmp2);
    hs_bytes_free(&e.tmp3);
    hs_bytes_free(&rp);
    hs_bytes_free(&r);
    hs_bytes_free(&kv);
    hs_bytes_free(&v);
    hs_bytes_free(&scope);
    hs_bytes_free(&sc);
    return rc;
}
