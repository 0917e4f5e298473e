/* server.c — shakesapp, the demo service of `make demo` and docs/tutorial.md.
 *
 * An HTTP server (libmicrohttpd) that counts the lines of a text corpus
 * containing a word or phrase: GET /?q=PHRASE answers the count. It is
 * written the way a C programmer really writes the slow version first and
 * fixes it step by step; -version N picks the step:
 *
 *   1  reads and splits the corpus on every request, and matches each line
 *      with a regular expression compiled for that line (regcomp per line);
 *   2  the same, but matches with a plain substring search (strcasestr);
 *   3  the same code as 2 (the demo turns heap profiling on for it);
 *   4  reads and splits the corpus once, at start.
 *
 * The corpus is the directory of plain-text files given by -corpus (default:
 * Debian's fortune database, /usr/share/games/fortunes: quotes, literature,
 * poems). Every file not ending in .dat or .u8 is read.
 *
 * usage: shakesapp_server [-version N] [-port P] [-port_file F] [-corpus DIR]
 * With -port 0 (the default) the kernel picks a free loopback port; the
 * server prints "listening on http://127.0.0.1:PORT" and writes PORT to
 * -port_file if given. SIGINT/SIGTERM stop it cleanly.
 *
 * Spans: a request with a W3C `traceparent` header (00-TRACE-SPAN-FLAGS) is
 * handled with the thread's samples labelled trace_id and span_id, through
 * the agent's hotspur_set_label (looked up at run time: without the agent
 * the header is ignored), so its flame graph is one filter away (the web
 * UI's trace filter, tagfocus=span_id=...). &repeat=N (1..1000) handles the
 * query N times: a deliberately slow request.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char **lines;
    size_t n, cap;
} corpus;

static int version = 1;
static const char *corpus_dir = "/usr/share/games/fortunes";
static corpus loaded; /* version 4: read once */

static int add_line(corpus *c, const char *s, size_t len)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        char **v = realloc(c->lines, cap * sizeof *v);
        if (!v)
            return -1;
        c->lines = v;
        c->cap = cap;
    }
    char *line = malloc(len + 1);
    if (!line)
        return -1;
    memcpy(line, s, len);
    line[len] = '\0';
    c->lines[c->n++] = line;
    return 0;
}

/* Read one file into a fresh buffer and append its lines. */
static int read_file_lines(corpus *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t len = 0, cap = 64 * 1024;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    int rc = 0;
    for (size_t start = 0, i = 0; i <= len && rc == 0; i++) {
        if (i == len || buf[i] == '\n') {
            if (i > start)
                rc = add_line(c, buf + start, i - start);
            start = i + 1;
        }
    }
    free(buf);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int read_corpus(corpus *c)
{
    DIR *d = opendir(corpus_dir);
    if (!d)
        return -1;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || ends_with(e->d_name, ".dat") || ends_with(e->d_name, ".u8"))
            continue;
        snprintf(path, sizeof path, "%s/%s", corpus_dir, e->d_name);
        if (read_file_lines(c, path) != 0)
            continue; /* a subdirectory or an unreadable file */
    }
    closedir(d);
    return c->n ? 0 : -1;
}

static void free_corpus(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->lines[i]);
    free(c->lines);
    memset(c, 0, sizeof *c);
}

/* Version 1: compile the query for every line it looks at. */
static int line_matches_regex(const char *line, const char *query)
{
    regex_t re;
    if (regcomp(&re, query, REG_ICASE | REG_NOSUB) != 0)
        return 0;
    int hit = regexec(&re, line, 0, NULL, 0) == 0;
    regfree(&re);
    return hit;
}

static int line_matches_substring(const char *line, const char *query)
{
    return strcasestr(line, query) != NULL;
}

static long count_matches(const corpus *c, const char *query)
{
    long hits = 0;
    for (size_t i = 0; i < c->n; i++)
        hits += version == 1 ? line_matches_regex(c->lines[i], query)
                             : line_matches_substring(c->lines[i], query);
    return hits;
}

/* The request handler: the function the CPU profile's focus list shows. */
static long handle_query(const char *query)
{
    if (version >= 4)
        return count_matches(&loaded, query);
    corpus c = {0};
    if (read_corpus(&c) != 0) {
        free_corpus(&c);
        return -1;
    }
    long hits = count_matches(&c, query);
    free_corpus(&c);
    return hits;
}

/* The span of a traceparent header into trace (33) and span (17), or 0. */
static int parse_traceparent(const char *h, char *trace, char *span)
{
    if (!h || strlen(h) < 55 || strncmp(h, "00-", 3) != 0 || h[35] != '-' || h[52] != '-')
        return 0;
    for (int i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)h[3 + i]))
            return 0;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)h[36 + i]))
            return 0;
    for (int i = 0; i < 32; i++)
        trace[i] = (char)tolower((unsigned char)h[3 + i]);
    for (int i = 0; i < 16; i++)
        span[i] = (char)tolower((unsigned char)h[36 + i]);
    trace[32] = span[16] = 0;
    return 1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *ver, const char *data, size_t *size, void **state)
{
    (void)cls, (void)url, (void)ver, (void)data, (void)size, (void)state;
    char body[64];
    unsigned code = MHD_HTTP_OK;
    const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "q");
    if (strcmp(method, "GET") != 0) {
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
        snprintf(body, sizeof body, "GET only\n");
    } else if (!q || !*q) {
        code = MHD_HTTP_BAD_REQUEST;
        snprintf(body, sizeof body, "missing ?q=\n");
    } else {
        /* the agent's labels API, when the agent is loaded (LD_PRELOAD) */
        int (*set_label)(const char *, const char *) =
            (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "hotspur_set_label");
        int (*clear_labels)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hotspur_clear_labels");
        char trace[33], span[17];
        int traced = set_label && clear_labels &&
                     parse_traceparent(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent"), trace, span);
        if (traced) {
            set_label("trace_id", trace);
            set_label("span_id", span);
        }
        const char *rp = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "repeat");
        int repeat = rp ? atoi(rp) : 1;
        if (repeat < 1 || repeat > 1000)
            repeat = 1;
        long n = 0;
        for (int i = 0; i < repeat && n >= 0; i++)
            n = handle_query(q);
        if (traced)
            clear_labels();
        if (n < 0) {
            code = MHD_HTTP_INTERNAL_SERVER_ERROR;
            snprintf(body, sizeof body, "cannot read the corpus\n");
        } else {
            snprintf(body, sizeof body, "%ld\n", n);
        }
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: shakesapp_server [-version 1-4] [-port P] [-port_file F] [-corpus DIR]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned port = 0;
    const char *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-')
            a++;
        if (i + 1 >= argc)
            usage();
        if (strcmp(a, "-version") == 0)
            version = atoi(argv[++i]);
        else if (strcmp(a, "-port") == 0)
            port = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "-port_file") == 0)
            port_file = argv[++i];
        else if (strcmp(a, "-corpus") == 0)
            corpus_dir = argv[++i];
        else
            usage();
    }
    if (version < 1 || version > 4)
        usage();
    if (version >= 4 && read_corpus(&loaded) != 0) {
        fprintf(stderr, "shakesapp_server: cannot read the corpus in %s\n", corpus_dir);
        return 1;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            answer, NULL, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "shakesapp_server: cannot listen on 127.0.0.1:%u\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : port;
    printf("shakesapp version %d listening on http://127.0.0.1:%u\n", version, bound);
    fflush(stdout);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%u\n", bound) < 0 || fclose(f) != 0) {
            fprintf(stderr, "shakesapp_server: cannot write %s: %s\n", port_file, strerror(errno));
            MHD_stop_daemon(d);
            return 1;
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    free_corpus(&loaded);
    return 0;
}
