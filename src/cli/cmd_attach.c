/* cmd_attach.c — `hotspur attach PID`: profile a running process that was
 * started without the agent. The agent library is loaded into it through
 * the process's own dlopen (src/attach/inject.h) and started there
 * (hotspur_attach_start, src/agent/attach.c), which sends the malloc
 * family, new/delete and (--lock) the pthread locks to it by rewriting GOT
 * entries; `--detach` (or the end of --duration) puts them back and writes
 * the profiles. docs/attach.md.
 *
 * Also the injection alone: --load LIB [--call FUNC [--arg S]], --check. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/attach.h"
#include "attach/inject.h"
#include "base/units.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "profile/profile.h"

static void attach_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur attach PID [--heap] [--exact | --leaks] [--lock] [-o FILE] [--duration D]\n"
            "       hotspur attach PID [--heap] [--lock] --server URL [--service S] [--version V]\n"
            "                          [--labels K=V,...] [--period D] [--window D] [--duration D]\n"
            "       hotspur attach PID --detach\n"
            "       hotspur attach PID --check\n"
            "       hotspur attach PID --load LIB [--call FUNC [--arg STRING]]\n"
            "\n"
            "Profile a running process that was started without the agent: the agent\n"
            "is loaded into PID with the process's own dlopen (glibc >= 2.34, x86-64),\n"
            "from outside through ptrace (one thread is stopped a few milliseconds and\n"
            "resumes as it was; a system call it was blocked in is restarted), started\n"
            "there, and the calls it profiles are sent to it by rewriting the GOT\n"
            "entries of every loaded module (and of modules dlopened later).\n"
            "\n"
            "  --heap           heap profile, sampled (every 512 KiB on average; the\n"
            "                   default when no profile is named)\n"
            "  --exact          heap: every allocation, bytes per site exact\n"
            "  --leaks          heap: every allocation, and at detach the blocks\n"
            "                   allocated since the attach that nothing points to\n"
            "  --lock           lock contention (pthread mutexes and rwlocks)\n"
            "  -o FILE          the profile's file (default hotspur.PID.pb.gz; with\n"
            "                   several profiles, FILE.heap.pb.gz, FILE.lock.pb.gz...)\n"
            "  --duration D     detach by itself after D (e.g. 30s, 10m); without it\n"
            "                   the agent stays until `hotspur attach PID --detach`\n"
            "                   (or until the process ends, when it writes them too)\n"
            "  --server URL     continuous mode: no files; a window of each profile is\n"
            "                   uploaded to `hotspur serve` at URL (http://HOST:PORT)\n"
            "                   every period, as HOTSPUR_SERVER does for a preloaded\n"
            "                   agent, until the detach (which uploads the open window)\n"
            "  --service S      the service name (default: the program's name); also\n"
            "                   --version V, --labels K=V,... (HOTSPUR_VERSION, _LABELS);\n"
            "                   the bearer token comes from HOTSPUR_TOKEN (of attach)\n"
            "  --period D       one window per period (default 60s)\n"
            "  --window D       each window's length (default 10s; at most the period)\n"
            "  --cpu, --wall    refused: CPU and off-CPU time of a running process are\n"
            "                   read from outside (hotspur record -p PID [--off-cpu])\n"
            "  --stats          at detach the agent prints its counters (and the leak\n"
            "                   scan's) on the process's stderr\n"
            "  --detach         put every rewritten entry back, stop the agent's\n"
            "                   threads, write the profiles; the process runs on as\n"
            "                   before (the library stays loaded, idle; attach again\n"
            "                   at will)\n"
            "\n"
            "Only what happens after the attach is profiled: blocks allocated before it\n"
            "are not counted, and their frees go to libc untouched (the report's header\n"
            "says so). While attached the process is listed by `hotspur ctl` and its\n"
            "profile can be dumped there. CPU and off-CPU time of a running process\n"
            "are read from outside, with nothing loaded: hotspur record -p PID.\n"
            "\n"
            "--check says whether PID can be attached to, and if not why (not yours,\n"
            "already traced, kernel.yama.ptrace_scope, statically linked, not glibc).\n"
            "--load loads any library (the injection alone) and, with --call, calls\n"
            "FUNC(STRING) from it in the same stop. See docs/attach.md.\n");
}

enum { OPT_LOAD = HS_CLI_EXTRA, OPT_CALL, OPT_ARG, OPT_CHECK, OPT_HEAP, OPT_EXACT, OPT_LEAKS, OPT_LOCK,
       OPT_CPU, OPT_WALL, OPT_DURATION, OPT_DETACH, OPT_SERVER, OPT_SERVICE, OPT_VERSION, OPT_LABELS,
       OPT_PERIOD, OPT_WINDOW, OPT_STATS };

typedef struct {
    const char *load, *call, *arg, *duration;
    const char *server, *service, *version, *labels, *period, *window; /* continuous mode */
    int check, heap, exact, leaks, lock, cpu, detach, stats;
} attach_args;

static int attach_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                        size_t errlen)
{
    attach_args *a = ctx;
    (void)o;
    (void)err;
    (void)errlen;
    switch (code) {
    case OPT_LOAD: a->load = arg; break;
    case OPT_CALL: a->call = arg; break;
    case OPT_ARG: a->arg = arg; break;
    case OPT_CHECK: a->check = 1; break;
    case OPT_HEAP: a->heap = 1; break;
    case OPT_EXACT: a->exact = 1; break;
    case OPT_LEAKS: a->leaks = 1; break;
    case OPT_LOCK: a->lock = 1; break;
    case OPT_CPU: case OPT_WALL: a->cpu = 1; break;
    case OPT_DURATION: a->duration = arg; break;
    case OPT_SERVER: a->server = arg; break;
    case OPT_SERVICE: a->service = arg; break;
    case OPT_VERSION: a->version = arg; break;
    case OPT_LABELS: a->labels = arg; break;
    case OPT_PERIOD: a->period = arg; break;
    case OPT_WINDOW: a->window = arg; break;
    case OPT_STATS: a->stats = 1; break;
    default: a->detach = 1; break;
    }
    return 0;
}

/* Why the agent refused, in one line (the fix included). */
static const char *start_refusal(long code)
{
    switch (code) {
    case HS_ATTACH_ALREADY: return "the agent is attached there already (hotspur attach PID --detach first)";
    case HS_ATTACH_PRELOADED:
        return "the agent runs there from the start (LD_PRELOAD or hotspur record): use hotspur ctl PID dump";
    case HS_ATTACH_BAD_CONFIG: return "the agent did not understand its configuration (a different hotspur version?)";
    case HS_ATTACH_FOREIGN_MALLOC:
        return "its malloc is not glibc's (jemalloc, tcmalloc...): the heap profile of attach follows glibc's "
               "allocator only (start it under hotspur record instead)";
    case HS_ATTACH_NOTHING: return "no profile asked for";
    default: return "the agent could not start (the process's stderr says why)";
    }
}

/* Is the agent library (path) mapped in pid? */
static int agent_mapped(long pid, const char *lib)
{
    char path[64], line[PATH_MAX + 128];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int found = 0;
    size_t n = strlen(lib);
    while (!found && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        found = p && strncmp(p, lib, n) == 0 && (p[n] == '\n' || p[n] == 0);
    }
    fclose(f);
    return found;
}

/* The files the agent wrote from the template it used (the note
 * hotspur_attach_stop leaves): print each that exists. */
static void print_files(long pid, const char *note)
{
    FILE *f = fopen(note, "r");
    if (!f) {
        printf("profiles written under the name given at attach (-o)\n");
        return;
    }
    char line[PATH_MAX + 16], tmpl[PATH_MAX + 16] = "", uploads[PATH_MAX + 16] = "";
    int heap = 0, lock = 0, leaks = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "output=", 7) == 0)
            snprintf(tmpl, sizeof tmpl, "%s", line + 7);
        if (strncmp(line, "uploads=", 8) == 0)
            snprintf(uploads, sizeof uploads, "%s", line + 8);
        heap |= strcmp(line, "heap=1") == 0;
        lock |= strcmp(line, "lock=1") == 0;
        leaks |= strcmp(line, "leaks=1") == 0;
    }
    fclose(f);
    if (uploads[0]) { /* continuous mode: nothing written, the uploads ended */
        printf("uploads ended: %s\n", uploads);
        return;
    }
    char base[PATH_MAX];
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 24 < sizeof base; p++) { /* %p and %% (what -o allows) */
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(base + o, sizeof base - o, "%ld", pid);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            base[o++] = '%';
            p++;
        } else {
            base[o++] = *p;
        }
    }
    base[o] = 0;
    struct {
        const char *type, *companion;
        int on;
    } files[] = {{"lock", NULL, lock}, {"heap", NULL, heap}, {"heap", "peak", heap}, {"heap", "leaks", leaks}};
    int printed = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (files[i].on && hs_profile_file_name(base, files[i].type, heap + lock > 1, files[i].companion, path,
                                                sizeof path) == 0 && stat(path, &st) == 0) {
            printf("wrote %s\n", path);
            printed++;
        }
    }
    if (!printed)
        printf("no profile file found at %s (the process's stderr may say why)\n", base);
}

/* The continuous mode's config lines (attach.h) from --server... into out
 * ("" without --server). 0, or hs_cli_fail's code after its message. */
static int upload_config(const attach_args *a, char *out, size_t len)
{
    out[0] = 0;
    if (!a->server) {
        if (a->service || a->version || a->labels || a->period || a->window)
            return hs_cli_fail("attach", NULL, "--service, --version, --labels, --period and --window go with --server URL");
        return 0;
    }
    if (strncmp(a->server, "http://", 7) != 0)
        return hs_cli_fail("attach", a->server, "not an http:// URL (the address of hotspur serve)");
    if (a->leaks)
        return hs_cli_fail("attach", "--leaks", "the leak scan runs at detach, into a file: not with --server");
    double period = 0, window = 0;
    if ((a->period && (hs_cli_parse_seconds(a->period, &period) < 0 || period <= 0)) ||
        (a->window && (hs_cli_parse_seconds(a->window, &window) < 0 || window <= 0)))
        return hs_cli_fail("attach", a->period && period <= 0 ? a->period : a->window,
                           "not a duration (" HS_DURATION_HINT ")");
    const char *token = getenv("HOTSPUR_TOKEN"); /* as record: never on the command line */
    if (token && !*token)
        token = NULL;
    const char *v[] = {a->server, a->service, a->version, a->labels, token};
    for (size_t i = 0; i < 5; i++)
        if (v[i] && (strpbrk(v[i], "\r\n") || strlen(v[i]) >= 512))
            return hs_cli_fail("attach", i == 4 ? "HOTSPUR_TOKEN" : v[i], "too long or has a newline");
    size_t n = (size_t)snprintf(out, len, "server=%s\n", a->server);
    if (a->service)
        n += (size_t)snprintf(out + n, len - n, "service=%s\n", a->service);
    if (a->version)
        n += (size_t)snprintf(out + n, len - n, "version=%s\n", a->version);
    if (a->labels)
        n += (size_t)snprintf(out + n, len - n, "labels=%s\n", a->labels);
    if (token)
        n += (size_t)snprintf(out + n, len - n, "token=%s\n", token);
    if (period > 0)
        n += (size_t)snprintf(out + n, len - n, "period=%lld\n", (long long)(period * 1e9));
    if (window > 0)
        snprintf(out + n, len - n, "window=%lld\n", (long long)(window * 1e9));
    return 0;
}

static int detach(long pid, const char *lib)
{
    char err[1024], note[PATH_MAX];
    if (!agent_mapped(pid, lib)) {
        fprintf(stderr, "hotspur attach: process %ld is not attached to (the agent %s is not loaded there): "
                        "nothing to detach\n", pid, lib);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(note, sizeof note, "%s/hotspur-detach.%d.%ld", tmp && *tmp ? tmp : "/tmp", (int)getpid(),
             (long)time(NULL));
    unlink(note);
    hs_inject_result r;
    if (hs_inject_dlopen((pid_t)pid, lib, "hotspur_attach_stop", note, &r, err, sizeof err) < 0) {
        fprintf(stderr, "hotspur attach: %s\n", err);
        return 1;
    }
    if ((long)r.sym_ret == HS_ATTACH_NOT_ATTACHED) {
        unlink(note);
        fprintf(stderr, "hotspur attach: process %ld is not attached to: nothing to detach\n", pid);
        return 1;
    }
    printf("detached from process %ld (thread %d stopped %.3f ms)\n", pid, (int)r.tid, r.stopped_ns / 1e6);
    fflush(stdout);
    /* The agent writes on a thread of its own, then leaves the note. */
    struct stat st;
    for (int i = 0; i < 6000 && stat(note, &st) != 0 && kill((pid_t)pid, 0) == 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (stat(note, &st) != 0) {
        fprintf(stderr, "hotspur attach: process %ld did not finish writing its profiles in 60 s%s\n", pid,
                kill((pid_t)pid, 0) == 0 ? "" : " (it ended)");
        return 1;
    }
    print_files(pid, note);
    unlink(note);
    return 0;
}

static int profile(long pid, const attach_args *a, const char *output)
{
    char lib[PATH_MAX], out[PATH_MAX], err[1024];
    if (hs_cli_find_agent(lib, sizeof lib) != 0)
        return fprintf(stderr, "hotspur attach: cannot find libhotspur.so (set HOTSPUR_LIB)\n"), 1;
    if (a->detach)
        return detach(pid, lib);
    double dur = 0;
    if (a->duration && hs_cli_parse_seconds(a->duration, &dur) < 0)
        return hs_cli_fail("attach", a->duration, "not a duration (" HS_DURATION_HINT ")");
    if (a->exact && a->leaks)
        return hs_cli_fail("attach", "--exact", "--leaks is exact already");
    char def[64];
    snprintf(def, sizeof def, "hotspur.%ld.pb.gz", pid);
    const char *o = output ? output : def;
    if (o[0] == '/') {
        snprintf(out, sizeof out, "%s", o);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(out, sizeof out, "%s/%s", cwd, o) >= sizeof out)
            return hs_cli_fail("attach", o, "output path too long");
    }
    int heap = a->heap || a->exact || a->leaks || !a->lock;
    char config[PATH_MAX + 3200], up[3000] = "";
    int urc = upload_config(a, up, sizeof up);
    if (urc != 0)
        return urc;
    snprintf(config, sizeof config, "%s%s%s%s%s%soutput=%s", heap ? "heap\n" : "", a->exact ? "rate=1\n" : "",
             a->leaks ? "leaks\n" : "", a->lock ? "lock\n" : "", a->stats ? "stats\n" : "", up, out);
    hs_inject_result r;
    if (hs_inject_dlopen((pid_t)pid, lib, "hotspur_attach_start", config, &r, err, sizeof err) < 0) {
        fprintf(stderr, "hotspur attach: %s\n", err);
        return 1;
    }
    long rc = (long)r.sym_ret;
    if (rc < 0) {
        fprintf(stderr, "hotspur attach: process %ld: %s\n", pid, start_refusal(rc));
        return 1;
    }
    printf("attached to process %ld: %s%s%s (thread %d stopped %.3f ms; %ld GOT entries rewritten)\n", pid,
           heap ? (a->leaks ? "heap with leaks" : a->exact ? "heap, every allocation" : "heap, sampled") : "",
           heap && a->lock ? ", " : "", a->lock ? "lock" : "", (int)r.tid, r.stopped_ns / 1e6, rc);
    if (a->server)
        printf("uploading to %s%s%s\n", a->server, a->service ? " as service " : "", a->service ? a->service : "");
    if (!a->duration) {
        printf("profiling until: hotspur attach %ld --detach\n", pid);
        return 0;
    }
    fflush(stdout);
    volatile sig_atomic_t *stop = hs_cli_stop_on_signals();
    int64_t end = (int64_t)(dur * 1e9);
    for (int64_t slept = 0; slept < end && !*stop && kill((pid_t)pid, 0) == 0; slept += 50000000) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    if (kill((pid_t)pid, 0) != 0) {
        printf("process %ld ended while attached: it %s its profiles at its exit (%s)\n", pid,
               a->server ? "uploaded" : "wrote", a->server ? a->server : out);
        return 0;
    }
    return detach(pid, lib);
}

int hs_cmd_attach(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"load", required_argument, OPT_LOAD},
        {"call", required_argument, OPT_CALL},
        {"arg", required_argument, OPT_ARG},
        {"check", no_argument, OPT_CHECK},
        {"heap", no_argument, OPT_HEAP},
        {"exact", no_argument, OPT_EXACT},
        {"leaks", no_argument, OPT_LEAKS},
        {"lock", no_argument, OPT_LOCK},
        {"cpu", no_argument, OPT_CPU},
        {"wall", no_argument, OPT_WALL},
        {"duration", required_argument, OPT_DURATION},
        {"detach", no_argument, OPT_DETACH},
        {"server", required_argument, OPT_SERVER},
        {"service", required_argument, OPT_SERVICE},
        {"version", required_argument, OPT_VERSION},
        {"labels", required_argument, OPT_LABELS},
        {"period", required_argument, OPT_PERIOD},
        {"window", required_argument, OPT_WINDOW},
        {"stats", no_argument, OPT_STATS},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "attach", .usage = attach_usage, .kind = HS_KIND_NOTRIM, .takes = HS_CLI_OUTPUT,
        .does_not_apply = true, .extras = extras, .extra = attach_extra, .min_args = 1,
        .max_args = 1, .missing_msg = "missing PID (hotspur attach PID [--heap] [--lock])"};
    attach_args a = {0};
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, NULL, &a, &output, &first);
    if (rc >= 0)
        return rc;
    long pid;
    if (hs_cli_parse_long(argv[first], 1, INT_MAX, &pid) < 0)
        return hs_cli_fail("attach", argv[first], "not a process id");
    char err[1024];
    if (a.check) {
        if (hs_inject_check((pid_t)pid, err, sizeof err) < 0) {
            fprintf(stderr, "hotspur attach: %s\n", err);
            return 1;
        }
        printf("process %ld can be attached to\n", pid);
        return 0;
    }
    if (a.cpu)
        return hs_cli_fail("attach", NULL,
                           "CPU and off-CPU time of a running process are read from outside, with "
                           "nothing loaded into it: hotspur record -p PID [--off-cpu]");
    if (!a.load)
        return profile(pid, &a, output);
    if (a.arg && !a.call)
        return hs_cli_fail("attach", "--arg", "needs --call FUNC");
    char lib[PATH_MAX];
    if (!realpath(a.load, lib))
        return hs_cli_fail("attach", a.load, "no such library");
    hs_inject_result r;
    if (hs_inject_dlopen((pid_t)pid, lib, a.call, a.arg ? a.arg : "", &r, err, sizeof err) < 0) {
        fprintf(stderr, "hotspur attach: %s\n", err);
        return 1;
    }
    printf("loaded %s into process %ld (thread %d stopped %.3f ms, %.3f ms of it in the "
           "calls%s)\n",
           lib, pid, (int)r.tid, r.stopped_ns / 1e6, r.call_ns / 1e6,
           r.restarted ? "; its system call restarted" : "");
    if (a.call)
        printf("%s returned %lld\n", a.call, (long long)r.sym_ret);
    if (r.signals_held)
        printf("%d signal(s) that came meanwhile sent again\n", r.signals_held);
    return 0;
}
