/* cmd_agent.c — `hotspur agent`: the host daemon. Every period it records
 * every process on the host (src/live, one event per CPU) for a window, at
 * a random point of the period, splits the samples by service and uploads
 * one profile per service to `hotspur serve` with the in-process agent's
 * API (POST /api/v1/ingest?service=S&type=cpu&label=host=H&from=&until=).
 * Service: HOTSPUR_SERVICE from /proc/PID/environ when readable, else the
 * systemd unit (--service-from unit), else the process name. Processes that
 * run the in-process agent (libhotspur mapped) are skipped: theirs wins.
 * The recording session (perf events, each process's mappings and
 * unwinder), the kernel symbols and the symbolizer (parsed files, named
 * addresses) live across windows and are renewed every RENEW_SECS: a file
 * rebuilt at the same path is named right again after that, and memory
 * stays bounded. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "live/live.h"
#include "base/hashmap.h"
#include "profile/profile.h"

#define RENEW_SECS 600

static const char agent_usage_text[] =
    "usage: hotspur agent --server URL [options]\n"
    "\n"
    "Profile every process on this host continuously (perf events, kernel and\n"
    "user stacks, no restart, no preload) and upload one CPU profile per\n"
    "service per window to `hotspur serve`. Needs root or CAP_PERFMON.\n"
    "\n"
    "      --server URL       collector, http://HOST:PORT (required)\n"
    "      --match RULE       profile only matching processes; repeatable (any\n"
    "                         matches): comm=REGEX, unit=REGEX (systemd unit or\n"
    "                         cgroup path), pid=N\n"
    "      --service-from S   comm (default) or unit; HOTSPUR_SERVICE in the\n"
    "                         process's environment always wins\n"
    "  -F, --frequency HZ     samples per second per CPU (default 19)\n"
    "      --period D         one window per period (default 60s)\n"
    "      --duration D       window length (default 10s)\n"
    "      --host NAME        host label (default: the host name)\n"
    "      --symbolize WHERE  server (default; HOTSPUR_SYMBOLIZE sets it too):\n"
    "                         send addresses with build IDs and file offsets,\n"
    "                         `hotspur serve` names them (docs/debuginfo.md);\n"
    "                         agent: name frames here (parses every sampled\n"
    "                         program's symbols and DWARF: more CPU and memory)\n"
    "      --once             one window at once, upload, exit (for tests)\n"
    "  -h, --help             show this help\n"
    "Windows in which a service has no sample are not uploaded. See\n"
    "docs/host-agent.md.\n";

static void agent_help(FILE *out)
{
    fputs(agent_usage_text, out);
}

typedef struct {
    char kind; /* 'c' comm, 'u' unit, 'p' pid */
    regex_t re;
    long pid;
} rule;

/* HOTSPUR_SERVICE from /proc/PID/environ, or "" . */
static void env_service(int pid, char *out, size_t len)
{
    char path[64], buf[65536];
    out[0] = 0;
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (!strncmp(buf + i, "HOTSPUR_SERVICE=", 16)) {
            snprintf(out, len, "%s", buf + i + 16);
            return;
        }
}

typedef struct {
    const rule *rules;
    size_t n;
} rules_t;

/* hs_live_options.want: whether a process matches --match (any rule), asked
 * once per process before its stacks are unwound. */
static int want_process(void *arg, int pid, const char *comm, const char *cgroup)
{
    const rules_t *r = arg;
    int ok = r->n == 0;
    for (size_t i = 0; i < r->n && !ok; i++) {
        if (r->rules[i].kind == 'p')
            ok = r->rules[i].pid == pid;
        else
            ok = regexec(&r->rules[i].re, r->rules[i].kind == 'c' ? comm : cgroup, 0, NULL, 0) == 0;
    }
    return ok;
}

static const char *label_str(const hs_profile *p, const hs_sample *s, const char *key, int64_t *num)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (!strcmp(hs_profile_string(p, s->labels[i].key), key)) {
            if (num)
                *num = s->labels[i].num;
            return hs_profile_string(p, s->labels[i].str);
        }
    return NULL;
}

static size_t discard(char *ptr, size_t size, size_t n, void *arg)
{
    (void)ptr;
    (void)arg;
    return size * n;
}

static void url_escape(CURL *c, const char *s, char *out, size_t len)
{
    char *e = curl_easy_escape(c, s, 0);
    snprintf(out, len, "%s", e ? e : "");
    curl_free(e);
}

/* One connection for every upload (kept alive by curl between them). */
static CURL *curl;

static int upload(const char *server, const char *service, const char *host, const void *data, size_t len,
                  struct timespec from, struct timespec until)
{
    if (!curl && !(curl = curl_easy_init()))
        return -1;
    CURL *c = curl;
    curl_easy_reset(c);
    char svc[512], h[512], url[2048];
    url_escape(c, service, svc, sizeof svc);
    url_escape(c, host, h, sizeof h);
    snprintf(url, sizeof url,
             "%s/api/v1/ingest?service=%s&type=cpu&label=host%%3D%s&from=%lld.%09ld&until=%lld.%09ld",
             server, svc, h, (long long)from.tv_sec, from.tv_nsec, (long long)until.tv_sec, until.tv_nsec);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    const char *tok = getenv("HOTSPUR_TOKEN");
    char auth[600];
    if (tok && *tok) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
        hd = curl_slist_append(hd, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hd);
    if (rc != CURLE_OK || status / 100 != 2) {
        fprintf(stderr, "hotspur agent: upload of %s: %s (HTTP %ld)\n", service,
                rc != CURLE_OK ? curl_easy_strerror(rc) : "refused", status);
        return -1;
    }
    return 0;
}

typedef struct {
    char name[256];
    size_t *idx; /* its samples' indices in the window's profile */
    size_t n;
} service;

/* Split p by service and upload each; returns the number uploaded. (The
 * processes not matched, or running the in-process agent, were left out
 * by the recording.) */
static int ship(hs_profile *p, int from_unit, const char *server, const char *host, struct timespec from,
                struct timespec until)
{
    hs_hmap pid_svc = {0}; /* pid -> service index + 1 */
    service *sv = NULL;
    size_t n_sv = 0;
    for (size_t i = 0; i < p->n_samples; i++) {
        hs_sample *s = &p->samples[i];
        int64_t pid = 0;
        label_str(p, s, "pid", &pid);
        const char *comm = label_str(p, s, "process", NULL);
        const char *cg = label_str(p, s, "cgroup", NULL);
        uint64_t ix;
        if (!hs_hmap_get(&pid_svc, (uint64_t)pid, &ix)) {
            char name[256];
            env_service((int)pid, name, sizeof name);
            if (!name[0] && from_unit && cg && *cg) {
                const char *b = strrchr(cg, '/');
                snprintf(name, sizeof name, "%s", b ? b + 1 : cg);
            }
            if (!name[0])
                snprintf(name, sizeof name, "%s", comm ? comm : "unknown");
            size_t k = 0;
            while (k < n_sv && strcmp(sv[k].name, name))
                k++;
            if (k == n_sv) {
                service *ns = realloc(sv, (n_sv + 1) * sizeof *ns);
                if (!ns)
                    continue;
                sv = ns;
                memset(&sv[n_sv], 0, sizeof *sv);
                snprintf(sv[n_sv].name, sizeof sv[n_sv].name, "%s", name);
                n_sv++;
            }
            ix = k + 1;
            hs_hmap_put(&pid_svc, (uint64_t)pid, ix);
        }
        service *v = &sv[ix - 1];
        if ((v->n & (v->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
            size_t *ni = realloc(v->idx, (v->n ? v->n * 2 : 1) * sizeof *ni);
            if (!ni)
                continue;
            v->idx = ni;
        }
        v->idx[v->n++] = i;
    }
    int sent = 0;
    for (size_t k = 0; k < n_sv; k++) {
        /* only this service's samples and the tables they use: the window's
         * tables hold every process on the host */
        hs_profile *sub = sv[k].n ? hs_live_subset(p, sv[k].idx, sv[k].n) : NULL;
        void *buf = NULL;
        size_t len = 0;
        char err[256];
        if (sub && hs_profile_encode_zlib(sub, &buf, &len, err, sizeof err) == 0 &&
            upload(server, sv[k].name, host, buf, len, from, until) == 0)
            sent++;
        free(buf);
        hs_profile_free(sub);
        free(sv[k].idx);
    }
    free(sv);
    hs_hmap_free(&pid_svc);
    return sent;
}

enum { OPT_SERVER = HS_CLI_EXTRA, OPT_MATCH, OPT_SERVICE_FROM, OPT_FREQUENCY, OPT_PERIOD, OPT_DURATION,
       OPT_HOST, OPT_ONCE, OPT_SYMBOLIZE };

/* What the options set. */
typedef struct {
    const char *server, *where;
    char host[256];
    rule rules[32];
    size_t n_rules;
    int from_unit, once, hz;
    double period, window;
} agent_args;

/* --match comm=RE, unit=RE or pid=N into a->rules: 0, or -1. */
static int add_rule(agent_args *a, const char *arg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    size_t kl = eq ? (size_t)(eq - arg) : 0;
    rule *r = &a->rules[a->n_rules];
    if (eq && a->n_rules < 32 && kl == 3 && !strncmp(arg, "pid", 3)) {
        r->kind = 'p';
        r->pid = atol(eq + 1);
    } else if (eq && a->n_rules < 32 && kl == 4 && (!strncmp(arg, "comm", 4) || !strncmp(arg, "unit", 4))) {
        r->kind = arg[0];
        if (regcomp(&r->re, eq + 1, REG_EXTENDED | REG_NOSUB)) {
            snprintf(err, errlen, "bad regular expression in --match '%s'", arg);
            return -1;
        }
    } else {
        snprintf(err, errlen, "bad --match '%s' (comm=RE, unit=RE or pid=N)", arg);
        return -1;
    }
    a->n_rules++;
    return 0;
}

static int agent_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                       size_t errlen)
{
    agent_args *a = ctx;
    long hz;
    (void)o;
    switch (code) {
    case OPT_SERVER: a->server = arg; break;
    case OPT_MATCH: return add_rule(a, arg, err, errlen);
    case OPT_SERVICE_FROM:
        if (strcmp(arg, "comm") && strcmp(arg, "unit")) {
            snprintf(err, errlen, "--service-from comm or unit");
            return -1;
        }
        a->from_unit = !strcmp(arg, "unit");
        break;
    case OPT_FREQUENCY:
        if (hs_cli_parse_long(arg, 1, 1000, &hz) < 0) {
            snprintf(err, errlen, "bad frequency '%s' (1..1000)", arg);
            return -1;
        }
        a->hz = (int)hz;
        break;
    case OPT_PERIOD:
    case OPT_DURATION:
        if (hs_cli_parse_seconds(arg, code == OPT_PERIOD ? &a->period : &a->window)) {
            snprintf(err, errlen, "bad duration '%s'", arg);
            return -1;
        }
        break;
    case OPT_HOST: snprintf(a->host, sizeof a->host, "%s", arg); break;
    case OPT_ONCE: a->once = 1; break;
    case OPT_SYMBOLIZE: a->where = arg; break;
    }
    return 0;
}

static int agent_run(agent_args *a);

int hs_cmd_agent(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"server", required_argument, OPT_SERVER},
        {"match", required_argument, OPT_MATCH},
        {"service-from", required_argument, OPT_SERVICE_FROM},
        {"frequency", required_argument, OPT_FREQUENCY},
        {"period", required_argument, OPT_PERIOD},
        {"duration", required_argument, OPT_DURATION},
        {"host", required_argument, OPT_HOST},
        {"once", no_argument, OPT_ONCE},
        {"symbolize", required_argument, OPT_SYMBOLIZE},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {.name = "agent", .usage = agent_help, .extras = extras,
                                      .short_names = "   F", .extra = agent_extra, .max_args = 0};
    agent_args a = {.hz = 19, .period = 60, .window = 10, .where = getenv("HOTSPUR_SYMBOLIZE")};
    if (!a.where || !*a.where)
        a.where = "server";
    int first = 0, rc = hs_cli_parse(&spec, argc, argv, NULL, &a, NULL, &first);
    if (rc < 0)
        rc = agent_run(&a);
    for (size_t i = 0; i < a.n_rules; i++)
        if (a.rules[i].kind != 'p')
            regfree(&a.rules[i].re);
    return rc;
}

/* The windows, one after another, until a signal (or one with --once). */
static int agent_run(agent_args *ap)
{
    int rc = 0;
    const char *server = ap->server, *where = ap->where;
    char *host = ap->host;
    rule *rules = ap->rules;
    size_t n_rules = ap->n_rules;
    int from_unit = ap->from_unit, once = ap->once, hz = ap->hz;
    double period = ap->period, window = ap->window;
    if (!server || strncmp(server, "http://", 7)) {
        fprintf(stderr, "hotspur agent: --server http://HOST:PORT is required\n");
        return 2;
    }
    if (window > period) {
        fprintf(stderr, "hotspur agent: --duration is longer than --period\n");
        return 2;
    }
    if (strcmp(where, "server") && strcmp(where, "agent")) {
        fprintf(stderr, "hotspur agent: --symbolize server or agent, not '%s'\n", where);
        return 2;
    }
    int at_server = !strcmp(where, "server");
    if (!host[0])
        gethostname(host, sizeof ap->host - 1);
    volatile sig_atomic_t *stop = hs_cli_stop_on_signals();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    hs_ksyms *ks = NULL;
    hs_symbolizer *sym = NULL;
    hs_live *live = NULL;
    rules_t match = {rules, n_rules};
    time_t renewed = 0;
    while (!*stop) {
        struct timespec p0, from, until;
        clock_gettime(CLOCK_MONOTONIC, &p0);
        double phase = once ? 0 : (period - window) * rand() / (double)RAND_MAX;
        while (!*stop && phase > 0) { /* sleep to the window's start */
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
            hs_live_idle(live);
            phase -= 0.1;
        }
        if (*stop)
            break;
        char err[512];
        if (time(NULL) - renewed >= RENEW_SECS) {
            hs_live_close(live);
            hs_ksyms_free(ks);
            hs_symbolizer_free(sym);
            ks = hs_ksyms_load(NULL);
            sym = at_server ? NULL : hs_symbolizer_new();
            renewed = time(NULL);
            hs_live_options o = {0};
            o.ksyms = ks;
            o.all = 1;
            o.hz = hz;
            o.leave_names = at_server;
            o.want = want_process;
            o.want_arg = &match;
            o.skip_inprocess = 1;
            live = hs_live_open(&o, err, sizeof err);
            if (!live) {
                fprintf(stderr, "hotspur agent: %s\n", err);
                rc = 1;
                break;
            }
        }
        hs_live_stats st = {0};
        clock_gettime(CLOCK_REALTIME, &from);
        hs_profile *p = hs_live_window(live, window, stop, sym, &st, err, sizeof err);
        clock_gettime(CLOCK_REALTIME, &until);
        if (!p) {
            fprintf(stderr, "hotspur agent: %s\n", err);
            rc = 1;
            break;
        }
        int n = ship(p, from_unit, server, host, from, until);
        fprintf(stderr,
                "hotspur agent: window of %.1f s: %zu samples, %d service profile%s uploaded (%zu processes, "
                "%zu new, %zu unwinders built%s%.0zu%s)\n",
                window, st.samples, n, n == 1 ? "" : "s", st.processes, st.new_processes, st.unwinders,
                st.lost ? ", " : "", st.lost, st.lost ? " samples lost" : "");
        hs_profile_free(p);
        if (once)
            break;
        for (;;) { /* the rest of the period */
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double el = (double)(now.tv_sec - p0.tv_sec) + (double)(now.tv_nsec - p0.tv_nsec) / 1e9;
            if (*stop || el >= period)
                break;
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
            hs_live_idle(live);
        }
    }
    hs_live_close(live);
    if (curl)
        curl_easy_cleanup(curl);
    curl = NULL;
    hs_ksyms_free(ks);
    hs_symbolizer_free(sym);
    curl_global_cleanup();
    return rc;
}
