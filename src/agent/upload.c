/* upload.c — continuous mode: send each window's profiles to a collector.
 *
 * control.c places one window of HOTSPUR_DURATION at a random point of
 * every HOTSPUR_PERIOD (hs_upload_phase: Cloud Profiler's scheme, so a
 * fleet does not upload in step; the first window within the first 10 s,
 * so the first profile comes soon after start) and at its end calls
 * hs_agent_window_end(),
 * which encodes every enabled type (symbolized, gzipped pprof) on the agent
 * thread and queues it. A second thread of the agent's own ("hotspur-up",
 * every signal blocked, never profiled, its allocations not recorded)
 * takes the queue in order and POSTs each profile:
 *
 *   POST {server}/api/v1/ingest?service=S&type=T[&version=V][&label=K=V]...
 *        &from=UNIX.NS&until=UNIX.NS&id=ID  body: the gzipped pprof
 *
 * with a fresh random 128-bit id per profile (kept across retries, so a
 * retry after a lost answer is not stored twice) and "Authorization:
 * Bearer TOKEN" when HOTSPUR_TOKEN is set. Answers: 2xx done; 4xx other
 * than 429 dropped (the server will never take it; reported once,
 * counted); 5xx, 429, no connection or no answer in HOTSPUR_UPLOAD_TIMEOUT:
 * retried after an exponential backoff with jitter (1 s doubling up to the
 * period), or after the answer's Retry-After when it is longer. "Try
 * later" answers (429, 502, 503, 504: the server or its store is busy,
 * down or full) are like a refused connection: the profile stays queued
 * however long that lasts. A profile answered another 5xx (500: the server
 * failed on it) five times is dropped as rejected.
 *
 * The queue is bounded in profiles (HOTSPUR_UPLOAD_QUEUE) and bytes
 * (QUEUE_BYTES); when full the oldest profile is dropped and counted.
 *
 * HTTP is a plain HTTP/1.1 POST over a socket (http:// only; see "Continuous
 * mode" in docs/agent.md for why not libcurl): non-blocking socket, every
 * step under poll() with the request's deadline, SOCK_CLOEXEC,
 * MSG_NOSIGNAL, Connection: close.
 */
#define _GNU_SOURCE
#include "agent/upload.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/fds.h"
#include "profile/otlp.h"

#define FLUSH_NS 2000000000LL            /* the most exit waits for uploads */
#define EXEC_FLUSH_NS 1000000000LL       /* the most an exec waits for them */
#define QUEUE_BYTES (8u << 20)           /* encoded profiles queued at most */
#define MAX_SERVER_ERRORS 5              /* 5xx answers before a profile is dropped */
#define MAX_QUERY 2048
#define RESPONSE_MAX 4096

typedef struct item {
    struct item *next;
    char type[8];
    void *data;
    size_t len;
    int64_t start_ns, duration_ns;
    char id[33];
    int server_errors;
} item;

static struct {
    char url[512];             /* HOTSPUR_SERVER as given, for messages */
    char host[256], port[8];   /* where to connect */
    char host_header[300];     /* host[:port] as in the URL */
    char prefix[256];          /* path before /api/v1/ingest, no trailing '/' */
    char query[MAX_QUERY];     /* service=...&version=...&label=... */
    char auth[600];            /* "Authorization: Bearer T\r\n" or "" */
    int otlp;                  /* HOTSPUR_OTLP_ENDPOINT: POST {prefix}/v1development/profiles, OTLP protobuf */
    char service[256], version[128];  /* the OTLP resource's service.name and service.version */
    char labels[1024];         /* HOTSPUR_LABELS split at ',' (NULs), resource attributes */
    const char *attrs[64];
    size_t n_attrs;
    int64_t timeout_ns;        /* per request, connect included */
    int64_t backoff_cap_ns;
    size_t max_items;
} g_cfg;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake; /* the uploader: work, flush or stop */
static pthread_cond_t g_done; /* the exit flush: an attempt ended */
static item *g_head, *g_tail;
static item *g_inflight; /* the item the thread is posting (g_busy) */
static size_t g_n, g_bytes;
static int g_running, g_busy, g_stop, g_flushing, g_flush_failed;
static int g_failing, g_logged_reject, g_logged_drop;
static int g_failures;           /* consecutive failed attempts */
static int64_t g_retry_at;       /* CLOCK_MONOTONIC: no attempt before */
static uint64_t g_sent, g_dropped, g_rejected, g_attempts_failed;

/* ---- randomness (ids, phase, jitter) ---- */

/* The settings' source (hs_upload_settings): NULL, the environment. */
static const char *(*g_get)(const char *name);

void hs_upload_settings(const char *(*get)(const char *name))
{
    g_get = get;
}

static const char *setting(const char *name)
{
    return g_get ? g_get(name) : getenv(name);
}

static uint64_t random64(void)
{
    uint64_t v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
        return v;
    /* No entropy yet (early boot): time and pid, mixed (splitmix64). */
    static _Atomic uint64_t ctr;
    uint64_t z = (uint64_t)hs_now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32) ^ ++ctr;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t hs_upload_phase(int64_t period_ns, int64_t duration_ns, int first)
{
    int64_t span = first && period_ns > HS_UPLOAD_FIRST_NS ? HS_UPLOAD_FIRST_NS : period_ns;
    int64_t slack = span - duration_ns;
    return slack > 0 ? (int64_t)(random64() % (uint64_t)(slack + 1)) : 0;
}

/* ---- configuration ---- */

/* Append s percent-encoded (RFC 3986 unreserved kept) to out. */
static int url_encode(char *out, size_t outlen, const char *s)
{
    size_t o = strlen(out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                    *p == '-' || *p == '_' || *p == '.' || *p == '~';
        if (o + (plain ? 1 : 3) >= outlen)
            return -1;
        if (plain)
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, outlen - o, "%%%02X", *p);
    }
    out[o] = 0;
    return 0;
}

static int add_param(const char *key, const char *value)
{
    size_t o = strlen(g_cfg.query);
    if (o + strlen(key) + 3 >= sizeof g_cfg.query)
        return -1;
    snprintf(g_cfg.query + o, sizeof g_cfg.query - o, "%s%s=", o ? "&" : "", key);
    return url_encode(g_cfg.query, sizeof g_cfg.query, value);
}

/* http://host[:port][/prefix] into g_cfg; -1 with why. */
static int parse_url(const char *url, const char **why)
{
    if (strncmp(url, "https://", 8) == 0) {
        *why = "https is not supported (plain http:// only; see docs/agent.md)";
        return -1;
    }
    if (strncmp(url, "http://", 7) != 0) {
        *why = "want http://HOST:PORT";
        return -1;
    }
    const char *h = url + 7, *path = h + strcspn(h, "/?#");
    if (*path == '?' || *path == '#') {
        *why = "no query or fragment allowed";
        return -1;
    }
    size_t hl = (size_t)(path - h);
    if (hl == 0 || hl >= sizeof g_cfg.host_header) {
        *why = "no host";
        return -1;
    }
    memcpy(g_cfg.host_header, h, hl);
    g_cfg.host_header[hl] = 0;
    const char *port = NULL, *hs = g_cfg.host_header, *he;
    if (*hs == '[') { /* [v6 address] */
        he = strchr(hs, ']');
        if (!he || (he[1] && he[1] != ':')) {
            *why = "bad [IPv6] host";
            return -1;
        }
        hs++;
        port = he[1] ? he + 2 : NULL;
    } else {
        he = strchr(hs, ':');
        port = he ? he + 1 : NULL;
        if (!he)
            he = hs + strlen(hs);
    }
    if (he == hs || (size_t)(he - hs) >= sizeof g_cfg.host) {
        *why = "no host";
        return -1;
    }
    memcpy(g_cfg.host, hs, (size_t)(he - hs));
    g_cfg.host[he - hs] = 0;
    snprintf(g_cfg.port, sizeof g_cfg.port, "80");
    if (port) {
        char *end;
        long p = strtol(port, &end, 10);
        if (!*port || *end || p < 1 || p > 65535) {
            *why = "bad port";
            return -1;
        }
        snprintf(g_cfg.port, sizeof g_cfg.port, "%ld", p);
    }
    size_t pl = strlen(path);
    while (pl && path[pl - 1] == '/')
        pl--;
    if (pl >= sizeof g_cfg.prefix || strpbrk(path, " \r\n")) {
        *why = "bad path";
        return -1;
    }
    memcpy(g_cfg.prefix, path, pl);
    g_cfg.prefix[pl] = 0;
    return 0;
}

/* HOTSPUR_LABELS=k=v,k2=v2: each pair a label=k=v parameter; a pair
 * without '=' or with an empty key is reported and left out. */
static int parse_labels(const char *s)
{
    char buf[sizeof g_cfg.labels];
    if (strlen(s) >= sizeof buf) {
        fprintf(stderr, "hotspur: ignoring HOTSPUR_LABELS (longer than %zu bytes)\n", sizeof buf - 1);
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            fprintf(stderr, "hotspur: ignoring label '%s' in HOTSPUR_LABELS (want key=value)\n", tok);
            continue;
        }
        if (add_param("label", tok) != 0)
            return -1;
        if (g_cfg.n_attrs < sizeof g_cfg.attrs / sizeof *g_cfg.attrs)
            g_cfg.attrs[g_cfg.n_attrs++] = g_cfg.labels + (tok - buf);
    }
    memcpy(g_cfg.labels, buf, sizeof g_cfg.labels); /* the pairs, NUL-terminated where strtok cut */
    return 0;
}

static void default_service(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *slash = strrchr(exe, '/');
    snprintf(out, len, "%.200s", n > 0 ? (slash ? slash + 1 : exe) : program_invocation_short_name);
}

static int read_config(void)
{
    const char *url = setting("HOTSPUR_SERVER"), *why = "", *var = "HOTSPUR_SERVER";
    const char *otlp = setting("HOTSPUR_OTLP_ENDPOINT");
    memset(&g_cfg, 0, sizeof g_cfg);
    if (otlp && *otlp) { /* OTLP's endpoint: a base URL, the signal's path appended (docs/otlp.md) */
        url = otlp;
        var = "HOTSPUR_OTLP_ENDPOINT";
        g_cfg.otlp = 1;
    }
    snprintf(g_cfg.url, sizeof g_cfg.url, "%s", url ? url : "");
    if (!url || strlen(url) >= sizeof g_cfg.url || parse_url(url, &why) != 0) {
        fprintf(stderr, "hotspur: %s=%s: %s; not profiling\n", var, url ? url : "", why);
        return -1;
    }
    char service[256];
    const char *sv = setting("HOTSPUR_SERVICE"), *ver = setting("HOTSPUR_VERSION");
    const char *labels = setting("HOTSPUR_LABELS"), *token = setting("HOTSPUR_TOKEN");
    if (sv && *sv)
        snprintf(service, sizeof service, "%s", sv);
    else
        default_service(service, sizeof service);
    snprintf(g_cfg.service, sizeof g_cfg.service, "%s", service);
    snprintf(g_cfg.version, sizeof g_cfg.version, "%s", ver && *ver ? ver : "");
    if (add_param("service", service) != 0 || (ver && *ver && add_param("version", ver) != 0) ||
        (labels && *labels && parse_labels(labels) != 0)) {
        fprintf(stderr, "hotspur: service, version and labels are too long (%d bytes at most); not profiling\n",
                MAX_QUERY);
        return -1;
    }
    if (token && *token) {
        if (strpbrk(token, "\r\n") || strlen(token) > 512) {
            fprintf(stderr, "hotspur: HOTSPUR_TOKEN is not a usable token; not profiling\n");
            return -1;
        }
        snprintf(g_cfg.auth, sizeof g_cfg.auth, "Authorization: Bearer %s\r\n", token);
    }
    g_cfg.timeout_ns = hs_agent_env_duration("HOTSPUR_UPLOAD_TIMEOUT", 10000000000LL);
    g_cfg.max_items = (size_t)hs_agent_env_long("HOTSPUR_UPLOAD_QUEUE", 16, 1, 1024);
    int64_t cap = hs_g.cfg.period_ns;
    g_cfg.backoff_cap_ns = cap < 1000000000LL ? 1000000000LL : cap > 600000000000LL ? 600000000000LL : cap;
    return 0;
}

/* ---- the queue (g_lock held) ---- */

static void item_free(item *it)
{
    free(it->data);
    free(it);
}

/* The oldest profile, out of the queue (which is not empty). */
static item *pop(void)
{
    item *it = g_head;
    g_head = it->next;
    if (!g_head)
        g_tail = NULL;
    g_n--;
    g_bytes -= it->len;
    return it;
}

/* Drop the oldest profiles while the queue is over its bounds. */
static void enforce_bounds(void)
{
    while (g_head && (g_n > g_cfg.max_items || (g_bytes > QUEUE_BYTES && g_n > 1))) {
        item *it = pop();
        g_dropped++;
        if (!g_logged_drop++)
            fprintf(stderr, "hotspur: upload queue full (%s unreachable?): dropping the oldest profiles "
                            "(counted; reported at exit)\n", g_cfg.url);
        item_free(it);
    }
}

static void push(item *it, int front)
{
    if (front) {
        it->next = g_head;
        g_head = it;
        if (!g_tail)
            g_tail = it;
    } else {
        it->next = NULL;
        if (g_tail)
            g_tail->next = it;
        else
            g_head = it;
        g_tail = it;
    }
    g_n++;
    g_bytes += it->len;
    enforce_bounds();
}

void hs_upload_queue(const char *type, void *data, size_t len, int64_t start_ns, int64_t duration_ns, void *arg)
{
    (void)arg;
    hs_self.in_agent++;
    item *it = calloc(1, sizeof *it);
    if (!it) {
        free(data);
        hs_self.in_agent--;
        return;
    }
    snprintf(it->type, sizeof it->type, "%s", type);
    it->data = data;
    it->len = len;
    it->start_ns = start_ns;
    it->duration_ns = duration_ns;
    snprintf(it->id, sizeof it->id, "%016llx%016llx", (unsigned long long)random64(),
             (unsigned long long)random64());
    pthread_mutex_lock(&g_lock);
    if (!g_running || g_stop) {
        pthread_mutex_unlock(&g_lock);
        item_free(it);
        hs_self.in_agent--;
        return;
    }
    push(it, 0);
    pthread_cond_signal(&g_wake);
    pthread_mutex_unlock(&g_lock);
    hs_self.in_agent--;
}

/* ---- HTTP ---- */

static int remaining_ms(int64_t deadline)
{
    int64_t left = deadline - hs_now_ns(CLOCK_MONOTONIC);
    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

/* Wait for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int ms = remaining_ms(deadline);
        if (ms == 0)
            return 0;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* Connect to the collector; the socket is kept as one of the agent's fds
 * (a high number, close-on-exec, its identity checked before it is closed,
 * so a program that closes and reuses fds never loses one to the agent). */
static int connect_to(int64_t deadline, hs_fd *out, char *msg, size_t msglen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(g_cfg.host, g_cfg.port, &hints, &res);
    if (rc != 0) {
        snprintf(msg, msglen, "cannot resolve %.100s: %.100s", g_cfg.host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    snprintf(msg, msglen, "no address");
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0 || hs_fd_keep(out, fd) != 0) {
            snprintf(msg, msglen, "socket: %s", strerror(errno));
            fd = -1;
            continue;
        }
        fd = out->fd;
        int err = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                socklen_t el = sizeof err;
                int w = wait_fd(fd, POLLOUT, deadline);
                if (w == 0)
                    err = ETIMEDOUT;
                else if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
                    err = errno;
            }
        }
        if (err) {
            snprintf(msg, msglen, "connect: %s", strerror(err));
            hs_fd_drop(out);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd < 0 ? -1 : 0;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(fd, POLLOUT, deadline) != 1) {
                errno = ETIMEDOUT;
                return -1;
            }
        } else {
            return -1;
        }
    }
    return 0;
}

/* Read the answer until the end of its body (Content-Length), the server
 * closes, the buffer is full or the deadline; returns its status code, or
 * -1 with msg. The body's start goes to body. */
static int read_answer(int fd, int64_t deadline, char *body, size_t bodylen, int *retry_after_s, char *msg,
                       size_t msglen)
{
    char buf[RESPONSE_MAX + 1];
    size_t n = 0;
    long want = -1; /* header + body bytes, once known */
    char *eoh = NULL;
    while (n < RESPONSE_MAX && (want < 0 || (long)n < want)) {
        ssize_t k = recv(fd, buf + n, RESPONSE_MAX - n, 0);
        if (k > 0) {
            n += (size_t)k;
            buf[n] = 0;
            if (!eoh && (eoh = strstr(buf, "\r\n\r\n"))) {
                const char *cl = strcasestr(buf, "\r\nContent-Length:");
                if (cl && cl < eoh)
                    want = (long)(eoh + 4 - buf) + strtol(cl + 17, NULL, 10);
            }
            continue;
        }
        if (k == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(fd, POLLIN, deadline);
            if (w == 1)
                continue;
            if (n == 0 || !eoh) {
                if (w == 0)
                    snprintf(msg, msglen, "no answer in time");
                else
                    snprintf(msg, msglen, "poll: %s", strerror(errno));
                return -1;
            }
            break;
        }
        snprintf(msg, msglen, "recv: %s", strerror(errno));
        return -1;
    }
    buf[n] = 0;
    int status;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status > 599) {
        snprintf(msg, msglen, n ? "not an HTTP answer" : "connection closed without an answer");
        return -1;
    }
    const char *b = eoh ? eoh + 4 : "";
    snprintf(body, bodylen, "%.*s", (int)strcspn(b, "\r\n"), b);
    const char *ra = strcasestr(buf, "\r\nRetry-After:");
    if (ra && (!eoh || ra < eoh)) {
        long v = strtol(ra + 14, NULL, 10); /* delay-seconds; an HTTP date reads as 0: the backoff applies */
        *retry_after_s = v > 0 ? (int)(v > 86400 ? 86400 : v) : 0;
    }
    return status;
}

/* POST one profile; its HTTP status (and the answer's Retry-After in
 * seconds, 0 if none), or -1 with msg (no answer). */
static int post(const item *it, int64_t deadline, char *body, size_t bodylen, int *retry_after_s, char *msg,
                size_t msglen)
{
    char head[MAX_QUERY + 1536];
    /* the window to the nanosecond (the profile's time_nanos, duration_nanos) */
    long long from = it->start_ns, until = it->start_ns + it->duration_ns;
    int hl = g_cfg.otlp ? snprintf(head, sizeof head,
                      "POST %s" HS_OTLP_PATH " HTTP/1.1\r\n"
                      "Host: %s\r\n"
                      "User-Agent: hotspur-agent/" HS_AGENT_VERSION "\r\n"
                      "Content-Type: application/x-protobuf\r\n"
                      "Content-Length: %zu\r\n"
                      "%s"
                      "Connection: close\r\n\r\n",
                      g_cfg.prefix, g_cfg.host_header, it->len, g_cfg.auth) : snprintf(head, sizeof head,
                      "POST %s/api/v1/ingest?%s&type=%s&from=%lld.%09lld&until=%lld.%09lld&id=%s HTTP/1.1\r\n"
                      "Host: %s\r\n"
                      "User-Agent: hotspur-agent/" HS_AGENT_VERSION "\r\n"
                      "Content-Type: application/octet-stream\r\n"
                      "Content-Length: %zu\r\n"
                      "%s"
                      "Connection: close\r\n\r\n",
                      g_cfg.prefix, g_cfg.query, it->type, from / 1000000000LL, from % 1000000000LL,
                      until / 1000000000LL, until % 1000000000LL, it->id,
                      g_cfg.host_header, it->len, g_cfg.auth);
    if (hl < 0 || (size_t)hl >= sizeof head) {
        snprintf(msg, msglen, "request too long");
        return -1;
    }
    hs_fd conn = {.fd = -1};
    if (connect_to(deadline, &conn, msg, msglen) != 0)
        return -1;
    int fd = conn.fd, status = -1;
    if (send_all(fd, head, (size_t)hl, deadline) != 0 || send_all(fd, it->data, it->len, deadline) != 0)
        snprintf(msg, msglen, "send: %s", strerror(errno));
    else
        status = read_answer(fd, deadline, body, bodylen, retry_after_s, msg, msglen);
    hs_fd_drop(&conn);
    return status;
}

/* ---- the upload thread ---- */

static int64_t backoff_ns(int failures)
{
    int64_t d = 1000000000LL;
    for (int i = 1; i < failures && d < g_cfg.backoff_cap_ns; i++)
        d *= 2;
    if (d > g_cfg.backoff_cap_ns)
        d = g_cfg.backoff_cap_ns;
    return d / 2 + (int64_t)(random64() % (uint64_t)(d / 2 + 1)); /* jitter: [d/2, d] */
}

static void timed_wait(pthread_cond_t *c, int64_t deadline)
{
    struct timespec ts = {deadline / 1000000000LL, deadline % 1000000000LL};
    pthread_cond_timedwait(c, &g_lock, &ts);
}

/* "Try later": the server or what is behind it is busy, down or full. */
static int try_later(int status)
{
    return status == 429 || status == 502 || status == 503 || status == 504;
}

/* The outcome of one attempt (g_lock held). */
static void settle(item *it, int status, const char *body, int retry_after_s, const char *msg)
{
    if (status >= 200 && status < 300) {
        g_sent++;
        if (g_failing)
            fprintf(stderr, "hotspur: uploads to %s work again\n", g_cfg.url);
        g_failing = g_failures = 0;
        g_retry_at = 0;
        item_free(it);
        return;
    }
    if (status >= 400 && status < 500 && !try_later(status)) {
        g_rejected++;
        if (!g_logged_reject++)
            fprintf(stderr, "hotspur: %s refused a %s profile: %d %s; dropped (further refusals are "
                            "counted, reported at exit)\n", g_cfg.url, it->type, status, body);
        g_failures = 0;
        item_free(it);
        return;
    }
    g_attempts_failed++;
    if (g_flushing)
        g_flush_failed = 1; /* at exit: no second try */
    if (!g_failing++) {
        if (status > 0)
            fprintf(stderr, "hotspur: cannot upload to %s: %d %s; will retry (reported once until "
                            "an upload succeeds)\n", g_cfg.url, status, body);
        else
            fprintf(stderr, "hotspur: cannot upload to %s: %s; will retry (reported once until an "
                            "upload succeeds)\n", g_cfg.url, msg);
    }
    g_failures++;
    int64_t wait = backoff_ns(g_failures), asked = (int64_t)retry_after_s * 1000000000LL;
    if (asked > wait)
        wait = asked < g_cfg.backoff_cap_ns ? asked : g_cfg.backoff_cap_ns;
    g_retry_at = hs_now_ns(CLOCK_MONOTONIC) + wait;
    if (status >= 500 && !try_later(status) && ++it->server_errors >= MAX_SERVER_ERRORS) {
        g_rejected++;
        item_free(it);
        return;
    }
    push(it, 1); /* first in line again (or dropped, if the queue filled meanwhile) */
}

static void *upload_main(void *unused)
{
    (void)unused;
    hs_self.in_agent = 1; /* nothing this thread does is the program's */
    pthread_setname_np(pthread_self(), "hotspur-up"); /* by itself: see control_main */
    pthread_mutex_lock(&g_lock);
    while (!g_stop) {
        int64_t now = hs_now_ns(CLOCK_MONOTONIC);
        if (!g_head || (g_flushing && g_flush_failed)) {
            pthread_cond_wait(&g_wake, &g_lock);
            continue;
        }
        if (!g_flushing && now < g_retry_at) {
            timed_wait(&g_wake, g_retry_at);
            continue;
        }
        item *it = pop();
        g_busy = 1;
        g_inflight = it;
        int64_t deadline = now + g_cfg.timeout_ns;
        pthread_mutex_unlock(&g_lock);
        char body[256] = "", msg[256] = "";
        int retry_after_s = 0;
        int status = post(it, deadline, body, sizeof body, &retry_after_s, msg, sizeof msg);
        pthread_mutex_lock(&g_lock);
        g_busy = 0;
        g_inflight = NULL;
        if (g_stop) { /* exit gave up waiting: leave quietly */
            item_free(it);
            break;
        }
        settle(it, status, body, retry_after_s, msg);
        pthread_cond_broadcast(&g_done);
    }
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static int start_thread(void)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&g_wake, &ca) != 0 || pthread_cond_init(&g_done, &ca) != 0)
        return -1;
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g_lock, NULL);
    g_head = g_tail = NULL;
    g_n = g_bytes = 0;
    g_busy = g_stop = g_flushing = g_flush_failed = 0;
    g_failing = g_logged_reject = g_logged_drop = g_failures = 0;
    g_retry_at = 0;
    g_sent = g_dropped = g_rejected = g_attempts_failed = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits it */
    pthread_t t;
    int rc = hs_agent_thread_create(&t, upload_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_detach(t);
    g_running = 1;
    return 0;
}

int hs_upload_start(void)
{
    if (read_config() != 0)
        return -1;
    if (start_thread() != 0) {
        fprintf(stderr, "hotspur: no upload thread: %s; not profiling\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* Have the thread send the queue without backoff, and wait (g_lock held)
 * until it is empty, an attempt failed, or max_ns passed. */
static void flush_wait(int64_t max_ns)
{
    int64_t deadline = hs_now_ns(CLOCK_MONOTONIC) + max_ns;
    g_flushing = 1;
    g_flush_failed = 0;
    pthread_cond_signal(&g_wake);
    while ((g_head || g_busy) && !g_flush_failed && hs_now_ns(CLOCK_MONOTONIC) < deadline)
        timed_wait(&g_done, deadline);
}

void hs_upload_exit(void)
{
    if (!g_running)
        return;
    pthread_mutex_lock(&g_lock);
    flush_wait(FLUSH_NS);
    size_t unsent = g_n + (size_t)g_busy;
    g_stop = 1;
    g_running = 0;
    pthread_cond_signal(&g_wake);
    /* Quiet unless something went wrong, asked for, or under hotspur record. */
    if (hs_g.cfg.stats || g_dropped || g_rejected || unsent || getenv("HOTSPUR_ROOT_PID"))
        fprintf(stderr, "hotspur: uploads to %s: %llu sent, %llu refused by the server, %llu dropped "
                        "(queue full), %zu not sent at exit\n", g_cfg.url, (unsigned long long)g_sent,
                (unsigned long long)g_rejected, (unsigned long long)g_dropped, unsent);
    /* The queue stays: the thread may still hold an item, the process ends. */
    pthread_mutex_unlock(&g_lock);
}

int hs_upload_is_otlp(void)
{
    return g_cfg.otlp;
}

int hs_upload_otlp_encode(const hs_profile *p, void **data, size_t *len)
{
    hs_otlp_resource r = {.service = g_cfg.service, .version = g_cfg.version[0] ? g_cfg.version : NULL,
                          .attrs = g_cfg.attrs, .n_attrs = g_cfg.n_attrs};
    hs_bytes b = {0};
    char err[128];
    if (hs_otlp_encode(&p, 1, &r, &b, err, sizeof err) != 0) {
        hs_bytes_free(&b);
        fprintf(stderr, "hotspur: %s\n", err);
        return -1;
    }
    *data = b.p;
    *len = b.n;
    return 0;
}

int hs_upload_before_exec(void (*keep)(const char *type, const void *data, size_t len, void *arg), void *arg)
{
    if (!g_running || g_cfg.otlp) /* OTLP bodies are no pprof files to keep */
        return 0;
    pthread_mutex_lock(&g_lock);
    flush_wait(EXEC_FLUSH_NS);
    /* What is left goes to keep: the queue (taken out of it), and the
     * profile being posted, which stays the thread's (if the exec fails
     * and that post succeeds, it is both uploaded and kept). */
    int n = 0;
    if (g_busy && g_inflight) {
        keep(g_inflight->type, g_inflight->data, g_inflight->len, arg);
        n++;
    }
    while (g_head) {
        item *it = pop();
        keep(it->type, it->data, it->len, arg);
        item_free(it);
        n++;
    }
    g_flushing = 0; /* if the exec fails, uploads go on as before */
    g_flush_failed = 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void hs_upload_after_fork(int on)
{
    /* The parent's thread did not come along; its queue is the parent's to
     * send. The lock may have been held by that thread: start afresh. */
    g_running = 0;
    for (item *it = g_head, *next; it; it = next) {
        next = it->next;
        item_free(it);
    }
    g_head = g_tail = NULL;
    if (on && start_thread() != 0)
        fprintf(stderr, "hotspur: no upload thread in child %d\n", (int)getpid());
}

void hs_upload_status(char *out, size_t len)
{
    pthread_mutex_lock(&g_lock);
    snprintf(out, len, " uploaded=%llu queued=%zu dropped=%llu refused=%llu failures=%llu",
             (unsigned long long)g_sent, g_n + (size_t)g_busy, (unsigned long long)g_dropped,
             (unsigned long long)g_rejected, (unsigned long long)g_attempts_failed);
    pthread_mutex_unlock(&g_lock);
}
