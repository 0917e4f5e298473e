/* ingest_otlp.c — POST /v1development/profiles: OpenTelemetry profiles
 * (OTLP/HTTP, protobuf or JSON, gzip or not). The request is decoded and
 * checked whole (profile/otlp.h: a bad dictionary reference is a 400 that
 * names the table and index, and nothing is stored), then each of its
 * pprof profiles goes through hs_ingest_pprof like any upload: service
 * and version from the resource's service.name and service.version, the
 * other resource and profile attributes as labels, the profile_id as the
 * stored id, original_payload instead of the conversion when it is a
 * pprof. The answer is OTLP's: ExportProfilesServiceResponse in the
 * request's encoding (partial_success when some profiles were refused),
 * or a google.rpc.Status with the HTTP error. No gRPC (docs/otlp.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/bytes.h"
#include "base/json.h"
#include "profile/otlp.h"
#include "server/ingest_internal.h"
#include "server/server.h"

/* The google.rpc.Code of an HTTP status. */
static int rpc_code(int status)
{
    switch (status) {
    case 400:
    case 415:
        return 3; /* INVALID_ARGUMENT */
    case 409:
        return 6; /* ALREADY_EXISTS */
    case 413:
        return 8; /* RESOURCE_EXHAUSTED */
    case 503:
        return 14; /* UNAVAILABLE */
    default:
        return 13; /* INTERNAL */
    }
}

static void json_put(void *ctx, const void *p, size_t n)
{
    hs_bytes_put(ctx, p, n);
}

static void set_body(hs_http_response *rs, int status, bool json, hs_bytes *b)
{
    free(rs->body);
    if (b->oom) {
        hs_bytes_free(b);
        hs_respond_error(rs, 500, "out of memory");
        return;
    }
    rs->body = b->s ? b->s : strdup("");
    rs->len = b->n;
    rs->status = status;
    rs->content_type = json ? "application/json" : "application/x-protobuf";
    memset(b, 0, sizeof *b);
}

/* A failure: google.rpc.Status {code = 1, message = 2}. */
static int respond_status(hs_http_response *rs, int status, bool json, const char *msg)
{
    hs_bytes b = {0};
    int code = rpc_code(status);
    if (json) {
        hs_bytes_printf(&b, "{\"code\":%d,\"message\":", code);
        hs_json_write_string(msg, json_put, &b);
        hs_bytes_str(&b, ",\"error\":"); /* the key every other hotspur error has */
        hs_json_write_string(msg, json_put, &b);
        hs_bytes_str(&b, "}\n");
    } else {
        hs_bytes_uv(&b, 1 << 3);
        hs_bytes_uv(&b, (uint64_t)code);
        hs_bytes_uv(&b, 2 << 3 | 2);
        hs_bytes_uv(&b, strlen(msg));
        hs_bytes_str(&b, msg);
    }
    set_body(rs, status, json, &b);
    return status;
}

/* Success: ExportProfilesServiceResponse, partial_success (field 1:
 * rejected_profiles = 1, error_message = 2) only when some were refused. */
static int respond_ok(hs_http_response *rs, bool json, size_t rejected, const char *msg)
{
    hs_bytes b = {0};
    if (json) {
        if (rejected) {
            hs_bytes_printf(&b, "{\"partialSuccess\":{\"rejectedProfiles\":\"%zu\",\"errorMessage\":", rejected);
            hs_json_write_string(msg, json_put, &b);
            hs_bytes_str(&b, "}}\n");
        } else {
            hs_bytes_str(&b, "{}\n");
        }
    } else if (rejected) {
        hs_bytes ps = {0};
        hs_bytes_uv(&ps, 1 << 3);
        hs_bytes_uv(&ps, rejected);
        hs_bytes_uv(&ps, 2 << 3 | 2);
        hs_bytes_uv(&ps, strlen(msg));
        hs_bytes_str(&ps, msg);
        hs_bytes_uv(&b, 1 << 3 | 2);
        hs_bytes_uv(&b, ps.n);
        hs_bytes_put(&b, ps.p, ps.n);
        b.oom |= ps.oom;
        hs_bytes_free(&ps);
    }
    set_body(rs, 200, json, &b);
    return 200;
}

/* A label key as the store takes them: letters, digits, '_', '.', '-'. */
static void clean_key(char *kv)
{
    for (char *p = kv; *p && *p != '='; p++)
        if (!hs_name_char((unsigned char)*p, true))
            *p = '_';
}

int hs_ingest_otlp(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs)
{
    const char *ct = rq->content_type;
    bool json;
    if (ct && strncasecmp(ct, "application/json", 16) == 0)
        json = true;
    else if (ct && (strncasecmp(ct, "application/x-protobuf", 22) == 0 ||
                    strncasecmp(ct, "application/protobuf", 20) == 0))
        json = false;
    else if (!ct || !*ct)
        json = hs_otlp_is_json(rq->body, rq->body_len) &&
               !(rq->content_encoding && strcasecmp(rq->content_encoding, "gzip") == 0);
    else
        return respond_status(rs, 415, false,
                              "Content-Type must be application/x-protobuf or application/json (OTLP/HTTP)");
    if (rq->n_params)
        return respond_status(rs, 400, json, "no query parameters: what a profile is comes with it (OTLP)");

    /* the body: size and gzip as every upload (ingest.c) */
    hs_ingest in;
    hs_ingest_result r;
    const void *data;
    size_t len;
    hs_otlp_batch batch = {0};
    char err[640];
    int st = hs_ingest_begin(&in, b, lim, rq->body, rq->body_len, rq->content_encoding, &r);
    if (!st)
        st = hs_ingest_body(&in, &data, &len);
    if (!st)
        st = hs_unwrap_gzip(&in, &data, &len);
    if (!st) {
        int dst = hs_otlp_decode(data, len, json, lim->max_samples, &batch, err, sizeof err);
        if (dst)
            st = hs_res_err(&r, dst == HS_OTLP_BAD ? HS_INGEST_BAD : HS_INGEST_FAILED, "OTLP: %s", err);
    }
    hs_ingest_free(&in);
    if (st)
        return respond_status(rs, hs_ingest_http_status(r.code), json, r.msg);

    size_t rejected = 0, counted = SIZE_MAX; /* the last group counted rejected */
    int first_status = 0;
    char first_msg[sizeof r.msg + 320] = "";
    for (size_t i = 0; i < batch.n; i++) {
        hs_otlp_profile *o = &batch.p[i];
        void *enc = NULL;
        size_t enc_len = 0;
        if (!o->original && hs_profile_encode(o->profile, &enc, &enc_len, err, sizeof err) != 0) {
            hs_res_err(&r, HS_INGEST_FAILED, "%s", err);
        } else {
            for (size_t k = 0; k < o->n_labels; k++)
                clean_key(o->labels[k]);
            hs_ingest_meta m = {.service = o->service, .version = o->version, .type = o->type,
                                .id = o->id[0] ? o->id : NULL, .labels = (const char *const *)o->labels,
                                .n_labels = o->n_labels};
            hs_ingest_pprof(b, lim, &m, o->original ? o->original : enc, o->original ? o->original_len : enc_len,
                            &r);
        }
        free(enc);
        if (r.code != HS_INGEST_OK) {
            if (o->group != counted) /* a time slice of a group counted already */
                rejected += o->n_otlp;
            counted = o->group;
            if (!first_status) {
                first_status = hs_ingest_http_status(r.code);
                snprintf(first_msg, sizeof first_msg, "profile %zu (%.250s): %s", i, o->service, r.msg);
                if (r.retry_after_s)
                    snprintf(rs->extra_header, sizeof rs->extra_header, "Retry-After: %d", r.retry_after_s);
            }
        }
    }
    size_t total = batch.n_otlp;
    hs_otlp_batch_free(&batch);
    if (rejected && rejected == total) /* nothing stored: the error itself */
        return respond_status(rs, first_status, json, first_msg);
    rs->extra_header[0] = '\0';
    return respond_ok(rs, json, rejected, first_msg);
}
