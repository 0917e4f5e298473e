/* querydb.c — the tutorial's second example: a multi-process query daemon.
 *
 * A parent listens on a loopback TCP port and forks -workers N worker
 * processes that accept connections on the shared socket (prefork, as many
 * classic daemons do). The protocol is one line per request, "GET key\n",
 * answered with "key=value\n". Each request is parsed into a large request
 * buffer and answered from an in-memory table.
 *
 * The defect: the request and reply buffers (~400 KB each) are cleared
 * with memset on every request "to be safe", although only a few bytes of
 * them are used, and the request buffer is wiped again once answered.
 * -fixed removes the memsets (the request is parsed into a
 * buffer that is only written where it is used), which multiplies the
 * transactions per second. The profile shows memset at the top (self), peek
 * shows parse_request as the caller responsible.
 *
 * usage: querydb [-workers N] [-port P] [-port_file F] [-fixed]
 * The parent stops its workers on SIGTERM/SIGINT and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REQUEST_BUF (400 * 1024)
#define REPLY_BUF (400 * 1024)
#define TABLE_SIZE 4096
#define MAX_WORKERS 64

typedef struct {
    char key[32];
    char value[64];
} row;

static row table[TABLE_SIZE];
static int fixed;

static void fill_table(void)
{
    for (int i = 0; i < TABLE_SIZE; i++) {
        snprintf(table[i].key, sizeof table[i].key, "k%d", i);
        snprintf(table[i].value, sizeof table[i].value, "v%d-%x", i, (unsigned)i * 2654435761u);
    }
}

typedef struct {
    char *buf; /* REQUEST_BUF bytes */
    char key[32];
} request;

/* Parse "GET key" into rq. The slow version clears the whole buffer first. */
__attribute__((noinline)) static int parse_request(request *rq, const char *line, size_t len)
{
    if (!fixed)
        memset(rq->buf, 0, REQUEST_BUF); /* "to be safe" */
    if (len >= REQUEST_BUF)
        return -1;
    memcpy(rq->buf, line, len);
    rq->buf[len] = '\0';
    if (strncmp(rq->buf, "GET ", 4) != 0)
        return -1;
    snprintf(rq->key, sizeof rq->key, "%s", rq->buf + 4);
    return 0;
}

__attribute__((noinline)) static const row *lookup(const char *key)
{
    unsigned h = 0;
    for (const char *p = key; *p; p++)
        h = h * 31 + (unsigned char)*p;
    /* keys are "k<number>": the number is the index; the hash is a checksum */
    int i = atoi(key + 1);
    if (key[0] != 'k' || i < 0 || i >= TABLE_SIZE || (h == 0 && i != 0))
        return NULL;
    return strcmp(table[i].key, key) == 0 ? &table[i] : NULL;
}

__attribute__((noinline)) static size_t build_reply(char *reply, const request *rq, const row *r)
{
    if (!fixed)
        memset(reply, 0, REPLY_BUF); /* "to be safe", too */
    int n = r ? snprintf(reply, REPLY_BUF, "%s=%s\n", r->key, r->value)
              : snprintf(reply, REPLY_BUF, "%s=\n", rq->key);
    return n > 0 ? (size_t)n : 0;
}

/* Wipe the request once answered "so no data leaks into the next one". */
__attribute__((noinline)) static void scrub_request(request *rq)
{
    if (!fixed)
        memset(rq->buf, 0, REQUEST_BUF);
    rq->key[0] = '\0';
}

static void serve_connection(int fd, request *rq, char *reply)
{
    char in[4096];
    size_t have = 0;
    for (;;) {
        ssize_t got = read(fd, in + have, sizeof in - have);
        if (got <= 0)
            return;
        have += (size_t)got;
        char *nl;
        while ((nl = memchr(in, '\n', have))) {
            size_t len = (size_t)(nl - in);
            size_t out = 0;
            if (parse_request(rq, in, len) == 0)
                out = build_reply(reply, rq, lookup(rq->key));
            else
                out = (size_t)snprintf(reply, REPLY_BUF, "error\n");
            scrub_request(rq);
            if (write(fd, reply, out) != (ssize_t)out)
                return;
            memmove(in, nl + 1, have - len - 1);
            have -= len + 1;
        }
        if (have == sizeof in)
            return; /* a line too long: drop the client */
    }
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void worker(int lfd)
{
    request rq = {.buf = malloc(REQUEST_BUF)};
    char *reply = malloc(REPLY_BUF);
    if (!rq.buf || !reply)
        _exit(1);
    while (!stop) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        serve_connection(fd, &rq, reply);
        close(fd);
    }
    exit(0);
}

int main(int argc, char **argv)
{
    int workers = 2;
    unsigned port = 0;
    const char *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-')
            a++;
        if (strcmp(a, "-fixed") == 0) {
            fixed = 1;
            continue;
        }
        if (i + 1 >= argc)
            goto usage;
        if (strcmp(a, "-workers") == 0)
            workers = atoi(argv[++i]);
        else if (strcmp(a, "-port") == 0)
            port = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "-port_file") == 0)
            port_file = argv[++i];
        else
            goto usage;
    }
    if (workers < 1 || workers > MAX_WORKERS)
        goto usage;
    fill_table();
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 128) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        fprintf(stderr, "querydb: cannot listen on 127.0.0.1:%u: %s\n", port, strerror(errno));
        return 1;
    }
    printf("querydb (%s) pid %d listening on 127.0.0.1:%u with %d workers\n", fixed ? "fixed" : "memset", getpid(),
           ntohs(addr.sin_port), workers);
    fflush(stdout);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%u\n", ntohs(addr.sin_port)) < 0 || fclose(f) != 0) {
            fprintf(stderr, "querydb: cannot write %s\n", port_file);
            return 1;
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pid_t kids[MAX_WORKERS];
    for (int i = 0; i < workers; i++) {
        kids[i] = fork();
        if (kids[i] == 0)
            worker(lfd);
        if (kids[i] < 0) {
            fprintf(stderr, "querydb: fork: %s\n", strerror(errno));
            workers = i;
            break;
        }
    }
    while (!stop)
        pause();
    for (int i = 0; i < workers; i++)
        kill(kids[i], SIGTERM);
    for (int i = 0; i < workers; i++)
        waitpid(kids[i], NULL, 0);
    return 0;
usage:
    fprintf(stderr, "usage: querydb [-workers N] [-port P] [-port_file F] [-fixed]\n");
    return 2;
}
