/* clickhouse_http.c — the ClickHouse store's HTTP: the pool of curl handles, and one request over HTTP to any
 * host of the cluster (errors, retries, HS_STORE_UNAVAILABLE). */
#define _GNU_SOURCE /* asprintf */
#include "store/clickhouse_internal.h"

static CURL *pool_get(ch_store *s)
{
    CURL *c = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->n_pool)
        c = s->pool[--s->n_pool];
    pthread_mutex_unlock(&s->mu);
    return c ? c : curl_easy_init();
}

static void pool_put(ch_store *s, CURL *c)
{
    pthread_mutex_lock(&s->mu);
    if (s->n_pool < CH_POOL) {
        s->pool[s->n_pool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (c)
        curl_easy_cleanup(c);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    hs_bytes *b = arg;
    size_t len = size * n;
    if (b->n + len > CH_MAX_RESPONSE)
        return 0; /* curl reports CURLE_WRITE_ERROR */
    hs_bytes_put(b, p, len);
    return b->oom ? 0 : len;
}

/* ClickHouse's error codes that mean "a server is down or slow", not
 * "the request is wrong": timeouts, network errors, a shard unreachable,
 * too many queries or parts. The client is told to retry (503). */
static int ch_code_unavailable(int code)
{
    switch (code) {
    case 159: /* TIMEOUT_EXCEEDED */
    case 160: /* TOO_SLOW */
    case 202: /* TOO_MANY_SIMULTANEOUS_QUERIES */
    case 209: /* SOCKET_TIMEOUT */
    case 210: /* NETWORK_ERROR */
    case 252: /* TOO_MANY_PARTS: inserts faster than merges, retry later */
    case 279: /* ALL_CONNECTION_TRIES_FAILED */
    case 285: /* TOO_FEW_LIVE_REPLICAS */
    case 394: /* QUERY_WAS_CANCELLED */
        return 1;
    default:
        return 0;
    }
}

/* The first line of ClickHouse's error answer, without its stack trace
 * and the e.what() repetition. */
static void ch_error_line(const hs_bytes *b, char *out, size_t outlen)
{
    const char *p = b->s ? b->s : "";
    size_t n = strcspn(p, "\n");
    const char *w = strstr(p, ", e.what() =");
    if (w && (size_t)(w - p) < n)
        n = (size_t)(w - p);
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

/* One HTTP request to host h. A query (kind CH_QUERY) is sent as the POST
 * body; an INSERT sends sql in the URL and body as its data. settings is
 * "" or "&name=value...". The answer goes to out (may be NULL). Returns 0,
 * -1, or HS_STORE_UNAVAILABLE; *connect_failed is set when the request
 * never reached the server (safe to send elsewhere). */
int ch_http(ch_store *s, size_t h, int kind, const char *sql, const hs_bytes *body, const char *settings,
                   hs_bytes *out, int *connect_failed, char *err, size_t errlen)
{
    *connect_failed = 0;
    CURL *c = pool_get(s);
    if (!c) {
        hs_err(err, errlen, "clickhouse: curl_easy_init failed");
        return -1;
    }
    hs_bytes url = {0}, resp = {0};
    char *esc = NULL;
    if (kind == CH_INSERT) {
        esc = curl_easy_escape(c, sql, 0);
        if (!esc) {
            pool_put(s, c);
            hs_err(err, errlen, "clickhouse: out of memory");
            return -1;
        }
    }
    long secs = (s->timeout_ms + 999) / 1000;
    hs_bytes_printf(&url, "http://%s:%d/?max_execution_time=%ld&wait_end_of_query=1%s%s%s",
               s->hosts[h].host, s->hosts[h].port, secs, kind == CH_INSERT ? "&query=" : "",
               esc ? esc : "", settings);
    curl_free(esc);
    if (url.oom) {
        pool_put(s, c);
        free(url.p);
        hs_err(err, errlen, "clickhouse: out of memory");
        return -1;
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url.p);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    const void *data = kind == CH_INSERT ? (const void *)body->p : (const void *)sql;
    size_t len = kind == CH_INSERT ? body->n : strlen(sql);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data ? data : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    if (hdr)
        hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (s->userpwd) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERPWD, s->userpwd);
    }
    if (kind == CH_INSERT) {
        /* Never let libcurl resend an INSERT on a reused connection that
         * died: the first one may have been stored. */
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    int rc = 0;
    if (cc != CURLE_OK) {
        *connect_failed = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
        if (cc == CURLE_WRITE_ERROR)
            hs_err(err, errlen, "clickhouse %s:%d: answer too large or out of memory", s->hosts[h].host,
                    s->hosts[h].port);
        else
            hs_err(err, errlen, "clickhouse %s:%d unavailable: %s", s->hosts[h].host, s->hosts[h].port,
                    curl_easy_strerror(cc));
        rc = cc == CURLE_WRITE_ERROR ? -1 : HS_STORE_UNAVAILABLE;
        /* A handle whose transfer failed half-way is not worth keeping. */
        curl_easy_cleanup(c);
        c = NULL;
    } else if (status != 200) {
        char line[400];
        ch_error_line(&resp, line, sizeof line);
        int code = 0;
        if (sscanf(line, "Code: %d", &code) != 1)
            code = 0;
        rc = status == 503 || ch_code_unavailable(code) ? HS_STORE_UNAVAILABLE : -1;
        hs_err(err, errlen, "clickhouse %s:%d%s: HTTP %ld: %s", s->hosts[h].host, s->hosts[h].port,
                rc == HS_STORE_UNAVAILABLE ? " unavailable (it, or a shard it needs, is down or slow)" : "", status,
                line[0] ? line : "(no message)");
    }
    if (c)
        pool_put(s, c);
    free(url.p);
    if (rc == 0 && out) {
        *out = resp;
        if (!out->p) {
            out->p = malloc(1);
            if (!out->p) {
                hs_err(err, errlen, "clickhouse: out of memory");
                return -1;
            }
            out->p[0] = 0;
        }
    } else {
        free(resp.p);
    }
    return rc;
}

/* A request to any host: the one that answered last first, then the
 * others when it cannot be reached at all. */
int ch_any(ch_store *s, int kind, const char *sql, const hs_bytes *body, const char *settings, hs_bytes *out,
                  char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    size_t first = s->next_host;
    pthread_mutex_unlock(&s->mu);
    int rc = -1;
    for (size_t i = 0; i < s->n_hosts; i++) {
        size_t h = (first + i) % s->n_hosts;
        int cf;
        rc = ch_http(s, h, kind, sql, body, settings, out, &cf, err, errlen);
        if (rc == 0 && h != first) {
            pthread_mutex_lock(&s->mu);
            s->next_host = h;
            pthread_mutex_unlock(&s->mu);
        }
        if (!cf)
            break;
    }
    return rc;
}

int ch_query(ch_store *s, const char *sql, hs_bytes *out, char *err, size_t errlen)
{
    return ch_any(s, CH_QUERY, sql, NULL, "", out, err, errlen);
}

/* Run sql on every host (DDL, retention), stopping at the first error. */
int ch_each(ch_store *s, const char *sql, char *err, size_t errlen)
{
    for (size_t h = 0; h < s->n_hosts; h++) {
        int cf;
        int rc = ch_http(s, h, CH_QUERY, sql, NULL, "", NULL, &cf, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}
