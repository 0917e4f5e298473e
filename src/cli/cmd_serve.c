/* cmd_serve.c — `hotspur serve`: the collector. Parses the options into an
 * hs_server_config, starts the server (server/http.c) and runs until
 * SIGINT, SIGTERM or SIGHUP, then stops it cleanly: requests in flight are
 * answered, queued profiles are stored, the store is closed. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/units.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "server/server.h"
#include "base/fs.h"

static const char serve_usage_text[] =
    "usage: hotspur serve [--listen HOST:PORT] [--data DIR | --store URL] [options]\n"
    "\n"
    "Run the collector: it stores the profiles agents upload (POST /api/v1/ingest,\n"
    "Pyroscope's POST /ingest) and serves the query API and the web UI. It prints\n"
    "its URL on stderr and runs until SIGINT, SIGTERM or SIGHUP.\n"
    "\n"
    "  --listen HOST:PORT   where to listen (default 127.0.0.1:4040; port 0 picks a\n"
    "                       free one; [::1]:PORT for IPv6; :PORT is every IPv4\n"
    "                       interface). On a loopback address, requests from\n"
    "                       other hosts and non-loopback Host headers get 403\n"
    "  --data DIR           keep profiles in SQLite under DIR (default\n"
    "                       $XDG_DATA_HOME/hotspur, else ~/.local/share/hotspur)\n"
    "  --store URL          the store instead: sqlite:DIR or\n"
    "                       clickhouse://HOST:PORT/DB\n"
    "  --token T            require 'Authorization: Bearer T' on ingest and API\n"
    "                       requests (default $HOTSPUR_TOKEN; the web UI's files\n"
    "                       and /healthz are served without it). Required when\n"
    "                       the listen address is not loopback\n"
    "  --tokens FILE        tenants by token: each line 'TOKEN TENANT'; a request\n"
    "                       is its token's tenant's (and sees only that tenant's\n"
    "                       profiles and debug info); --token stays an admin\n"
    "                       token that may name any tenant with X-Scope-OrgID.\n"
    "                       Without it, X-Scope-OrgID names the tenant; no header\n"
    "                       is the default tenant (docs/server.md, \"Tenants\")\n"
    "  --print-routes       print every route (METHOD PATH) and exit\n"
    "  --public-without-token  listen on a non-loopback address with no token:\n"
    "                       anyone who can reach it reads and writes everything\n"
    "  --max-connections-per-peer N  connections one client address may hold\n"
    "                       at once (1..256, default 64; of 256 in all). Raise it\n"
    "                       behind a reverse proxy, whose connections all come\n"
    "                       from one address\n"
    "  --retention D        delete profiles older than D, checked at start and\n"
    "                       hourly (e.g. 30d, 12h; default 30d; 0 keeps all)\n"
    "  --scrape URL         pull a pprof endpoint (e.g. a Go program's\n"
    "                       http://HOST/debug/pprof/profile) every period;\n"
    "                       repeatable\n"
    "  --scrape-period D    how often to scrape (default 60s; a .../profile URL\n"
    "                       without seconds= gets seconds=PERIOD-1, at most 300)\n"
    "  --source-path DIR    serve source lines (GET /api/v1/source) of files under\n"
    "                       DIR only; repeatable; without it no source is served\n"
    "  --max-body SIZE      largest request body (default 16m; k, m, g suffixes)\n"
    "  --drop-labels LIST   sample label keys not to store, comma-separated\n"
    "                       (default tid: kept, each thread's stacks are records\n"
    "                       of their own, 23x the bytes; '' keeps every label).\n"
    "                       A tag filter on a dropped key is a 400\n"
    "  --batch-max N        group commit: at most N profiles per store write\n"
    "                       (1..1024; default SQLite 128, ClickHouse 512)\n"
    "  --batch-wait MS      a write waits up to MS after its first upload for\n"
    "                       more (0..10000; default SQLite 10, ClickHouse 50)\n"
    "  --batch-linger yes|no  always wait the whole --batch-wait (default SQLite\n"
    "                       no: a write goes as soon as no upload is on its way\n"
    "                       and no other write is in flight; ClickHouse yes)\n"
    "  --batch-writers N    store writes in flight at once (1..16; default\n"
    "                       SQLite 1, ClickHouse 2); see docs/fleet.md\n"
    "\n"
    "Naming frames sent as addresses (HOTSPUR_SYMBOLIZE=server, the host agent;\n"
    "docs/debuginfo.md):\n"
    "  --debuginfo-dir DIR  keep uploaded debug info (`hotspur debuginfo upload`)\n"
    "                       and the naming cache in DIR (default DATA/debuginfo\n"
    "                       with --data; with --store, uploads need this)\n"
    "  --debug-dir DIR      a build-ID directory root (DIR/.build-id/xx/...);\n"
    "                       repeatable (default /usr/lib/debug)\n"
    "  --debuginfod URL     debuginfod servers (space-separated; default\n"
    "                       $DEBUGINFOD_URLS; '' for none)\n"
    "  --debuginfod-timeout D  give one lookup up after D (default 10s); a failed\n"
    "                       lookup is not retried for 5 minutes\n"
    "  --debuginfo-sources LIST  where to look, in order (default\n"
    "                       upload,build-id,path,debuginfod; 'path' is the\n"
    "                       binary at the mapping's path, checked by build ID)\n"
    "  --max-debuginfo SIZE largest debug info upload (default 1g)\n"
    "  -h, --help           show this help\n"
    "\n"
    "The HTTP API is described in docs/server.md.\n";

static void serve_help(FILE *out)
{
    fputs(serve_usage_text, out);
}

/* --max-body: a size by units.h's grammar, 1 byte to 16 GiB. 0, or -1. */
static int parse_body_size(const char *s, size_t *out)
{
    uint64_t v;
    if (hs_parse_size(s, &v) < 0 || v == 0 || v > ((uint64_t)1 << 34))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* mkdir -p with mode 0700 for the directories we create. */
static int make_dirs(const char *path)
{
    return hs_mkdirs(path, 0700, NULL, 0);
}

static int default_data_dir(char *out, size_t outlen)
{
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/hotspur", xdg);
    else if (home && *home)
        n = snprintf(out, outlen, "%s/.local/share/hotspur", home);
    else
        return -1;
    return n > 0 && (size_t)n < outlen ? 0 : -1;
}

static int serve_fail(const char *msg, const char *arg)
{
    if (arg)
        fprintf(stderr, "hotspur serve: %s '%s' (see hotspur serve --help)\n", msg, arg);
    else
        fprintf(stderr, "hotspur serve: %s\n", msg);
    return 2;
}

enum { OPT_LISTEN = 0x5300, OPT_DATA, OPT_STORE, OPT_TOKEN, OPT_RETENTION, OPT_SCRAPE, OPT_SCRAPE_PERIOD,
       OPT_SOURCE_PATH, OPT_MAX_BODY, OPT_BATCH_MAX, OPT_BATCH_WAIT, OPT_BATCH_LINGER, OPT_BATCH_WRITERS, OPT_PUBLIC,
       OPT_PEER_CONNS, OPT_DEBUGINFO_DIR, OPT_DEBUG_DIR, OPT_DEBUGINFOD, OPT_DEBUGINFOD_TIMEOUT,
       OPT_DEBUGINFO_SOURCES, OPT_MAX_DEBUGINFO, OPT_DROP_LABELS, OPT_TOKENS, OPT_PRINT_ROUTES };

/* What the options set: the config, and the lists it points into. */
typedef struct {
    hs_server_config cfg;
    const char *debuginfo_dir, *data, *store;
    const char **scrape, **srcs, **debug_dirs, **drop;
    char *drop_buf;
    size_t n_drop, max_list; /* max_list: argc, no list is longer */
    bool drop_given, print_routes;
} serve_args;

/* "MSG 'ARG' (see hotspur serve --help)" into err: -1. */
static int serve_bad(char *err, size_t errlen, const char *msg, const char *arg)
{
    snprintf(err, errlen, "%s '%s' (see hotspur serve --help)", msg, arg);
    return -1;
}

static int serve_extra(void *ctx, hs_analysis_options *o, int code, const char *optarg, char *err,
                       size_t errlen)
{
    serve_args *a = ctx;
    hs_server_config *cfg = &a->cfg;
    int64_t ns;
    long num;
    (void)o;
    switch (code) {
    case OPT_LISTEN: cfg->listen = optarg; break;
    case OPT_DATA: a->data = optarg; break;
    case OPT_STORE: a->store = optarg; break;
    case OPT_TOKEN: cfg->token = optarg; break;
    case OPT_PUBLIC: cfg->public_without_token = true; break;
    case OPT_TOKENS: cfg->tokens_file = optarg; break;
    case OPT_PRINT_ROUTES: a->print_routes = true; break;
    case OPT_PEER_CONNS:
        if (hs_cli_parse_long(optarg, 1, 256, &num) < 0)
            return serve_bad(err, errlen, "bad --max-connections-per-peer (1..256)", optarg);
        cfg->max_conns_per_peer = (unsigned)num;
        break;
    case OPT_RETENTION:
        if (hs_parse_duration_ns(optarg, &ns) < 0)
            return serve_bad(err, errlen, "bad --retention (want " HS_DURATION_HINT ")", optarg);
        cfg->retention_ns = ns;
        break;
    case OPT_SCRAPE:
        if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0)
            return serve_bad(err, errlen, "--scrape wants an http:// or https:// URL, not", optarg);
        a->scrape[cfg->n_scrape++] = optarg;
        break;
    case OPT_SCRAPE_PERIOD:
        if (hs_parse_duration_ns(optarg, &ns) < 0 || ns < 1000000000 || ns > 86400 * 1000000000LL ||
            ns % 1000000000)
            return serve_bad(err, errlen, "bad --scrape-period (whole seconds, 1s..1d)", optarg);
        cfg->scrape_period_s = (int)(ns / 1000000000);
        break;
    case OPT_SOURCE_PATH: a->srcs[cfg->n_source_paths++] = optarg; break;
    case OPT_MAX_BODY:
        if (parse_body_size(optarg, &cfg->limits.max_body) < 0)
            return serve_bad(err, errlen, "bad --max-body (e.g. 16m, at most 16g)", optarg);
        break;
    case OPT_BATCH_MAX:
        if (hs_cli_parse_long(optarg, 1, HS_STORE_BATCH_MAX_PROFILES, &num) < 0)
            return serve_bad(err, errlen, "bad --batch-max (1..1024)", optarg);
        cfg->batch.max_profiles = (size_t)num;
        break;
    case OPT_BATCH_WAIT:
        if (hs_cli_parse_long(optarg, 0, HS_STORE_BATCH_MAX_WAIT_MS, &num) < 0)
            return serve_bad(err, errlen, "bad --batch-wait (0..10000 ms)", optarg);
        cfg->batch.wait_ms = num ? (int)num : -1; /* 0 in the overrides is "the default" */
        break;
    case OPT_BATCH_LINGER:
        if (strcmp(optarg, "yes") && strcmp(optarg, "no"))
            return serve_bad(err, errlen, "--batch-linger wants yes or no, not", optarg);
        cfg->batch.linger = strcmp(optarg, "yes") == 0 ? 1 : -1;
        break;
    case OPT_BATCH_WRITERS:
        if (hs_cli_parse_long(optarg, 1, HS_STORE_BATCH_MAX_WRITERS, &num) < 0)
            return serve_bad(err, errlen, "bad --batch-writers (1..16)", optarg);
        cfg->batch.writers = (int)num;
        break;
    case OPT_DEBUGINFO_DIR: a->debuginfo_dir = optarg; break;
    case OPT_DEBUG_DIR:
        a->debug_dirs[cfg->names.n_debug_dirs++] = optarg;
        cfg->names.debug_dirs = a->debug_dirs;
        break;
    case OPT_DEBUGINFOD: cfg->names.debuginfod_urls = optarg; break;
    case OPT_DEBUGINFOD_TIMEOUT:
        if (hs_parse_duration_ns(optarg, &ns) < 0 || ns < 1000000000 || ns > 3600 * 1000000000LL)
            return serve_bad(err, errlen, "bad --debuginfod-timeout (1s..1h)", optarg);
        cfg->names.debuginfod_timeout_s = (int)(ns / 1000000000);
        break;
    case OPT_DEBUGINFO_SOURCES: cfg->names.order = optarg; break;
    case OPT_DROP_LABELS: /* the last one given counts */
        free(a->drop_buf);
        if (!(a->drop_buf = strdup(optarg))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        a->n_drop = 0;
        for (char *sv = NULL, *k = strtok_r(a->drop_buf, ",", &sv); k; k = strtok_r(NULL, ",", &sv))
            if (a->n_drop < a->max_list)
                a->drop[a->n_drop++] = k;
        a->drop_given = true;
        break;
    case OPT_MAX_DEBUGINFO:
        if (parse_body_size(optarg, &cfg->max_debuginfo) < 0)
            return serve_bad(err, errlen, "bad --max-debuginfo (e.g. 512m, at most 16g)", optarg);
        break;
    }
    return 0;
}

int hs_cmd_serve(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"listen", required_argument, OPT_LISTEN},
        {"data", required_argument, OPT_DATA},
        {"store", required_argument, OPT_STORE},
        {"token", required_argument, OPT_TOKEN},
        {"public-without-token", no_argument, OPT_PUBLIC},
        {"tokens", required_argument, OPT_TOKENS},
        {"print-routes", no_argument, OPT_PRINT_ROUTES},
        {"max-connections-per-peer", required_argument, OPT_PEER_CONNS},
        {"retention", required_argument, OPT_RETENTION},
        {"scrape", required_argument, OPT_SCRAPE},
        {"scrape-period", required_argument, OPT_SCRAPE_PERIOD},
        {"source-path", required_argument, OPT_SOURCE_PATH},
        {"max-body", required_argument, OPT_MAX_BODY},
        {"batch-max", required_argument, OPT_BATCH_MAX},
        {"batch-wait", required_argument, OPT_BATCH_WAIT},
        {"batch-linger", required_argument, OPT_BATCH_LINGER},
        {"batch-writers", required_argument, OPT_BATCH_WRITERS},
        {"debuginfo-dir", required_argument, OPT_DEBUGINFO_DIR},
        {"debug-dir", required_argument, OPT_DEBUG_DIR},
        {"debuginfod", required_argument, OPT_DEBUGINFOD},
        {"debuginfod-timeout", required_argument, OPT_DEBUGINFOD_TIMEOUT},
        {"debuginfo-sources", required_argument, OPT_DEBUGINFO_SOURCES},
        {"max-debuginfo", required_argument, OPT_MAX_DEBUGINFO},
        {"drop-labels", required_argument, OPT_DROP_LABELS},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {.name = "serve", .usage = serve_help, .extras = extras,
                                      .extra = serve_extra, .max_args = 0};
    serve_args a = {.max_list = (size_t)argc};
    char dbgdir[PATH_MAX];
    hs_limits_default(&a.cfg.limits);
    a.cfg.listen = "127.0.0.1:4040";
    a.cfg.token = getenv("HOTSPUR_TOKEN");
    a.cfg.retention_ns = (int64_t)30 * 86400 * 1000000000;
    a.cfg.scrape_period_s = 60;
    a.scrape = calloc((size_t)argc + 1, sizeof *a.scrape);
    a.srcs = calloc((size_t)argc + 1, sizeof *a.srcs);
    a.debug_dirs = calloc((size_t)argc + 1, sizeof *a.debug_dirs);
    a.drop = calloc((size_t)argc + 1, sizeof *a.drop);
    int rc = 2, first = 0;
    hs_server *srv = NULL;
    if (!a.scrape || !a.srcs || !a.debug_dirs || !a.drop) {
        rc = serve_fail("out of memory", NULL);
        goto done;
    }
    if ((rc = hs_cli_parse(&spec, argc, argv, NULL, &a, NULL, &first)) >= 0)
        goto done;
    rc = 2;
    if (a.print_routes) {
        hs_server_print_routes(stdout);
        rc = 0;
        goto done;
    }
    const char *data = a.data, *store = a.store, *debuginfo_dir = a.debuginfo_dir;
    if (data && store) {
        serve_fail("--data and --store exclude each other", NULL);
        goto done;
    }
    if (a.cfg.token && !a.cfg.token[0])
        a.cfg.token = NULL;
    char dir[PATH_MAX];
    if (!store) {
        if (!data) {
            if (default_data_dir(dir, sizeof dir) < 0) {
                serve_fail("no data directory: set --data DIR (or HOME / XDG_DATA_HOME)", NULL);
                goto done;
            }
            data = dir;
        }
        if (make_dirs(data) < 0) {
            fprintf(stderr, "hotspur serve: cannot create %s: %s\n", data, strerror(errno));
            rc = 1;
            goto done;
        }
        store = data;
        if (!debuginfo_dir && snprintf(dbgdir, sizeof dbgdir, "%s/debuginfo", data) < (int)sizeof dbgdir)
            debuginfo_dir = dbgdir;
    }
    if (debuginfo_dir && make_dirs(debuginfo_dir) < 0) {
        fprintf(stderr, "hotspur serve: cannot create %s: %s\n", debuginfo_dir, strerror(errno));
        rc = 1;
        goto done;
    }
    a.cfg.names.dir = debuginfo_dir;
    a.cfg.store_url = store;
    a.cfg.scrape_urls = a.scrape;
    a.cfg.source_paths = a.srcs;
    if (a.drop_given) {
        a.cfg.limits.drop_labels = a.drop;
        a.cfg.limits.n_drop_labels = a.n_drop;
    }

    /* Block the stop signals before any thread starts, so they all inherit
     * the mask and only sigwait below sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    signal(SIGPIPE, SIG_IGN);
    if (pthread_sigmask(SIG_BLOCK, &stop, NULL) != 0) {
        rc = serve_fail("cannot block signals", NULL);
        goto done;
    }
    char err[512];
    srv = hs_server_start(&a.cfg, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "hotspur serve: %s\n", err);
        rc = 1;
        goto done;
    }
    char host[256];
    const char *l = a.cfg.listen, *colon = strrchr(l, ':');
    size_t hl = (size_t)(colon - l);
    snprintf(host, sizeof host, "%.*s", (int)(hl < sizeof host ? hl : sizeof host - 1), l);
    fprintf(stderr, "hotspur serve: listening on http://%s:%d (store %s%s)\n", host[0] ? host : "0.0.0.0",
            hs_server_port(srv), store, a.cfg.tokens_file ? ", tenants by token" : a.cfg.token ? ", token required" : "");
    if (!a.cfg.token && !a.cfg.tokens_file && a.cfg.public_without_token)
        fprintf(stderr,
                "hotspur serve: WARNING: no token (--public-without-token): anyone who can reach port %d "
                "can read every stored profile%s and upload profiles\n",
                hs_server_port(srv), a.cfg.n_source_paths ? ", the source files under --source-path," : "");
    int sig = 0;
    if (sigwait(&stop, &sig) != 0)
        sig = SIGTERM;
    fprintf(stderr, "hotspur serve: %s, stopping\n", strsignal(sig));
    hs_server_stop(srv);
    srv = NULL;
    rc = 0;
done:
    free(a.scrape);
    free(a.srcs);
    free(a.drop);
    free(a.drop_buf);
    free(a.debug_dirs);
    return rc;
}
