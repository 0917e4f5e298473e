/* server.h — `hotspur serve`: HTTP (libmicrohttpd) in front of a store.
 *
 * The pieces, one file each:
 *   http.c    listening, routing, bearer token, loopback rule, body limits,
 *             turning libmicrohttpd's request into an hs_http_request;
 *   ingest.c  POST /api/v1/ingest and Pyroscope's POST /ingest (pprof,
 *             multipart, folded): validate, decompose, hand to the batcher;
 *   batch.c   group commit: profiles from concurrent requests go to the
 *             store in one hs_store_put; each request is answered only once
 *             its profile is durable;
 *   conn_guard.c  the deadline for a request's head (slow clients);
 *   query.c   the JSON and pprof query API (docs/server.md): parameters,
 *             selections, the store side;
 *   query_shape.c  the answers built on the analysis layer (flame graph,
 *             functions, diff, peek, sandwich, source);
 *   query_view.c  the view of the selection straight from the merged
 *             stack rows (what every answer of query_shape.c reads);
 *   query_cache.c  stack records kept in memory between queries;
 *   scrape.c  --scrape: pull pprof endpoints every period;
 *   names.c   naming frames from build IDs: uploaded debug info, build-ID
 *             directories, local binaries, debuginfod (names.h);
 *   debuginfo.c  the debug info API: /api/v1/debuginfo (upload, list, remove);
 *   assets.c  the web UI's files, embedded in the binary;
 *   tenant.c  tenants: a store, batcher, namer and cache of their own per
 *             tenant (X-Scope-OrgID or --tokens), opened on first use.
 * Nothing here decodes a stored profile twice per query: the store merges,
 * query.c shapes the answer with the analysis layer.
 */
#ifndef HS_SERVER_SERVER_H
#define HS_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "server/names.h"
#include "store/stack.h"
#include "store/store.h"

/* Bounds on every input. */
typedef struct {
    size_t max_body;         /* request body bytes (default 16 MiB) */
    size_t max_decompressed; /* after gunzip (default 64 MiB) */
    unsigned max_ratio;      /* decompressed / compressed (default 100) */
    size_t max_labels;       /* labels per profile (default 64) */
    size_t max_label_len;    /* bytes per label key or value (default 256) */
    size_t max_depth;        /* frames per stack (default 1024) */
    size_t max_samples;      /* samples per profile (default 1 000 000) */
    /* sample label keys not stored (serve --drop-labels); NULL: the
     * store's default, hs_stack_default_drop (tid) */
    const char *const *drop_labels;
    size_t n_drop_labels;
} hs_limits;

void hs_limits_default(hs_limits *l);

typedef struct {
    const char *key, *value;
} hs_param;

/* A request as the handlers see it: decoded query parameters in order
 * (repeats kept), the raw body. */
typedef struct {
    const char *method, *path;
    const hs_param *params;
    size_t n_params;
    const char *content_type;     /* may be NULL */
    const char *content_encoding; /* may be NULL */
    const void *body;
    size_t body_len;
} hs_http_request;

/* A response: the handler mallocs body; http.c frees it. */
typedef struct {
    int status;
    const char *content_type; /* static string */
    char *body;
    size_t len;
    char extra_header[128];   /* one "Name: value" line, or "" */
} hs_http_response;

/* First value of parameter key, or NULL. */
const char *hs_param_get(const hs_http_request *rq, const char *key);

/* Set a one-line error answer: {"error":"msg"} with status. Returns status. */
int hs_respond_error(hs_http_response *rs, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- batch.c ---- */
typedef struct hs_batcher hs_batcher;
/* Writers, batch size and window: cfg (see hs_store_batching;
 * hs_store_batching_get gives a store's defaults). */
hs_batcher *hs_batcher_new(hs_store *st, const hs_store_batching *cfg);
void hs_batcher_free(hs_batcher *b); /* flushes what is queued first */
/* Queue p (the batcher copies nothing: p must stay valid until this
 * returns) and wait until it is stored. 0, 1 when it was a duplicate, or
 * -1, HS_STORE_UNAVAILABLE, HS_STORE_FULL or HS_STORE_REFUSED with a message. */
int hs_batcher_submit(hs_batcher *b, const hs_store_profile *p, char *err, size_t errlen);
/* The same for the n profiles of one request, stored in one put (all or
 * none): results[i] is 0 (stored) or 1 (duplicate) when it returns 0. */
int hs_batcher_submit_many(hs_batcher *b, const hs_store_profile *const *p, size_t n, int *results,
                           char *err, size_t errlen);
/* A request that will submit soon (it is decoding its body) says so with
 * +1, and -1 if it ends up not submitting; a submit takes one back. The
 * writer commits at once when nothing is announced (unless cfg.linger),
 * else it waits (at most wait_ms) for the announced ones to join the batch. */
void hs_batcher_expect(hs_batcher *b, int n);
/* The decomposition memo every ingest request shares (hs_stack_memo:
 * stacks that repeat across uploads are encoded once), at most
 * HS_INGEST_MEMO_BYTES before it is emptied. */
#define HS_INGEST_MEMO_BYTES ((size_t)64 << 20)
hs_stack_memo *hs_batcher_stack_memo(hs_batcher *b);
/* The namer ingest names frames with (NULL: none). */
void hs_batcher_set_names(hs_batcher *b, hs_names *n);
hs_names *hs_batcher_names(hs_batcher *b);
/* Profiles queued that no writer has taken yet (tests, diagnostics). */
size_t hs_batcher_queued(hs_batcher *b);
/* 0 when the last store write succeeded (or none was made yet), else its
 * code (HS_STORE_UNAVAILABLE, HS_STORE_FULL, -1) and message: writes are
 * failing until one succeeds. */
int hs_batcher_write_health(hs_batcher *b, char *err, size_t errlen);

/* ---- ingest.c ---- */
/* Each returns the HTTP status it answered with and fills rs. */
int hs_ingest_native(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs);
int hs_ingest_pyroscope(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs);
/* POST /v1development/profiles: OpenTelemetry profiles (ingest_otlp.c). */
int hs_ingest_otlp(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs);

/* ---- query.c ---- */
typedef struct {
    hs_store *store;
    hs_names *names;                 /* naming frames from build IDs (names.h) */
    const char *const *source_paths; /* --source-path DIRs */
    size_t n_source_paths;
    const char *const *dropped_labels; /* label keys ingest does not store (hs_limits) */
    size_t n_dropped_labels;
    struct hs_stack_cache *cache;    /* stack records kept between queries (query_cache.h), or NULL */
} hs_query_ctx;
/* GET /api/v1/... other than ingest; 404 for unknown paths. */
int hs_query_handle(hs_query_ctx *q, const hs_http_request *rq, hs_http_response *rs);

/* Every endpoint of hs_query_handle, "services" ... (no prefix): *n of them. */
const char *const *hs_query_endpoints(size_t *n);

/* ---- tenant.c ---- */
#define HS_TENANT_DEFAULT "default" /* no X-Scope-OrgID: the store as configured */
#define HS_TENANT_HEADER "X-Scope-OrgID" /* Pyroscope's, Grafana's */
#define HS_TENANT_NAME_MAX 64
#define HS_TENANTS_MAX 256          /* open at once besides the default */
#define HS_TENANTS_FULL (-5)

typedef struct {
    char name[HS_TENANT_NAME_MAX + 1];
    hs_store *store;
    hs_batcher *batcher;
    hs_names *names;
    hs_query_ctx qctx;
    char *names_dir; /* (owned) */
} hs_tenant;

typedef struct {
    const char *store_url;  /* the default tenant's; the others' derive from it */
    hs_store_batching batch;
    hs_names_config names;  /* names.dir: the default tenant's uploads */
    hs_query_ctx query;     /* source paths, dropped labels (store, names, cache: per tenant) */
    int64_t retention_ns;   /* a tenant opened after the start is retained at once (0: keep all) */
} hs_tenants_config;

typedef struct hs_tenants hs_tenants;
/* Opens the default tenant (NULL with a message if it cannot). */
hs_tenants *hs_tenants_new(const hs_tenants_config *cfg, char *err, size_t errlen);
hs_tenant *hs_tenants_default(hs_tenants *ts);
/* The tenant called name (NULL or HS_TENANT_DEFAULT: the default), opened
 * on first use. 0, or -1 (a bad name), HS_TENANTS_FULL, or
 * HS_STORE_UNAVAILABLE (its store cannot be opened) with a message. */
int hs_tenants_get(hs_tenants *ts, const char *name, hs_tenant **out, char *err, size_t errlen);
/* Open the tenants stored before (SQLite: DIR/tenants/NAME; ClickHouse: the
 * databases DB_t_ENC), so retention reaches them after a restart. */
int hs_tenants_open_stored(hs_tenants *ts, char *err, size_t errlen);
/* fn on the default tenant and then on every open one. */
void hs_tenants_each(hs_tenants *ts, void (*fn)(hs_tenant *t, void *arg), void *arg);
void hs_tenants_free(hs_tenants *ts);
/* 1..HS_TENANT_NAME_MAX characters of [A-Za-z0-9_.-], not "." or "..". */
bool hs_tenant_name_ok(const char *name);
/* The store URL of tenant name given the default tenant's. 0, or -1. */
int hs_tenant_store_url(const char *base, const char *name, char *out, size_t len);

/* --tokens FILE: "TOKEN TENANT" lines. */
typedef struct hs_tokens hs_tokens;
hs_tokens *hs_tokens_load(const char *path, char *err, size_t errlen);
/* The tenant of a bearer token, or NULL (compares every entry in full). */
const char *hs_tokens_tenant(const hs_tokens *m, const char *token);
size_t hs_tokens_count(const hs_tokens *m);
const char *hs_tokens_tenant_at(const hs_tokens *m, size_t i);
void hs_tokens_free(hs_tokens *m);

/* ---- debuginfo.c ---- */
/* /api/v1/debuginfo[/ID]: GET lists (or tells one), PUT/POST uploads (the
 * body already written to tmp by http.c), DELETE removes. */
int hs_debuginfo_handle(hs_names *n, const hs_http_request *rq, const char *tmp, hs_http_response *rs);

/* ---- scrape.c ---- */
typedef struct hs_scraper hs_scraper;
/* Start scraping urls every period_s on a thread of its own. */
hs_scraper *hs_scraper_start(hs_batcher *b, const hs_limits *lim, const char *const *urls, size_t n,
                             int period_s, int seconds, char *err, size_t errlen);
void hs_scraper_stop(hs_scraper *s);

/* ---- assets.c ---- */
/* The embedded file for a URL path ("/" is index.html); NULL if none. */
const void *hs_asset_get(const char *path, size_t *len, const char **content_type);

/* ---- conn_guard.c: the deadline for a request's head ---- */
typedef struct hs_conn_guard hs_conn_guard;
/* A guard that shuts down connections waiting more than HEAD_DEADLINE_S
 * for a request head (from their opening or their previous request's end);
 * its thread checks once a second. NULL if out of memory. */
hs_conn_guard *hs_conn_guard_start(int head_deadline_s);
/* After every connection is closed (MHD_stop_daemon). */
void hs_conn_guard_stop(hs_conn_guard *g);
/* A new connection on socket FD: its entry (NULL: not guarded). */
void *hs_conn_guard_open(hs_conn_guard *g, int fd);
/* Its head arrived (true) or its request ended (false: the clock restarts). */
void hs_conn_guard_request(hs_conn_guard *g, void *entry, bool in_request);
/* It is closing (before its socket is). */
void hs_conn_guard_close(hs_conn_guard *g, void *entry);
/* How many connections the guard has cut. */
unsigned long hs_conn_guard_cut(hs_conn_guard *g);

/* ---- http.c: the server ---- */
typedef struct {
    const char *listen;     /* "127.0.0.1:4040" */
    const char *store_url;  /* see hs_store_open */
    const char *token;      /* NULL: none */
    const char *tokens_file; /* --tokens: "TOKEN TENANT" lines (NULL: none) */
    bool public_without_token; /* a non-loopback listen address without a token is refused unless set */
    unsigned max_conns_per_peer; /* 0: the default (HS_SERVE_PEER_CONNS) */
    int64_t retention_ns;   /* 0: keep forever */
    const char *const *scrape_urls;
    size_t n_scrape;
    int scrape_period_s;
    const char *const *source_paths;
    size_t n_source_paths;
    hs_limits limits;
    hs_store_batching batch; /* overrides of the store's group commit (zeros: its defaults) */
    hs_names_config names;   /* where debug info comes from (names.h) */
    size_t max_debuginfo;    /* largest debug info upload (0: 1 GiB) */
} hs_server_config;

typedef struct hs_server hs_server;
/* Every route, one "METHOD PATH" line each (serve --print-routes; the
 * tenant isolation test walks them all). */
void hs_server_print_routes(FILE *out);
hs_server *hs_server_start(const hs_server_config *cfg, char *err, size_t errlen);
/* The bound port (useful with port 0). */
int hs_server_port(const hs_server *s);
void hs_server_stop(hs_server *s);

#endif
