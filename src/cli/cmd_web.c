/* cmd_web.c — `hotspur web [--base OLD] FILE...`: the server's web UI on
 * local profiles, like `go tool pprof -http`. It runs the `hotspur serve`
 * server (server/http.c) on loopback, on a free port, over a temporary
 * store directory, ingests the files through the server's own ingest
 * (hs_server_ingest: decomposed exactly as uploads are),
 * prints the URL and serves until SIGINT/SIGTERM; then the directory is
 * deleted. Each FILE is one version named after the file; with --base the
 * base is version "base", the others "new", and the diff view opens. */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_options.h"
#include "cli/cmd_export.h"
#include "cli/commands.h"
#include "server/ingest.h"
#include "server/server.h"

#define HS_WEB_MAX_PATHS 64

static void hs_web_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur web [--base OLD] [--listen 127.0.0.1:PORT] [--source-path DIR]...\n"
            "                   [--service NAME] [--open] FILE...\n"
            "\n"
            "Open the web UI of `hotspur serve` on local profiles, without a server\n"
            "database: flame graph, function table, callers/callees, source and (with\n"
            "--base) the differential view. FILE is a pprof profile (gzipped or not),\n"
            "collapsed stacks or `perf script` text; each FILE is one version, named\n"
            "after the file, all merged by default. Serves on loopback until\n"
            "interrupted (Ctrl-C); the temporary store is deleted at exit.\n"
            "\n"
            "  --base OLD          compare FILE... (version \"new\") with OLD (version \"base\")\n"
            "  --listen HOST:PORT  where to listen (default 127.0.0.1:0, a free port)\n"
            "  --source-path DIR   where the source files are, for the source view (repeatable)\n"
            "  --service NAME      the service name shown (default: local)\n"
            "  --open              open the URL with xdg-open\n"
            "  -h, --help          show this help\n");
}

static int hs_web_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* The version a file is shown as: its name without directories and the
 * profile suffixes. */
static void hs_web_version(const char *path, char *out, size_t outlen)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, outlen, "%s", b);
    static const char *const sfx[] = {".pb.gz", ".pprof", ".pb", ".gz", ".folded", ".txt"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t n = strlen(out), k = strlen(sfx[i]);
        if (n > k && strcmp(out + n - k, sfx[i]) == 0)
            out[n - k] = 0;
    }
}

/* Load path (any format hotspur reads), encode it as pprof and store it
 * through the server's ingest, as an upload is. 0, or -1 with a message. */
static int hs_web_ingest(hs_server *srv, const char *path, const char *service, const char *version, long start,
                         char *err, size_t errlen)
{
    char lerr[256];
    hs_profile *p = hs_cli_load(path, NULL, lerr, sizeof lerr);
    if (!p) {
        snprintf(err, errlen, "%s: %s", path, lerr);
        return -1;
    }
    void *body = NULL;
    size_t len = 0;
    int rc = hs_profile_encode(p, &body, &len, lerr, sizeof lerr);
    hs_profile_free(p);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, lerr);
        return -1;
    }
    /* every file starts "now" so the UI's default span shows it */
    hs_ingest_meta m = {.service = service,
                        .version = version,
                        .have_from = true,
                        .have_until = true,
                        .from_ns = (int64_t)start * 1000000000LL,
                        .until_ns = ((int64_t)start + 1) * 1000000000LL};
    hs_ingest_result r;
    if (hs_server_ingest(srv, &m, body, len, &r) != HS_INGEST_OK) {
        snprintf(err, errlen, "%s: the server refused it (%d): %.300s", path, hs_ingest_http_status(r.code), r.msg);
        rc = -1;
    }
    free(body);
    return rc;
}

static void hs_web_open(const char *url)
{
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        execlp("xdg-open", "xdg-open", url, (char *)NULL);
        fprintf(stderr, "hotspur web: cannot run xdg-open (%s); open the URL yourself\n", strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        fprintf(stderr, "hotspur web: cannot start xdg-open: %s\n", strerror(errno));
}

typedef struct {
    const char *base, *listen, *service;
    const char *sources[HS_WEB_MAX_PATHS];
    size_t n_sources;
    int open_url;
} web_args;

enum { OPT_BASE = HS_CLI_EXTRA, OPT_LISTEN, OPT_SOURCE, OPT_SERVICE, OPT_OPEN };

static int web_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                     size_t errlen)
{
    web_args *a = ctx;
    (void)o;
    switch (code) {
    case OPT_BASE:
        a->base = arg;
        return 0;
    case OPT_LISTEN:
        a->listen = arg;
        return 0;
    case OPT_SOURCE:
        if (a->n_sources == HS_WEB_MAX_PATHS) {
            snprintf(err, errlen, "too many --source-path");
            return -1;
        }
        a->sources[a->n_sources++] = arg;
        return 0;
    case OPT_SERVICE:
        if (!*arg) {
            snprintf(err, errlen, "--service needs a name");
            return -1;
        }
        a->service = arg;
        return 0;
    default: /* OPT_OPEN */
        a->open_url = 1;
        return 0;
    }
}

int hs_cmd_web(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"base", required_argument, OPT_BASE},
        {"listen", required_argument, OPT_LISTEN},
        {"source-path", required_argument, OPT_SOURCE},
        {"service", required_argument, OPT_SERVICE},
        {"open", no_argument, OPT_OPEN},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "web", .usage = hs_web_usage, .kind = HS_KIND_NOTRIM, .takes = 0,
        .extras = extras, .extra = web_extra, .min_args = 1, .max_args = -1,
        .missing_msg = "missing profile FILE (see hotspur web --help)"};
    web_args a = {.listen = "127.0.0.1:0", .service = "local"};
    char msg[1024];
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, NULL, &a, NULL, &first);
    if (rc >= 0)
        return rc;
    const char *base = a.base, *listen = a.listen, *service = a.service;
    for (int i = first; i < argc; i++)
        if (access(argv[i], R_OK) != 0) {
            snprintf(msg, sizeof msg, "%s: %s", argv[i], strerror(errno));
            return hs_cli_fail(spec.name, NULL, msg);
        }
    if (base && access(base, R_OK) != 0) {
        snprintf(msg, sizeof msg, "%s: %s", base, strerror(errno));
        return hs_cli_fail(spec.name, NULL, msg);
    }

    /* SIGINT/SIGTERM are taken by sigwait below: block them before the
     * server's threads start, so they inherit the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &stop, NULL) != 0)
        return hs_cli_fail(spec.name, NULL, "cannot block signals");

    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/hotspur-web-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(msg, sizeof msg, "cannot create a temporary directory: %s", strerror(errno));
        fprintf(stderr, "hotspur web: %s\n", msg);
        return 1;
    }
    rc = 1;
    hs_server *srv = NULL;
    hs_server_config cfg = {0};
    cfg.listen = listen;
    cfg.store_url = dir;
    cfg.source_paths = a.sources;
    cfg.n_source_paths = a.n_sources;
    hs_limits_default(&cfg.limits);
    static const char *const keep_all[1] = {NULL};
    cfg.limits.drop_labels = keep_all; /* the files' own profiles: every label, tid too */
    cfg.limits.n_drop_labels = 0;
    cfg.limits.max_body = cfg.limits.max_decompressed = (size_t)1 << 30; /* local files: no upload bound */
    cfg.limits.max_ratio = 10000;
    char err[512];
    srv = hs_server_start(&cfg, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "hotspur web: %s\n", err);
        goto done;
    }
    int port = hs_server_port(srv);
    long start = (long)time(NULL) - 5;
    char version[256];
    size_t stored = 0;
    if (base) {
        if (hs_web_ingest(srv, base, service, "base", start, err, sizeof err) != 0) {
            fprintf(stderr, "hotspur web: %s\n", err);
            goto done;
        }
        stored++;
    }
    for (int i = first; i < argc; i++) {
        if (base)
            snprintf(version, sizeof version, "new");
        else
            hs_web_version(argv[i], version, sizeof version);
        if (hs_web_ingest(srv, argv[i], service, version, start, err, sizeof err) != 0) {
            fprintf(stderr, "hotspur web: %s\n", err);
            goto done;
        }
        stored++;
    }
    char host[256];
    snprintf(host, sizeof host, "%s", listen);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = 0;
    if (!*host || strcmp(host, "0.0.0.0") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    char *esvc = curl_easy_escape(NULL, service, 0); /* the handle is ignored since curl 7.82 */
    char url[1024];
    snprintf(url, sizeof url, "http://%s:%d/?service=%s&span=86400%s", host, port, esvc ? esvc : "local",
             base ? "&version=new&cmp=version&base_version=base" : "");
    curl_free(esvc);
    printf("hotspur web: %zu profile%s at %s\n(Ctrl-C to stop)\n", stored, stored == 1 ? "" : "s", url);
    fflush(stdout);
    if (a.open_url)
        hs_web_open(url);
    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {
    }
    rc = 0;
done:
    if (srv)
        hs_server_stop(srv);
    if (nftw(dir, hs_web_rm, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "hotspur web: cannot delete %s: %s\n", dir, strerror(errno));
    return rc;
}
