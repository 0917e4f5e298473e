/* scrape.c — `hotspur serve --scrape URL`: pull pprof endpoints (Go's
 * net/http/pprof, or anything that serves profile.proto over HTTP) every
 * period and store what they answer, as if it had been uploaded.
 *
 * A scrape spec is the URL to fetch plus optional parameters of our own,
 * removed from the query before fetching:
 *   http://127.0.0.1:6060/debug/pprof/profile?service=api&label=zone=eu
 *     service=S    the service (default: HOST:PORT of the URL)
 *     version=V    the version
 *     label=K=V    a profile label (repeatable); instance=HOST:PORT is
 *                  always added unless given
 *     type=T       the type (default: from the sample types, "block" for a
 *                  path ending in /block, whose sample types are a lock's)
 * A path ending in /profile, /mutex, /block or /allocs without seconds=
 * gets seconds=N (hs_scraper's `seconds`: the profile covers most of the
 * period; for Go's cumulative mutex, block and allocs profiles this asks
 * net/http/pprof for the delta over those N seconds). Each period every
 * spec is fetched at once (one libcurl multi handle, so a 10 s CPU profile
 * does not delay a heap snapshot), with a connect timeout of 5 s and a
 * total of the URL's seconds= + 15 s; a body over limits.max_body is cut off. What
 * arrives goes through hs_ingest_pprof — the same checks, decomposition
 * and group commit as an upload. Failures are logged to stderr, once per
 * change of state per spec, and the next period tries again.
 *
 * /debug/pprof/heap is stored as served: inuse_* a snapshot, alloc_*
 * cumulative since the process started (scrape /allocs for deltas). */
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/ingest.h"
#include "server/server.h"

#define HS_SCRAPE_MAX_PARAMS 64

typedef struct {
    char *spec;  /* as given, for messages */
    char *fetch; /* the URL fetched */
    hs_param params[HS_SCRAPE_MAX_PARAMS];
    size_t n_params;
    char *strings; /* what params point into */
    /* one transfer */
    CURL *easy;
    char *body; /* max bytes */
    size_t len, max;
    int seconds; /* the profile's duration (seconds= of the URL), 0: a snapshot */
    bool too_big;
    bool failing; /* the last attempt failed (log only changes) */
} hs_target;

struct hs_scraper {
    hs_batcher *b;
    hs_limits limits;
    hs_target *t;
    size_t n;
    int period_s, seconds;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    CURLM *multi;
};

static void hs_target_free(hs_target *t)
{
    free(t->spec);
    free(t->fetch);
    free(t->strings);
    if (t->easy)
        curl_easy_cleanup(t->easy);
    free(t->body);
}

/* Parse one spec into t. 0, or -1 with a message. */
static int hs_target_parse(hs_target *t, const char *spec, int seconds, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    int rc = -1;
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *scheme = NULL;
    CURLU *u = curl_url();
    if (!u || !(t->spec = strdup(spec))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (curl_url_set(u, CURLUPART_URL, spec, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        snprintf(err, errlen, "--scrape %s: expected an http:// or https:// URL", spec);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        snprintf(err, errlen, "--scrape %s: cannot read the URL's port or path", spec);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
        query = NULL;
    /* Split the query into ours (decoded into t->strings) and the endpoint's. */
    size_t qlen = query ? strlen(query) : 0;
    char *keep = calloc(1, qlen + 32);
    t->strings = calloc(1, 2 * qlen + strlen(host) + strlen(port) + 64);
    if (!keep || !t->strings) {
        free(keep);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    size_t so = 0, ko = 0;
    bool have_service = false, have_instance = false, have_seconds = false, have_type = false;
    for (char *q = query, *next; q && *q; q = next) {
        char *amp = strchr(q, '&');
        next = amp ? amp + 1 : NULL;
        size_t pl = amp ? (size_t)(amp - q) : strlen(q);
        char *eq = memchr(q, '=', pl);
        size_t kl = eq ? (size_t)(eq - q) : pl;
        bool ours = (kl == 7 && !strncmp(q, "service", 7)) || (kl == 7 && !strncmp(q, "version", 7)) ||
                    (kl == 5 && !strncmp(q, "label", 5)) || (kl == 4 && !strncmp(q, "type", 4));
        if (!ours) {
            if (kl == 7 && !strncmp(q, "seconds", 7)) {
                have_seconds = true;
                t->seconds = eq ? atoi(eq + 1) : 0;
                if (t->seconds < 0 || t->seconds > 3600) {
                    snprintf(err, errlen, "--scrape %s: seconds= must be 0 to 3600", spec);
                    free(keep);
                    goto out;
                }
            }
            ko += (size_t)snprintf(keep + ko, qlen + 32 - ko, "%s%.*s", ko ? "&" : "", (int)pl, q);
            continue;
        }
        if (t->n_params + 3 >= HS_SCRAPE_MAX_PARAMS) {
            snprintf(err, errlen, "--scrape %s: too many parameters", spec);
            free(keep);
            goto out;
        }
        int dl = 0;
        char *val = curl_easy_unescape(NULL, eq ? eq + 1 : "", eq ? (int)(pl - kl - 1) : 0, &dl);
        if (!val) {
            snprintf(err, errlen, "out of memory");
            free(keep);
            goto out;
        }
        char *k = t->strings + so;
        memcpy(k, q, kl);
        k[kl] = '\0';
        so += kl + 1;
        char *v = t->strings + so;
        memcpy(v, val, (size_t)dl);
        v[dl] = '\0';
        so += (size_t)dl + 1;
        curl_free(val);
        have_service |= !strcmp(k, "service");
        have_type |= !strcmp(k, "type");
        have_instance |= !strcmp(k, "label") && !strncmp(v, "instance=", 9);
        t->params[t->n_params++] = (hs_param){k, v};
    }
    char *hp = t->strings + so;
    so += (size_t)sprintf(hp, "%s:%s", host, port) + 1;
    if (!have_service)
        t->params[t->n_params++] = (hs_param){"service", hp};
    if (!have_instance) {
        char *inst = t->strings + so;
        so += (size_t)sprintf(inst, "instance=%s", hp) + 1;
        t->params[t->n_params++] = (hs_param){"label", inst};
    }
    size_t pathl = strlen(path);
    if (!have_type && pathl >= 6 && !strcmp(path + pathl - 6, "/block"))
        t->params[t->n_params++] = (hs_param){"type", "block"};
    /* CPU profiles, and Go's cumulative profiles as deltas over the window
     * (net/http/pprof computes them when given seconds=); heap stays a
     * snapshot of what is in use */
    static const char *const windowed[] = {"/profile", "/mutex", "/block", "/allocs"};
    bool window = false;
    for (size_t i = 0; i < sizeof windowed / sizeof windowed[0]; i++) {
        size_t wl = strlen(windowed[i]);
        window |= pathl >= wl && !strcmp(path + pathl - wl, windowed[i]);
    }
    if (!have_seconds && window) {
        ko += (size_t)snprintf(keep + ko, qlen + 32 - ko, "%sseconds=%d", ko ? "&" : "", seconds);
        t->seconds = seconds;
    }
    if (curl_url_set(u, CURLUPART_QUERY, ko ? keep : NULL, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &t->fetch, 0) != CURLUE_OK) {
        free(keep);
        snprintf(err, errlen, "--scrape %s: cannot rebuild the URL", spec);
        goto out;
    }
    free(keep);
    /* t->fetch is curl's; keep a malloc'd copy so hs_target_free is uniform */
    char *f = strdup(t->fetch);
    curl_free(t->fetch);
    t->fetch = f;
    if (!f) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return rc;
}

static size_t hs_on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    hs_target *t = arg;
    size_t n = size * nmemb;
    if (n > t->max - t->len) {
        t->too_big = true;
        return 0; /* aborts the transfer */
    }
    memcpy(t->body + t->len, data, n);
    t->len += n;
    return n;
}

/* Start t's transfer on s->multi. 0, or -1. */
static int hs_begin(hs_scraper *s, hs_target *t, int timeout_s)
{
    if (!t->body) {
        if (!(t->body = malloc(s->limits.max_body ? s->limits.max_body : 1)))
            return -1;
        t->max = s->limits.max_body;
    }
    t->len = 0;
    t->too_big = false;
    if (!t->easy && !(t->easy = curl_easy_init()))
        return -1;
    curl_easy_reset(t->easy);
    if (curl_easy_setopt(t->easy, CURLOPT_URL, t->fetch) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, hs_on_data) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT, 5L) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_TIMEOUT, (long)timeout_s) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(t->easy, CURLOPT_USERAGENT, "hotspur-scrape") != CURLE_OK)
        return -1;
    return curl_multi_add_handle(s->multi, t->easy) == CURLM_OK ? 0 : -1;
}

static void hs_log_state(hs_target *t, bool failed, const char *msg)
{
    if (failed) {
        if (!t->failing)
            fprintf(stderr, "hotspur serve: scrape %s: %s (logged once until it works)\n", t->spec, msg);
    } else if (t->failing) {
        fprintf(stderr, "hotspur serve: scrape %s: ok again\n", t->spec);
    }
    t->failing = failed;
}

/* A finished transfer: store what it brought. */
static void hs_finish(hs_scraper *s, hs_target *t, CURLcode res)
{
    char msg[300];
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (res != CURLE_OK) {
        if (t->too_big)
            snprintf(msg, sizeof msg, "the answer is over %zu bytes", s->limits.max_body);
        else
            snprintf(msg, sizeof msg, "%s", curl_easy_strerror(res));
        hs_log_state(t, true, msg);
        return;
    }
    if (code != 200) {
        snprintf(msg, sizeof msg, "HTTP status %ld", code);
        hs_log_state(t, true, msg);
        return;
    }
    hs_ingest_meta m;
    hs_ingest_result r;
    const char *labels[HS_SCRAPE_MAX_PARAMS];
    if (hs_ingest_meta_from_params(t->params, t->n_params, &m, labels, &r) == 0)
        hs_ingest_pprof(s->b, &s->limits, &m, t->body, t->len, &r);
    if (r.code != HS_INGEST_OK) {
        snprintf(msg, sizeof msg, "not stored (%d): %.*s", hs_ingest_http_status(r.code), (int)strcspn(r.msg, "\n"),
                 r.msg);
        hs_log_state(t, true, msg);
    } else {
        hs_log_state(t, false, NULL);
    }
}

static bool hs_stopping(hs_scraper *s)
{
    pthread_mutex_lock(&s->mu);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* One round: fetch every target at once, store the answers. */
static void hs_round(hs_scraper *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (hs_begin(s, &s->t[i], s->t[i].seconds + 15) != 0)
            hs_log_state(&s->t[i], true, "cannot start the transfer");
    int running = 1;
    while (running && !hs_stopping(s)) {
        if (curl_multi_perform(s->multi, &running) != CURLM_OK)
            break;
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(s->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            hs_target *t = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            CURLcode res = m->data.result;
            curl_multi_remove_handle(s->multi, m->easy_handle);
            if (t)
                hs_finish(s, t, res);
        }
        if (running && curl_multi_poll(s->multi, NULL, 0, 200, NULL) != CURLM_OK)
            break;
    }
    for (size_t i = 0; i < s->n; i++) /* on stop: abandon what is in flight */
        if (s->t[i].easy)
            curl_multi_remove_handle(s->multi, s->t[i].easy);
}

static void *hs_scrape_loop(void *arg)
{
    hs_scraper *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!hs_stopping(s)) {
        hs_round(s);
        next.tv_sec += s->period_s;
        pthread_mutex_lock(&s->mu);
        while (!s->stop)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &next) != 0)
                break;
        pthread_mutex_unlock(&s->mu);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + s->period_s)
            next = now; /* fell behind (a slow round): don't burst */
    }
    return NULL;
}

static void hs_scraper_free(hs_scraper *s)
{
    for (size_t i = 0; i < s->n; i++)
        hs_target_free(&s->t[i]);
    free(s->t);
    if (s->multi)
        curl_multi_cleanup(s->multi);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    curl_global_cleanup();
}

hs_scraper *hs_scraper_start(hs_batcher *b, const hs_limits *lim, const char *const *urls, size_t n,
                             int period_s, int seconds, char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return NULL;
    }
    hs_scraper *s = calloc(1, sizeof *s);
    if (!s) {
        curl_global_cleanup();
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->b = b;
    s->limits = *lim;
    s->period_s = period_s > 0 ? period_s : 60;
    s->seconds = seconds > 0 ? seconds : 10;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->t = calloc(n ? n : 1, sizeof *s->t);
    s->multi = curl_multi_init();
    if (!s->t || !s->multi) {
        snprintf(err, errlen, "out of memory");
        hs_scraper_free(s);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (hs_target_parse(&s->t[i], urls[i], s->seconds, err, errlen) != 0) {
            s->n = i + 1;
            hs_scraper_free(s);
            return NULL;
        }
        s->n = i + 1;
    }
    if (pthread_create(&s->thread, NULL, hs_scrape_loop, s) != 0) {
        snprintf(err, errlen, "cannot start the scrape thread");
        hs_scraper_free(s);
        return NULL;
    }
    return s;
}

void hs_scraper_stop(hs_scraper *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    curl_multi_wakeup(s->multi);
    pthread_join(s->thread, NULL);
    hs_scraper_free(s);
}
