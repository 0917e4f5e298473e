/* fetch.c — see fetch.h. */
#include "base/bytes.h"
#include "cli/fetch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HS_FETCH_MAX_BYTES ((size_t)1 << 30)

bool hs_fetch_is_url(const char *arg)
{
    return strncasecmp(arg, "http://", 7) == 0 || strncasecmp(arg, "https://", 8) == 0;
}

typedef struct {
    hs_bytes b; /* what arrived, NUL-terminated */
    bool too_big;
} fetch_buf;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    fetch_buf *f = arg;
    size_t add = size * n;
    if (add > HS_FETCH_MAX_BYTES - f->b.n) {
        f->too_big = true;
        return 0;
    }
    hs_bytes_put(&f->b, p, add);
    return f->b.oom ? 0 : add;
}

/* The server's message: the "error" of a {"error":"..."} body, else the
 * body's first line, bounded. */
static void server_message(const fetch_buf *b, char *out, size_t outlen)
{
    out[0] = 0;
    if (!b->b.n)
        return;
    const char *s = b->b.s, *key = strstr(s, "\"error\"");
    size_t n = 0;
    if (key) {
        key += 7;
        while (*key == ' ' || *key == ':')
            key++;
    }
    if (key && *key == '"') {
        for (const char *p = key + 1; *p && *p != '"' && n + 1 < outlen; p++) {
            if (*p == '\\' && p[1])
                p++;
            out[n++] = *p;
        }
    } else {
        for (const char *p = s; *p && *p != '\n' && *p != '\r' && n + 1 < outlen && n < 200; p++)
            out[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    }
    out[n] = 0;
}

int hs_fetch_url(const char *url, char **out, size_t *len, char *err, size_t errlen)
{
    return hs_fetch_request("GET", url, NULL, 0, out, len, err, errlen);
}

int hs_fetch_request(const char *method, const char *url, FILE *body, uint64_t body_len, char **out, size_t *len,
                     char *err, size_t errlen)
{
    static bool inited;
    if (!inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
            snprintf(err, errlen, "cannot initialise libcurl");
            return -1;
        }
        inited = true;
    }
    long timeout = 120;
    const char *t = getenv("HOTSPUR_FETCH_TIMEOUT");
    if (t && *t) {
        char *end;
        long v = strtol(t, &end, 10);
        if (*end || v <= 0) {
            snprintf(err, errlen, "bad HOTSPUR_FETCH_TIMEOUT '%s' (seconds)", t);
            return -1;
        }
        timeout = v;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    fetch_buf b = {0};
    struct curl_slist *hdrs = NULL;
    const char *token = getenv("HOTSPUR_TOKEN");
    char *auth = NULL;
    int rc = -1;
    if (token && *token) {
        size_t n = strlen(token) + 32;
        auth = malloc(n);
        if (!auth) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        snprintf(auth, n, "Authorization: Bearer %s", token);
        struct curl_slist *h = curl_slist_append(hdrs, auth);
        if (!h) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        hdrs = h;
    }
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout < 10 ? timeout : 10L);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)HS_FETCH_MAX_BYTES);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hotspur");
    if (body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READDATA, body);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        /* a big upload: no overall deadline, only one on a stalled transfer */
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 0L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, timeout);
    }
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (hdrs)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cr = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (cr != CURLE_OK) {
        if (b.too_big || cr == CURLE_FILESIZE_EXCEEDED)
            snprintf(err, errlen, "answer larger than %zu bytes", HS_FETCH_MAX_BYTES);
        else
            snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(cr));
        goto out;
    }
    if (status < 200 || status > 299) {
        char msg[300];
        server_message(&b, msg, sizeof msg);
        snprintf(err, errlen, "HTTP %ld%s%s%s", status, msg[0] ? ": " : "", msg,
                 status == 401 && !(token && *token) ? " (set HOTSPUR_TOKEN)" : "");
        goto out;
    }
    *out = b.b.p ? b.b.s : calloc(1, 1);
    *len = b.b.n;
    b.b.p = NULL;
    rc = *out ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "out of memory");
out:
    hs_bytes_free(&b.b);
    free(auth);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return rc;
}

void hs_fetch_help(FILE *out)
{
    fprintf(out, "\nA FILE may be an http:// or https:// URL: a `hotspur serve` query such as\n"
                 "'http://127.0.0.1:4040/api/v1/profile?service=S&type=cpu&from=now-1h', or any\n"
                 "pprof endpoint. $HOTSPUR_TOKEN is sent as bearer token; HOTSPUR_FETCH_TIMEOUT\n"
                 "bounds the request (seconds, default 120).\n");
}
