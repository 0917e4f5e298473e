/* http.c — the HTTP side of `hotspur serve` on libmicrohttpd: listening,
 * the security rules, request bodies, routing, and the server's lifetime
 * (store, batcher, scraper, retention).
 *
 * One thread per connection (MHD's internal polling): an ingest request
 * waits for its group commit (batch.c) without holding up other clients.
 * Every request goes through the same gate, in this order:
 *   1. loopback rule: when the listen address is loopback, a peer that is
 *      not loopback gets 403, and so does a Host header that is not a
 *      loopback name or address (a web page cannot reach the API through
 *      DNS rebinding);
 *   2. the route (method + path): 404 / 405;
 *   2a. unambiguous framing: two Content-Lengths, Content-Length with
 *      Transfer-Encoding, a Transfer-Encoding other than "chunked", or a
 *      header name that is not an HTTP token ("Transfer-Encoding :") get
 *      400 and the connection is closed, so no front proxy and this server
 *      can disagree on where a request ends (libmicrohttpd 0.9.75 is
 *      lenient about these, and hung on some);
 *   2b. the same-origin rule on ingest and API routes: a request a browser
 *      made for a page of another origin (an Origin header that is not this
 *      server's own, "Origin: null", or Sec-Fetch-Site other than
 *      same-origin/none) gets 403, so no web page can upload or query
 *      through a visitor's browser (cross-site request forgery);
 *   3. the bearer token (--token) on the API and ingest routes: 401;
 *   4. the body: a Content-Length above limits.max_body is refused with 413
 *      before any of it is read; a chunked body that grows past it is
 *      dropped as it arrives (never kept) and answered 413 at its end, and
 *      the connection is cut if the client sends far more (4 x max_body).
 * Handlers (ingest.c, query.c, assets.c) then see an hs_http_request with
 * decoded query parameters in order, repeats kept, and the whole body. */
#define _GNU_SOURCE
#include "base/clock.h"
#include "base/json.h"
#include "profile/otlp.h"
#include "server/ingest.h"
#include "server/server.h"

#include "server/names.h"
#include "server/query_cache.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#define HS_MAX_PARAMS 256
#define HS_MAX_CONNS 256          /* connections at once (a thread each) */
#define HS_PEER_CONNS 64          /* per client address, unless --max-connections-per-peer */
#define HS_HEAD_DEADLINE_S 15     /* for a request head, from connect or the previous request's end */
#define HS_IDLE_TIMEOUT_S 60      /* no byte for this long, in a request */
#define HS_CONN_POOL (256 * 1024) /* libmicrohttpd's memory per connection: the head must fit */
#define HS_MAX_URL (32 * 1024)    /* longer: 414 in JSON (beyond HS_CONN_POOL, MHD's own HTML 414) */
#define HS_MAX_HEADERS (64 * 1024) /* all header lines: longer, 431 in JSON (likewise) */
#define HS_RETAIN_EVERY_S 3600
#define HS_STACK_CACHE_BYTES ((size_t)64 << 20) /* stack records kept for queries */

struct hs_server {
    hs_server_config cfg;
    char *token;
    size_t token_len;
    char **scrape_urls, **source_paths;
    hs_tenants *tenants; /* a store, batcher, namer and cache per tenant (tenant.c) */
    hs_tenant *def;      /* the default tenant */
    hs_tokens *tokens;   /* --tokens: bearer token -> tenant (NULL: none) */
    hs_scraper *scraper;
    struct MHD_Daemon *mhd;
    int port;
    bool loopback;
    char *listen_host; /* the host part of cfg.listen, accepted as a Host header */
    hs_conn_guard *guard;
    pthread_t retainer;
    bool retainer_running, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

void hs_limits_default(hs_limits *l)
{
    l->max_body = (size_t)16 << 20;
    l->max_decompressed = (size_t)64 << 20;
    l->max_ratio = 100;
    l->max_labels = 64;
    l->max_label_len = 256;
    l->max_depth = 1024;
    l->max_samples = 1000000;
    l->drop_labels = NULL;
    l->n_drop_labels = 0;
}

const char *hs_param_get(const hs_http_request *rq, const char *key)
{
    for (size_t i = 0; i < rq->n_params; i++)
        if (strcmp(rq->params[i].key, key) == 0)
            return rq->params[i].value;
    return NULL;
}

int hs_respond_error(hs_http_response *rs, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    size_t cap = sizeof msg * 6 + 32;
    free(rs->body);
    rs->body = malloc(cap);
    rs->status = status;
    rs->content_type = "application/json";
    rs->len = 0;
    if (!rs->body)
        return status;
    size_t n = (size_t)snprintf(rs->body, cap, "{\"error\":\"");
    n = hs_json_escape_into(rs->body, cap, n, msg);
    n += (size_t)snprintf(rs->body + n, cap - n, "\"}\n");
    rs->len = n;
    return status;
}

/* ---- addresses ---- */

static bool addr_is_loopback(const struct sockaddr *sa)
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

/* Split "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces). */
static int split_listen(const char *listen, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon;
    const char *h = listen;
    size_t hl;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':')
            return -1;
        h = listen + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - listen);
    }
    if (hl >= hostlen || strlen(colon + 1) >= portlen || !colon[1])
        return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    strcpy(port, colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    return atol(port) <= 65535 ? 0 : -1;
}

/* Is the Host header (name or address, optional port) a loopback one? */
static bool host_header_ok(const hs_server *s, const char *host)
{
    if (!host || !*host) /* HTTP/1.0 without Host */
        return true;
    char h[256];
    size_t n;
    if (host[0] == '[') {
        const char *e = strchr(host, ']');
        if (!e)
            return false;
        n = (size_t)(e - host - 1);
        host++;
    } else {
        const char *c = strchr(host, ':');
        n = c ? (size_t)(c - host) : strlen(host);
    }
    if (n == 0 || n >= sizeof h)
        return false;
    memcpy(h, host, n);
    h[n] = 0;
    if (strcasecmp(h, "localhost") == 0 || (s->listen_host && strcasecmp(h, s->listen_host) == 0))
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, h, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* The authority (host[:port]) of an Origin such as "https://h:1": NULL if
 * ORIGIN is not scheme://authority. */
static const char *origin_authority(const char *origin)
{
    const char *p = strstr(origin, "://");
    if (!p || p == origin || !p[3] || strchr(p + 3, '/'))
        return NULL;
    return p + 3;
}

/* May this request go on, as far as browsers' origins go? Clients that are
 * not browsers (agents, curl, pprof) send neither header and pass. A
 * browser sends Sec-Fetch-Site on every request and Origin on every POST
 * and cross-origin fetch: both must say "this server's own page". The
 * origin's authority is compared with Host (and X-Forwarded-Host, which a
 * reverse proxy that rewrites Host sets). */
static bool same_origin_ok(struct MHD_Connection *conn, const char **why)
{
    const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0) {
        *why = "Sec-Fetch-Site";
        return false;
    }
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (!origin)
        return true;
    const char *auth = origin_authority(origin);
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *fwd = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-Host");
    if (auth && ((host && strcasecmp(auth, host) == 0) || (fwd && strcasecmp(auth, fwd) == 0)))
        return true;
    *why = "Origin";
    return false;
}

/* Constant time in the length of the expected token. */
static bool token_ok(const hs_server *s, const char *auth)
{
    static const char prefix[] = "Bearer ";
    if (!auth || strncasecmp(auth, prefix, sizeof prefix - 1) != 0)
        return false;
    const char *got = auth + sizeof prefix - 1;
    size_t gl = strlen(got);
    unsigned char d = gl != s->token_len;
    for (size_t i = 0; i < s->token_len; i++)
        d |= (unsigned char)(s->token[i] ^ (i < gl ? got[i] : 0));
    return d == 0;
}


/* ---- requests ---- */

enum { ROUTE_NONE, ROUTE_INGEST, ROUTE_PYROSCOPE, ROUTE_OTLP, ROUTE_QUERY, ROUTE_HEALTH, ROUTE_ASSET, ROUTE_DEBUGINFO };

typedef struct {
    int route;
    char *body;
    size_t len, cap;
    bool too_big;
    size_t discarded;
    hs_param params[HS_MAX_PARAMS];
    size_t n_params;
    bool too_many_params;
    void *guarded; /* the connection's entry in the head-deadline guard */
    int fd;        /* a debug info upload goes to this file (tmp), not to memory */
    char *tmp;
    size_t flen;
    bool write_failed;
    hs_tenant *tenant; /* whose request it is (gate) */
} conn_state;

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    conn_state *c = cls;
    if ((!key || !*key) && (!value || !*value)) /* "a=1&&b=2", a trailing '&' */
        return MHD_YES;
    if (c->n_params == HS_MAX_PARAMS) {
        c->too_many_params = true;
        return MHD_NO;
    }
    c->params[c->n_params].key = key ? key : "";
    c->params[c->n_params].value = value ? value : "";
    c->n_params++;
    return MHD_YES;
}

void hs_server_print_routes(FILE *out)
{
    fprintf(out, "POST /api/v1/ingest\nPOST /ingest\nPOST %s\n", HS_OTLP_PATH);
    size_t n;
    const char *const *q = hs_query_endpoints(&n);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "GET /api/v1/%s\n", q[i]);
    fprintf(out, "GET /api/v1/debuginfo\nGET /api/v1/debuginfo/ID\nPUT /api/v1/debuginfo/ID\n"
                 "POST /api/v1/debuginfo/ID\nDELETE /api/v1/debuginfo/ID\nGET /healthz\nGET /\n");
}

static int route_of(const char *method, const char *url, int *status)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;
    int r;
    if (strcmp(url, "/api/v1/debuginfo") == 0 || strncmp(url, "/api/v1/debuginfo/", 18) == 0) {
        bool ok = get || strcmp(method, "DELETE") == 0 || strcmp(method, "PUT") == 0 || post;
        if (!ok)
            *status = MHD_HTTP_METHOD_NOT_ALLOWED;
        return ok ? ROUTE_DEBUGINFO : ROUTE_NONE;
    }
    if (strcmp(url, "/api/v1/ingest") == 0)
        r = ROUTE_INGEST;
    else if (strcmp(url, "/ingest") == 0)
        r = ROUTE_PYROSCOPE;
    else if (strcmp(url, HS_OTLP_PATH) == 0)
        r = ROUTE_OTLP;
    else if (strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0)
        r = ROUTE_QUERY;
    else if (strcmp(url, "/healthz") == 0)
        r = ROUTE_HEALTH;
    else
        r = ROUTE_ASSET;
    if ((r == ROUTE_INGEST || r == ROUTE_PYROSCOPE || r == ROUTE_OTLP) ? !post : !get) {
        *status = MHD_HTTP_METHOD_NOT_ALLOWED;
        return ROUTE_NONE;
    }
    return r;
}

/* Does the client take gzip? Accept-Encoding lists "gzip" (or "*") with
 * no ";q=0". */
static bool takes_gzip(struct MHD_Connection *conn)
{
    const char *ae = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    for (const char *p = ae; p && *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",;");
        size_t tl = n;
        while (tl && (p[tl - 1] == ' ' || p[tl - 1] == '\t'))
            tl--;
        bool gzip = (tl == 4 && strncasecmp(p, "gzip", 4) == 0) || (tl == 1 && p[0] == '*');
        double qv = 1;
        const char *e = p + n;
        if (*e == ';') {
            const char *qp = e + 1 + strspn(e + 1, " ");
            if (qp[0] == 'q' && qp[1] == '=')
                qv = strtod(qp + 2, NULL);
            e += strcspn(e, ",");
        }
        if (gzip)
            return qv > 0;
        p = e;
    }
    return false;
}

/* Gzip a JSON answer in place (level 1: cheap, JSON shrinks 4-8x). Keeps
 * the answer as it is on any failure. */
static bool gzip_body(hs_http_response *rs)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    size_t cap = deflateBound(&z, (uLong)rs->len);
    char *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return false;
    }
    z.next_in = (Bytef *)rs->body;
    z.avail_in = (uInt)rs->len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(out);
        return false;
    }
    free(rs->body);
    rs->body = out;
    rs->len = n;
    return true;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, hs_http_response *rs,
                                     const char *allow)
{
    bool gz = rs->body && rs->len >= 1024 && rs->len < ((size_t)1 << 31) && rs->content_type &&
              strncmp(rs->content_type, "application/json", 16) == 0 && takes_gzip(conn) && gzip_body(rs);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(rs->len, rs->body ? rs->body : (char *)"",
                                        rs->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(rs->body);
        rs->body = NULL;
        return MHD_NO;
    }
    rs->body = NULL; /* MHD owns it now */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rs->content_type ? rs->content_type : "application/octet-stream");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (gz)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (rs->content_type && strncmp(rs->content_type, "application/json", 16) == 0)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (rs->extra_header[0]) {
        char name[128];
        const char *colon = strchr(rs->extra_header, ':');
        if (colon && (size_t)(colon - rs->extra_header) < sizeof name) {
            memcpy(name, rs->extra_header, (size_t)(colon - rs->extra_header));
            name[colon - rs->extra_header] = 0;
            const char *v = colon + 1;
            while (*v == ' ')
                v++;
            MHD_add_response_header(r, name, v);
        }
    }
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)rs->status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, int status, const char *allow,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result send_error(struct MHD_Connection *conn, int status, const char *allow,
                                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_http_response rs = {0};
    hs_respond_error(&rs, status, "%s", msg);
    return send_response(conn, &rs, allow);
}

/* What the request's headers say about its framing (scan_header). */
typedef struct {
    int n_cl, n_te;
    size_t bytes; /* of every header line */
    const char *te;
    const char *bad_name; /* a header name that is not a token */
} framing;

static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    framing *f = cls;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (!is_tchar(*p)) {
            if (!f->bad_name)
                f->bad_name = key;
            break;
        }
    if (!*key && !f->bad_name)
        f->bad_name = key;
    f->bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->n_cl++;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->n_te++;
        f->te = value;
    }
    return MHD_YES;
}

static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 2;
    return MHD_YES;
}

/* The framing's fault, or NULL when it is unambiguous; *status is the
 * answer's (400, or 414/431 for a head over our bounds). */
static const char *framing_fault(struct MHD_Connection *conn, const char *url, int *status, char *buf,
                                 size_t len)
{
    framing f = {0};
    size_t url_len = strlen(url);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, scan_header, &f);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, count_arg, &url_len);
    *status = 400;
    if (url_len > HS_MAX_URL) {
        *status = 414;
        snprintf(buf, len, "the URL is about %zu bytes; at most %d are taken", url_len, HS_MAX_URL);
    } else if (f.bytes > HS_MAX_HEADERS) {
        *status = 431;
        snprintf(buf, len, "the headers are about %zu bytes; at most %d are taken", f.bytes, HS_MAX_HEADERS);
    } else if (f.bad_name)
        snprintf(buf, len, "header name '%.60s' is not an HTTP token", f.bad_name);
    else if (f.n_cl > 1)
        snprintf(buf, len, "%d Content-Length headers", f.n_cl);
    else if (f.n_te && f.n_cl)
        snprintf(buf, len, "both Content-Length and Transfer-Encoding");
    else if (f.n_te > 1 || (f.n_te && strcasecmp(f.te ? f.te : "", "chunked") != 0))
        snprintf(buf, len, "Transfer-Encoding '%.60s' (only 'chunked' is taken)", f.n_te > 1 ? "(twice)" : f.te);
    else
        return NULL;
    return buf;
}

static enum MHD_Result count_org(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    if (key && strcasecmp(key, HS_TENANT_HEADER) == 0)
        (*(int *)cls)++;
    return MHD_YES;
}

/* Steps 3 and 3a of the gate: the bearer token, then whose request it is.
 * Without --tokens the X-Scope-OrgID header names the tenant (after the
 * --token check if there is one); with it the token does, and a header
 * naming another tenant is refused. The --token token may name any tenant.
 * 0 with c->tenant set, else the status already queued (or -1). */
static int tenant_of(hs_server *s, struct MHD_Connection *conn, conn_state *c)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *org = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, HS_TENANT_HEADER);
    int n_org = 0;
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_org, &n_org);
    if (n_org > 1)
        return send_error(conn, 400, NULL, "more than one %s header", HS_TENANT_HEADER) == MHD_YES ? 400 : -1;
    if (org && !hs_tenant_name_ok(org))
        return send_error(conn, 400, NULL, "bad %s '%.80s' (1..%d of [A-Za-z0-9_.-])", HS_TENANT_HEADER, org,
                          HS_TENANT_NAME_MAX) == MHD_YES ? 400 : -1;
    const char *tenant = org;
    if (s->tokens) {
        static const char prefix[] = "Bearer ";
        const char *mapped = auth && strncasecmp(auth, prefix, sizeof prefix - 1) == 0
                                 ? hs_tokens_tenant(s->tokens, auth + sizeof prefix - 1) : NULL;
        if (!mapped && !(s->token && token_ok(s, auth)))
            return send_error(conn, 401, NULL, "%s", auth ? "wrong bearer token" : "missing 'Authorization: Bearer TOKEN'") ==
                           MHD_YES ? 401 : -1;
        if (mapped && org && strcmp(org, mapped) != 0)
            return send_error(conn, 403, NULL, "this token is tenant %s's, not %.80s's", mapped, org) == MHD_YES ? 403 : -1;
        if (mapped)
            tenant = mapped;
    } else if (s->token && !token_ok(s, auth)) {
        return send_error(conn, 401, NULL, "%s", auth ? "wrong bearer token" : "missing 'Authorization: Bearer TOKEN'") ==
                       MHD_YES ? 401 : -1;
    }
    char err[512];
    int rc = hs_tenants_get(s->tenants, tenant, &c->tenant, err, sizeof err);
    if (rc == 0)
        return 0;
    int st = rc == HS_TENANTS_FULL ? 429 : rc == -1 ? 400 : 503;
    if (st == 503)
        fprintf(stderr, "hotspur serve: tenant %s: %s\n", tenant, err);
    return send_error(conn, st, NULL, "%s", err) == MHD_YES ? st : -1;
}

/* The checks made before any of the body is read. 0 to go on, else the
 * status of the error already queued (or -1 if it could not be). */
static int gate(hs_server *s, struct MHD_Connection *conn, const char *url, const char *method,
                conn_state *c)
{
    if (s->loopback) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!ci || !addr_is_loopback(ci->client_addr))
            return send_error(conn, 403, NULL, "this server listens on loopback only: remote peers are refused") ==
                           MHD_YES ? 403 : -1;
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        if (!host_header_ok(s, host))
            return send_error(conn, 403, NULL,
                              "Host '%.100s' is not a loopback name (the server listens on loopback)",
                              host) == MHD_YES ? 403 : -1;
    }
    char fbuf[160];
    int fst;
    const char *fault = framing_fault(conn, url, &fst, fbuf, sizeof fbuf);
    if (fault) {
        hs_http_response rs = {0};
        hs_respond_error(&rs, fst, "%s%s", fst == 400 ? "ambiguous request framing: " : "", fault);
        snprintf(rs.extra_header, sizeof rs.extra_header, "Connection: close");
        return send_response(conn, &rs, NULL) == MHD_YES ? fst : -1;
    }
    int status = 404;
    c->route = route_of(method, url, &status);
    if (c->route == ROUTE_NONE) {
        bool ingest = strcmp(url, "/api/v1/ingest") == 0 || strcmp(url, "/ingest") == 0 ||
                      strcmp(url, HS_OTLP_PATH) == 0;
        bool dbg = strncmp(url, "/api/v1/debuginfo", 17) == 0;
        return send_error(conn, status, ingest ? "POST" : dbg ? "GET, HEAD, PUT, POST, DELETE" : "GET, HEAD",
                          "method %.16s not allowed on %.200s",
                          method, url) == MHD_YES ? status : -1;
    }
    const char *why = NULL;
    if (c->route != ROUTE_ASSET && c->route != ROUTE_HEALTH && !same_origin_ok(conn, &why)) {
        const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, why);
        return send_error(conn, 403, NULL,
                          "cross-origin request refused (%s: %.100s): only this server's own pages may "
                          "use its API from a browser",
                          why, v ? v : "") == MHD_YES ? 403 : -1;
    }
    c->tenant = s->def;
    if (c->route != ROUTE_ASSET && c->route != ROUTE_HEALTH) {
        int st = tenant_of(s, conn, c);
        if (st)
            return st;
    }
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    c->fd = -1;
    bool upload = c->route == ROUTE_DEBUGINFO && (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0);
    size_t max = upload ? s->cfg.max_debuginfo : s->cfg.limits.max_body;
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        if (errno || end == cl || v > max)
            return send_error(conn, 413, NULL, "request body of %s bytes is over the limit of %zu bytes%s", cl,
                              max, upload ? " (--max-debuginfo)" : "") == MHD_YES ? 413 : -1;
    }
    if (upload) { /* streamed to a file beside the uploads, never held in memory */
        const char *dir = hs_names_dir(c->tenant->names);
        if (!dir)
            return send_error(conn, 400, NULL, "this server keeps no uploaded debug info (start it with "
                              "--debuginfo-dir DIR or --data DIR)") == MHD_YES ? 400 : -1;
        if (asprintf(&c->tmp, "%s/.upload-XXXXXX", dir) < 0 || (c->fd = mkostemp(c->tmp, O_CLOEXEC)) < 0) {
            free(c->tmp);
            c->tmp = NULL;
            return send_error(conn, 500, NULL, "cannot create a temporary file in %s", dir) == MHD_YES ? 500 : -1;
        }
    }
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_param, c);
    if (c->too_many_params)
        return send_error(conn, 400, NULL, "more than %d query parameters", HS_MAX_PARAMS) == MHD_YES ? 400 : -1;
    return 0;
}

static int body_append(hs_server *s, conn_state *c, const char *data, size_t n)
{
    if (c->fd >= 0) {
        if (c->too_big || n > s->cfg.max_debuginfo - c->flen) {
            c->too_big = true; /* (answered 413 at the end; cut off far beyond) */
            c->discarded += n;
            return c->discarded / 4 > s->cfg.max_debuginfo + (256 << 10) ? -1 : 0;
        }
        for (size_t done = 0; done < n && !c->write_failed;) {
            ssize_t w = write(c->fd, data + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                c->write_failed = true;
            else
                done += (size_t)w;
        }
        c->flen += n;
        return 0;
    }
    if (c->too_big || n > s->cfg.limits.max_body - c->len) {
        c->too_big = true;
        c->discarded += n;
        /* MHD cannot answer before the body has arrived: what is over
         * the limit is counted and dropped, and a client that goes on far
         * beyond it (4 x max_body + 1 MiB) is cut off without an answer. */
        return c->discarded / 4 > s->cfg.limits.max_body + (256 << 10) ? -1 : 0;
    }
    if (c->len + n > c->cap) {
        size_t nc = c->cap ? c->cap : 65536;
        while (nc < c->len + n)
            nc *= 2;
        if (nc > s->cfg.limits.max_body)
            nc = s->cfg.limits.max_body;
        char *nb = realloc(c->body, nc);
        if (!nb)
            return -1;
        c->body = nb;
        c->cap = nc;
    }
    memcpy(c->body + c->len, data, n);
    c->len += n;
    return 0;
}

static void log_failure(const char *method, const char *url, const hs_http_response *rs)
{
    if (rs->status < 500)
        return;
    size_t n = rs->body ? (rs->len > 300 ? 300 : rs->len) : 0;
    while (n && (rs->body[n - 1] == '\n' || rs->body[n - 1] == '\r'))
        n--; /* one line per failure: the body's own newline is not printed */
    fprintf(stderr, "hotspur serve: %s %s: %d %.*s\n", method, url, rs->status, (int)n, rs->body ? rs->body : "");
}

static enum MHD_Result dispatch(hs_server *s, struct MHD_Connection *conn, const char *url,
                                const char *method, conn_state *c)
{
    if (c->too_big)
        return send_error(conn, 413, NULL, "request body is over the limit of %zu bytes",
                          c->fd >= 0 ? s->cfg.max_debuginfo : s->cfg.limits.max_body);
    if (c->route == ROUTE_ASSET) {
        size_t len = 0;
        const char *ctype = NULL;
        const void *data = hs_asset_get(url, &len, &ctype);
        if (!data)
            return send_error(conn, 404, NULL, "no such page: %.200s", url);
        struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : "application/octet-stream");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        /* the UI loads nothing from elsewhere and runs no inline code: a
         * function name that slips through as HTML cannot run script */
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                                "base-uri 'none'; frame-ancestors 'none'; form-action 'self'");
        enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ok;
    }
    if (c->route == ROUTE_HEALTH) { /* the store answers a cheap query */
        char err[256] = "";
        char **v = NULL;
        size_t n = 0;
        int64_t t = hs_realtime_ns();
        hs_store_query hq = {.from_ns = t, .until_ns = t + 1};
        if (c->n_params)
            return send_error(conn, 400, NULL, "/healthz takes no parameters");
        int rc = hs_store_services(s->def->store, &hq, &v, &n, err, sizeof err);
        hs_store_strings_free(v, n);
        if (rc)
            return send_error(conn, 503, NULL, "store: %s", err);
        char werr[640];
        if (hs_batcher_write_health(s->def->batcher, werr, sizeof werr))
            return send_error(conn, 503, NULL, "not accepting writes: the last store write failed: %s", werr);
        hs_http_response ok = {.status = 200, .content_type = "application/json"};
        ok.body = strdup("{\"status\":\"ok\"}\n");
        ok.len = ok.body ? strlen(ok.body) : 0;
        return send_response(conn, &ok, NULL);
    }
    hs_http_request rq = {
        .method = method,
        .path = url,
        .params = c->params,
        .n_params = c->n_params,
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .content_encoding =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING),
        .body = c->body ? c->body : "",
        .body_len = c->len,
    };
    hs_http_response rs = {.status = 500};
    switch (c->route) {
    case ROUTE_INGEST:
        hs_ingest_native(c->tenant->batcher, &s->cfg.limits, &rq, &rs);
        break;
    case ROUTE_PYROSCOPE:
        hs_ingest_pyroscope(c->tenant->batcher, &s->cfg.limits, &rq, &rs);
        break;
    case ROUTE_OTLP:
        hs_ingest_otlp(c->tenant->batcher, &s->cfg.limits, &rq, &rs);
        break;
    case ROUTE_DEBUGINFO:
        if (c->fd >= 0) {
            close(c->fd);
            c->fd = -1;
            if (c->write_failed) {
                hs_respond_error(&rs, 507, "cannot write the upload to disk");
                break;
            }
        }
        hs_debuginfo_handle(c->tenant->names, &rq, c->tmp, &rs);
        break;
    default:
        hs_query_handle(&c->tenant->qctx, &rq, &rs);
        break;
    }
    if (rs.status < 100 || rs.status > 599)
        hs_respond_error(&rs, 500, "internal error: handler answered status %d", rs.status);
    log_failure(method, url, &rs);
    return send_response(conn, &rs, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    hs_server *s = cls;
    conn_state *c = *con_cls;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return MHD_NO;
        c->fd = -1;
        *con_cls = c;
        const union MHD_ConnectionInfo *si = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        c->guarded = si ? si->socket_context : NULL;
        hs_conn_guard_request(s->guard, c->guarded, true);
        int g = gate(s, conn, url, method, c);
        if (g < 0)
            return MHD_NO;
        if (g > 0)
            c->route = ROUTE_NONE; /* answered: ignore whatever body follows */
        return MHD_YES;
    }
    if (c->route == ROUTE_NONE) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        int r = body_append(s, c, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return r < 0 ? MHD_NO : MHD_YES;
    }
    return dispatch(s, conn, url, method, c);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    hs_server *s = cls;
    (void)conn;
    (void)toe;
    conn_state *c = *con_cls;
    if (c) {
        hs_conn_guard_request(s->guard, c->guarded, false);
        if (c->fd >= 0)
            close(c->fd);
        if (c->tmp)
            unlink(c->tmp); /* (gone already when it was taken) */
        free(c->tmp);
        free(c->body);
        free(c);
        *con_cls = NULL;
    }
}

/* Connections as they open and close, for the head deadline (conn_guard.c). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    hs_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? hs_conn_guard_open(s->guard, ci->connect_fd) : NULL;
    } else {
        hs_conn_guard_close(s->guard, *socket_context);
        *socket_context = NULL;
    }
}

/* ---- retention ---- */

static void retain_tenant(hs_tenant *t, void *arg)
{
    const hs_server *s = arg;
    char err[256];
    if (hs_store_retain(t->store, hs_realtime_ns() - s->cfg.retention_ns, err, sizeof err) != 0)
        fprintf(stderr, "hotspur serve: retention (tenant %s): %s\n", t->name, err);
}

static void *retain_loop(void *arg)
{
    hs_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        pthread_mutex_unlock(&s->mu);
        hs_tenants_each(s->tenants, retain_tenant, s);
        pthread_mutex_lock(&s->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += HS_RETAIN_EVERY_S;
        while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- lifetime ---- */

static char **dup_strv(const char *const *v, size_t n)
{
    char **d = calloc(n + 1, sizeof *d);
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(d[i] = strdup(v[i]))) {
            for (size_t j = 0; j < i; j++)
                free(d[j]);
            free(d);
            return NULL;
        }
    return d;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static struct MHD_Daemon *listen_on(hs_server *s, char *err, size_t errlen)
{
    char host[256], port[16];
    if (split_listen(s->cfg.listen, host, sizeof host, port, sizeof port) < 0) {
        snprintf(err, errlen, "bad listen address '%s' (HOST:PORT, [V6]:PORT or :PORT)", s->cfg.listen);
        return NULL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gr = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (gr != 0) {
        snprintf(err, errlen, "listen address '%s': %s", s->cfg.listen, gai_strerror(gr));
        return NULL;
    }
    struct addrinfo *pick = ai;
    if (!host[0]) /* ":PORT": every interface, IPv4 */
        for (struct addrinfo *a = ai; a; a = a->ai_next)
            if (a->ai_family == AF_INET) {
                pick = a;
                break;
            }
    s->loopback = addr_is_loopback(pick->ai_addr);
    if (!s->loopback && !s->token && !s->tokens && !s->cfg.public_without_token) {
        snprintf(err, errlen,
                 "refusing to listen on %s without a token: it is not a loopback address, so anyone who "
                 "can reach it could read every stored profile (and source under --source-path) and "
                 "upload profiles. Set --token T (or HOTSPUR_TOKEN), or pass --public-without-token "
                 "to serve it open",
                 s->cfg.listen);
        freeaddrinfo(ai);
        return NULL;
    }
    s->listen_host = host[0] ? strdup(host) : NULL;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (pick->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, pick->ai_addr,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HS_MAX_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        s->cfg.max_conns_per_peer ? s->cfg.max_conns_per_peer : (unsigned)HS_PEER_CONNS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HS_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)HS_CONN_POOL, MHD_OPTION_END);
    int e = errno;
    freeaddrinfo(ai);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s: %s", s->cfg.listen,
                 e ? strerror(e) : "libmicrohttpd failed to start");
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (di && getsockname(di->listen_fd, (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return d;
}

/* The allocator. Every upload allocates and frees a few MiB (the body, the
 * gunzipped profile, the decoded model, its decomposition) on its
 * connection's thread; with glibc's defaults each free hands the top of
 * the thread's heap back to the kernel (trim) and big blocks are mmap'd,
 * so the next upload faults the same pages in again: about a fifth of the
 * server's CPU per upload (bench/server_ingest.sh). Blocks up to 4 MiB come
 * from the heap and up to 32 MiB of free top is kept per arena. */
static void tune_malloc(void)
{
    /* 0 from another allocator (a sanitizer's): it keeps its own ways */
    if (mallopt(M_MMAP_THRESHOLD, 4 << 20) == 1)
        (void)mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

hs_server *hs_server_start(const hs_server_config *cfg, char *err, size_t errlen)
{
    hs_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    tune_malloc();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (s->cfg.limits.max_body == 0)
        hs_limits_default(&s->cfg.limits);
    if (cfg->token && cfg->token[0]) {
        s->token = strdup(cfg->token);
        s->token_len = strlen(cfg->token);
    }
    s->scrape_urls = dup_strv(cfg->scrape_urls, cfg->n_scrape);
    s->source_paths = dup_strv(cfg->source_paths, cfg->n_source_paths);
    if ((cfg->token && cfg->token[0] && !s->token) || !s->scrape_urls || !s->source_paths) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    s->cfg.token = s->token;
    if (cfg->tokens_file && !(s->tokens = hs_tokens_load(cfg->tokens_file, err, errlen)))
        goto fail;
    if (!s->cfg.max_debuginfo)
        s->cfg.max_debuginfo = (size_t)1 << 30;
    hs_tenants_config tc = {.store_url = cfg->store_url, .batch = cfg->batch, .names = cfg->names,
                            .retention_ns = cfg->retention_ns};
    tc.query.source_paths = (const char *const *)s->source_paths;
    tc.query.n_source_paths = cfg->n_source_paths;
    tc.query.dropped_labels = s->cfg.limits.drop_labels ? s->cfg.limits.drop_labels : hs_stack_default_drop;
    tc.query.n_dropped_labels = s->cfg.limits.drop_labels ? s->cfg.limits.n_drop_labels : hs_stack_n_default_drop;
    s->tenants = hs_tenants_new(&tc, err, errlen);
    if (!s->tenants)
        goto fail;
    s->def = hs_tenants_default(s->tenants);
    /* the tenants stored before and those of the token map, open from the
     * start so retention reaches them */
    if (hs_tenants_open_stored(s->tenants, err, errlen) < 0)
        goto fail;
    for (size_t i = 0; s->tokens && i < hs_tokens_count(s->tokens); i++) {
        hs_tenant *t;
        if (hs_tenants_get(s->tenants, hs_tokens_tenant_at(s->tokens, i), &t, err, errlen) != 0)
            goto fail;
    }
    if (cfg->retention_ns > 0) {
        if (pthread_create(&s->retainer, NULL, retain_loop, s) != 0) {
            snprintf(err, errlen, "cannot start the retention thread");
            goto fail;
        }
        s->retainer_running = true;
    }
    s->guard = hs_conn_guard_start(HS_HEAD_DEADLINE_S);
    if (!s->guard) {
        snprintf(err, errlen, "cannot start the connection guard");
        goto fail;
    }
    s->mhd = listen_on(s, err, errlen);
    if (!s->mhd)
        goto fail;
    if (cfg->n_scrape) {
        int period = cfg->scrape_period_s > 0 ? cfg->scrape_period_s : 60;
        /* a CPU profile covers the period but its last second (Pyroscope's
         * pull mode does the same), at most 5 minutes */
        int seconds = period > 301 ? 300 : (period > 1 ? period - 1 : 1);
        s->scraper = hs_scraper_start(s->def->batcher, &s->cfg.limits, (const char *const *)s->scrape_urls,
                                      cfg->n_scrape, period, seconds, err, errlen);
        if (!s->scraper)
            goto fail;
    }
    return s;
fail:
    hs_server_stop(s);
    return NULL;
}

int hs_server_ingest(hs_server *s, const hs_ingest_meta *m, const void *body, size_t len, hs_ingest_result *r)
{
    return hs_ingest_pprof(s->def->batcher, &s->cfg.limits, m, body, len, r);
}

int hs_server_port(const hs_server *s)
{
    return s->port;
}

void hs_server_stop(hs_server *s)
{
    if (!s)
        return;
    if (s->scraper)
        hs_scraper_stop(s->scraper);
    if (s->mhd)
        MHD_stop_daemon(s->mhd); /* waits for the requests in flight */
    hs_conn_guard_stop(s->guard);
    if (s->retainer_running) {
        pthread_mutex_lock(&s->mu);
        s->stopping = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->retainer, NULL);
    }
    hs_tenants_free(s->tenants);
    hs_tokens_free(s->tokens);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free_strv(s->scrape_urls);
    free_strv(s->source_paths);
    free(s->token);
    free(s->listen_host);
    free(s);
}
