/* otlp_json.c — OTLP/JSON (the protobuf JSON mapping with OTLP's
 * deviations) -> the protobuf-c request, driven by the generated
 * descriptors: every message of proto/otlp/ is read by one function.
 * Keys are lowerCamelCase (the original snake_case names are accepted too,
 * as protobuf's own JSON parsers do); unknown keys are ignored (the spec
 * says receivers MUST); 64-bit integers are strings or numbers; bytes are
 * base64, except traceId and spanId (and a profileId of 32 hex digits),
 * which are hex; enums are integers; null is the default. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/otlp_internal.h"

typedef struct {
    char *err;
    size_t errlen;
    char path[256];
} jctx;

__attribute__((format(printf, 2, 3))) static int jbad(jctx *c, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "JSON %s: %s", c->path[0] ? c->path : "body", msg);
    return HS_OTLP_BAD;
}

/* snake_case -> lowerCamelCase */
static void camel(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (bool up = false; *name && n + 1 < cap; name++) {
        if (*name == '_') {
            up = true;
            continue;
        }
        out[n++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 32) : *name;
        up = false;
    }
    out[n] = '\0';
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static int read_bytes(jctx *c, json_t *v, bool hex, ProtobufCBinaryData *out)
{
    if (!json_is_string(v))
        return jbad(c, "expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    unsigned char *d = malloc(n / 2 + n + 1);
    if (!d)
        return HS_OTLP_NOMEM;
    size_t len = 0;
    if (hex) {
        if (n % 2)
            return free(d), jbad(c, "odd number of hex digits");
        for (size_t i = 0; i < n; i += 2) {
            int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
            if (hi < 0 || lo < 0)
                return free(d), jbad(c, "not hex");
            d[len++] = (unsigned char)(hi << 4 | lo);
        }
    } else {
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '=')
                break;
            int x = b64val((unsigned char)s[i]);
            if (x < 0)
                return free(d), jbad(c, "not base64");
            acc = acc << 6 | (uint32_t)x;
            if ((bits += 6) >= 8) {
                bits -= 8;
                d[len++] = (unsigned char)(acc >> bits);
            }
        }
    }
    out->data = d;
    out->len = len;
    return 0;
}

/* An integer from a number or a decimal string. */
static int read_int(jctx *c, json_t *v, bool is_signed, int64_t *s, uint64_t *u)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (!is_signed && x < 0)
            return jbad(c, "negative value for an unsigned field");
        *s = x;
        *u = (uint64_t)x;
        return 0;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x != floor(x) || fabs(x) > 9.2e18 || (!is_signed && x < 0))
            return jbad(c, "not an integer");
        *s = (int64_t)x;
        *u = (uint64_t)x;
        return 0;
    }
    if (json_is_string(v)) {
        const char *t = json_string_value(v);
        char *end;
        errno = 0;
        if (is_signed) {
            *s = strtoll(t, &end, 10);
            *u = (uint64_t)*s;
        } else {
            if (*t == '-')
                return jbad(c, "negative value for an unsigned field");
            *u = strtoull(t, &end, 10);
            *s = (int64_t)*u;
        }
        if (!*t || *end || errno)
            return jbad(c, "\"%.40s\" is not a decimal integer", t);
        return 0;
    }
    return jbad(c, "expected an integer");
}

static int read_message(jctx *c, json_t *o, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m, int depth);

/* One value of field f (json v) at dst. */
static int read_value(jctx *c, json_t *v, const ProtobufCFieldDescriptor *f, void *dst, int depth)
{
    int64_t s = 0;
    uint64_t u = 0;
    int st;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        if ((st = read_int(c, v, true, &s, &u)))
            return st;
        if (s < INT32_MIN || s > INT32_MAX)
            return jbad(c, "%" PRId64 " does not fit 32 bits", s);
        *(int32_t *)dst = (int32_t)s;
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((st = read_int(c, v, false, &s, &u)))
            return st;
        if (u > UINT32_MAX)
            return jbad(c, "%" PRIu64 " does not fit 32 bits", u);
        *(uint32_t *)dst = (uint32_t)u;
        return 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if ((st = read_int(c, v, true, &s, &u)))
            return st;
        *(int64_t *)dst = s;
        return 0;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if ((st = read_int(c, v, false, &s, &u)))
            return st;
        *(uint64_t *)dst = u;
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v))
            return jbad(c, "expected true or false");
        *(protobuf_c_boolean *)dst = json_is_true(v);
        return 0;
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_FLOAT: {
        double x;
        if (json_is_number(v))
            x = json_number_value(v);
        else if (json_is_string(v) && strcmp(json_string_value(v), "NaN") == 0)
            x = NAN;
        else if (json_is_string(v) && strcmp(json_string_value(v), "Infinity") == 0)
            x = INFINITY;
        else if (json_is_string(v) && strcmp(json_string_value(v), "-Infinity") == 0)
            x = -INFINITY;
        else
            return jbad(c, "expected a number");
        if (f->type == PROTOBUF_C_TYPE_FLOAT)
            *(float *)dst = (float)x;
        else
            *(double *)dst = x;
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        if (!json_is_string(v))
            return jbad(c, "expected a string");
        char *t = malloc(json_string_length(v) + 1);
        if (!t)
            return HS_OTLP_NOMEM;
        memcpy(t, json_string_value(v), json_string_length(v) + 1);
        *(char **)dst = t;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        /* OTLP: trace and span ids in hex; a profile id in hex too when it
         * is 32 hex digits (as the Collector writes it), else base64 */
        bool hex = strcmp(f->name, "trace_id") == 0 || strcmp(f->name, "span_id") == 0;
        if (!hex && strcmp(f->name, "profile_id") == 0 && json_is_string(v) && json_string_length(v) == 32) {
            hex = true;
            for (const char *t = json_string_value(v); *t && hex; t++)
                hex = hexval((unsigned char)*t) >= 0;
        }
        return read_bytes(c, v, hex, dst);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessageDescriptor *md = f->descriptor;
        ProtobufCMessage *sub = calloc(1, md->sizeof_message);
        if (!sub)
            return HS_OTLP_NOMEM;
        md->message_init(sub);
        *(ProtobufCMessage **)dst = sub;
        return read_message(c, v, md, sub, depth + 1);
    }
    }
    return jbad(c, "unsupported field type");
}

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static int read_message(jctx *c, json_t *o, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m, int depth)
{
    if (depth > 32)
        return jbad(c, "nested too deep");
    if (!json_is_object(o))
        return jbad(c, "expected an object");
    size_t plen = strlen(c->path);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char key[64];
        camel(f->name, key, sizeof key);
        json_t *v = json_object_get(o, key);
        if (!v)
            v = json_object_get(o, f->name);
        if (!v || json_is_null(v))
            continue;
        snprintf(c->path + plen, sizeof c->path - plen, "%s%s", plen ? "." : "", key);
        char *base = (char *)m;
        int st;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (!json_is_array(v))
                return jbad(c, "expected an array");
            size_t n = json_array_size(v), sz = value_size(f);
            void *arr = calloc(n ? n : 1, sz);
            if (!arr)
                return HS_OTLP_NOMEM;
            *(void **)(base + f->offset) = arr;
            size_t *count = (size_t *)(base + f->quantifier_offset);
            *count = 0;
            size_t elen = strlen(c->path);
            for (size_t k = 0; k < n; k++) {
                snprintf(c->path + elen, sizeof c->path - elen, "[%zu]", k);
                (*count)++; /* a slot is freed with the message, filled or not (zeroed) */
                if ((st = read_value(c, json_array_get(v, k), f, (char *)arr + k * sz, depth)))
                    return st;
            }
        } else {
            if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                uint32_t *qcase = (uint32_t *)(base + f->quantifier_offset);
                if (*qcase)
                    return jbad(c, "two members of one oneof");
                if ((st = read_value(c, v, f, base + f->offset, depth)))
                    return st;
                *qcase = f->id;
            } else if ((st = read_value(c, v, f, base + f->offset, depth))) {
                return st;
            }
        }
        c->path[plen] = '\0';
    }
    return 0;
}

int hs_otlp_json_request(const void *data, size_t len, OtlpRequest **out, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    *out = NULL;
    if (!root) {
        snprintf(err, errlen, "not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return HS_OTLP_BAD;
    }
    const ProtobufCMessageDescriptor *d =
        &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor;
    OtlpRequest *rq = calloc(1, d->sizeof_message);
    if (!rq) {
        json_decref(root);
        snprintf(err, errlen, "out of memory reading OTLP/JSON");
        return HS_OTLP_NOMEM;
    }
    d->message_init(&rq->base);
    jctx c = {.err = err, .errlen = errlen};
    int st = read_message(&c, root, d, &rq->base, 0);
    json_decref(root);
    if (st) {
        if (st == HS_OTLP_NOMEM)
            snprintf(err, errlen, "out of memory reading OTLP/JSON");
        protobuf_c_message_free_unpacked(&rq->base, NULL);
        return st;
    }
    *out = rq;
    return 0;
}
