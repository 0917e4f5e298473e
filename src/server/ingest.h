/* ingest.h — putting a profile into the store, for every way in: the HTTP
 * endpoints (POST /api/v1/ingest, Pyroscope's /ingest: http.c), the
 * scraper (scrape.c) and `hotspur web` (through hs_server_ingest) call the
 * same checks, decomposition and batched put. The outcome is a code and a
 * message, not an HTTP answer; hs_ingest_http_status is the one table from
 * codes to HTTP statuses. */
#ifndef HS_SERVER_INGEST_H
#define HS_SERVER_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

#define HS_MAX_ID 32 /* a profile id: 1 to 32 of [A-Za-z0-9_-] */

typedef enum {
    HS_INGEST_OK = 0,
    HS_INGEST_BAD,       /* the input is wrong (HTTP 400) */
    HS_INGEST_TOO_LARGE, /* over a limit of hs_limits (413) */
    HS_INGEST_ENCODING,  /* an encoding or format not supported (415) */
    HS_INGEST_CONFLICT,  /* conflicts with what is stored, not to retry (409) */
    HS_INGEST_BUSY,      /* store full or unavailable: retry after retry_after_s (503) */
    HS_INGEST_FAILED,    /* out of memory, a store error (500) */
} hs_ingest_code;

/* What an upload is: all optional but service. */
typedef struct {
    const char *service, *type, *version, *id;
    const char *const *labels; /* "KEY=VALUE" each */
    size_t n_labels;
    bool have_from, have_until;
    int64_t from_ns, until_ns;    /* the window; else the profile's own times, else now */
    const char *content_encoding; /* of the body: NULL, "identity" or "gzip" */
} hs_ingest_meta;

typedef struct {
    hs_ingest_code code;
    char msg[640];     /* why, when code is not HS_INGEST_OK */
    int retry_after_s; /* HS_INGEST_BUSY */
    size_t stored;     /* profiles stored (the others were duplicates) */
    size_t n_ids;
    bool duplicate[4];
    char ids[4][HS_MAX_ID + 1];
} hs_ingest_result;

/* Store one pprof profile (gzipped or not) with its metadata, checked
 * against lim; nothing is stored unless every check passes. Returns
 * r->code: 0 once the profile is durable (or was already stored). */
int hs_ingest_pprof(hs_batcher *b, const hs_limits *lim, const hs_ingest_meta *m, const void *body, size_t len,
                    hs_ingest_result *r);

/* The metadata of an upload in its query-parameter form (service, type,
 * version, id, label=K=V..., from, until in unix seconds): unknown or
 * repeated parameters are refused. labels has room for n entries; m points
 * into ps and labels. 0, or r->code. */
int hs_ingest_meta_from_params(const hs_param *ps, size_t n, hs_ingest_meta *m, const char **labels,
                               hs_ingest_result *r);

/* hs_ingest_pprof into a running server's store, as if uploaded. */
int hs_server_ingest(hs_server *s, const hs_ingest_meta *m, const void *body, size_t len, hs_ingest_result *r);

/* The HTTP status of a code. */
int hs_ingest_http_status(hs_ingest_code code);

#endif
