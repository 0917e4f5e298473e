/* cmd_record.c — `hotspur record`: run a command with the agent preloaded,
 * pass its stdio and exit status through, then print a one-line summary of
 * the profile it wrote. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "profile/profile.h"

static const char record_usage[] =
    "usage: hotspur record [--cpu] [--heap] [options] [-o FILE] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD with the hotspur agent (LD_PRELOAD) and write its profiles.\n"
    "CMD's stdin, stdout and stderr are passed through untouched and hotspur\n"
    "exits with CMD's exit status (128+N if CMD was killed by signal N).\n"
    "\n"
    "Profile types (default: --cpu):\n"
    "      --cpu              CPU time, sampled per thread\n"
    "      --heap             heap allocations: allocated and in use (plus the\n"
    "                         in-use profile at the peak, as a companion file)\n"
    "Options:\n"
    "  -F, --frequency HZ     CPU samples per second of CPU time per thread\n"
    "                         (default 100, 1..10000)\n"
    "      --heap-rate BYTES  mean bytes between heap samples (default 524288;\n"
    "                         1 records every allocation exactly)\n"
    "      --leaks            heap in exact mode; at exit, report the blocks no\n"
    "                         pointer reaches any more, by allocation stack, and\n"
    "                         write them as a profile\n"
    "  -o, --output FILE      where to write (default hotspur.pb.gz); gzipped pprof\n"
    "  -h, --help             show this help\n"
    "\n"
    "Files: with one type its profile is FILE and companions get a suffix before\n"
    ".pb.gz (out.peak.pb.gz, out.leaks.pb.gz); with several, each file carries\n"
    "its type (out.cpu.pb.gz, out.heap.pb.gz, out.heap.peak.pb.gz). All written\n"
    "files are listed on stderr at the end.\n"
    "\n"
    "The profiles cover the process CMD starts (processes it forks or execs\n"
    "are not profiled). They are written when that process exits normally\n"
    "(exit or return from main); a process killed by a signal or ending in\n"
    "_exit writes none. Read them with `hotspur top FILE` or `go tool pprof`.\n"
    "Environment: HOTSPUR_LIB overrides the agent's path.\n";

/* The agent: $HOTSPUR_LIB, else next to this binary (../lib). */
static int find_agent(char *out, size_t outlen)
{
    const char *env = getenv("HOTSPUR_LIB");
    if (env && *env) {
        snprintf(out, outlen, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const rel[] = {"../lib/libhotspur.so", "../lib/x86_64-linux-gnu/libhotspur.so",
                                      "../lib64/libhotspur.so"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (outlen >= PATH_MAX && access(cand, R_OK) == 0 && realpath(cand, out))
            return 0;
    }
    return -1;
}

static int absolute_path(const char *path, char *out, size_t outlen)
{
    if (path[0] == '/') {
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    if ((size_t)snprintf(out, outlen, "%s/%s", cwd, path) >= outlen)
        return -1;
    return 0;
}

/* Sum of sample value v over all samples. */
static int64_t total_value(const hs_profile *p, size_t v)
{
    int64_t sum = 0;
    if (v < p->n_sample_types)
        for (size_t i = 0; i < p->n_samples; i++)
            sum += p->samples[i].values[v];
    return sum;
}

static void human_bytes(int64_t b, char *out, size_t outlen)
{
    const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, outlen, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
}

/* The outermost function of location id, "?" when unknown. */
static const char *frame_name(const hs_profile *p, uint64_t loc_id)
{
    const hs_location *l = hs_profile_location(p, loc_id);
    if (!l || !l->n_lines)
        return "?";
    const hs_function *f = hs_profile_function(p, l->lines[l->n_lines - 1].function_id);
    return f ? hs_profile_string(p, f->name) : "?";
}

typedef struct {
    const hs_sample *s;
    int64_t objs, bytes;
} leak_site;

static int by_bytes_desc(const void *a, const void *b)
{
    const leak_site *x = a, *y = b;
    return (y->bytes > x->bytes) - (y->bytes < x->bytes);
}

/* Same call stack, function by function (call sites within a function
 * may differ: the report groups by functions). */
static int same_stack(const hs_profile *p, const hs_sample *a, const hs_sample *b)
{
    if (a->n_locations != b->n_locations)
        return 0;
    for (size_t i = 0; i < a->n_locations; i++)
        if (a->location_ids[i] != b->location_ids[i] &&
            strcmp(frame_name(p, a->location_ids[i]), frame_name(p, b->location_ids[i])) != 0)
            return 0;
    return 1;
}

/* Leaked blocks by allocation stack (threads merged), biggest first. */
static void leak_report(const hs_profile *p, const char *path)
{
    size_t n = 0;
    leak_site *sites = calloc(p->n_samples ? p->n_samples : 1, sizeof *sites);
    if (!sites)
        return;
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        size_t j = 0;
        while (j < n && !same_stack(p, sites[j].s, s))
            j++;
        if (j == n)
            sites[n++].s = s;
        sites[j].objs += s->values[0];
        sites[j].bytes += s->values[1];
    }
    qsort(sites, n, sizeof *sites, by_bytes_desc);
    char b[32];
    human_bytes(total_value(p, 1), b, sizeof b);
    fprintf(stderr, "hotspur: leaks: %lld blocks, %s, from %zu allocation stacks (%s)\n",
            (long long)total_value(p, 0), b, n, path);
    for (size_t i = 0; i < n; i++) {
        human_bytes(sites[i].bytes, b, sizeof b);
        fprintf(stderr, "  %s in %lld block%s allocated at\n", b, (long long)sites[i].objs,
                sites[i].objs == 1 ? "" : "s");
        const hs_sample *s = sites[i].s;
        for (size_t k = 0; k < s->n_locations && k < 12; k++)
            fprintf(stderr, "      %s\n", frame_name(p, s->location_ids[k]));
        if (s->n_locations > 12)
            fprintf(stderr, "      ... %zu more frames\n", s->n_locations - 12);
    }
    free(sites);
}

/* The files a run writes, in the order they are reported. */
static const struct {
    const char *type, *companion, *kind;
} record_files[] = {{"cpu", NULL, "cpu"}, {"heap", NULL, "heap"}, {"heap", "peak", "peak"}, {"heap", "leaks", "leaks"}};
#define N_RECORD_FILES (sizeof record_files / sizeof *record_files)

/* The name of record_files[i] for this run, or -1 if the run doesn't write it. */
static int record_file_name(size_t i, const char *path, int cpu, int heap, int leaks, char *out,
                            size_t outlen)
{
    int is_heap = strcmp(record_files[i].type, "heap") == 0;
    if ((is_heap && !heap) || (!is_heap && !cpu) || (strcmp(record_files[i].kind, "leaks") == 0 && !leaks))
        return -1;
    return hs_profile_file_name(path, record_files[i].type, cpu && heap, record_files[i].companion, out,
                                outlen);
}

/* One summary line per written file (and the leak report). */
static void summarize(const char *path, const char *kind)
{
    char err[256];
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "hotspur: no profile written to %s (the program ended without exit(), "
                        "e.g. by a signal or _exit)\n", path);
        return;
    }
    hs_profile *p = hs_profile_read_file(path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "hotspur: %s: %s\n", path, err);
        return;
    }
    char a[32], b[32];
    if (strcmp(kind, "cpu") == 0) {
        fprintf(stderr, "hotspur: wrote %s (%lld samples, %.2f s CPU)\n", path,
                (long long)total_value(p, 0), (double)total_value(p, 1) / 1e9);
    } else if (strcmp(kind, "heap") == 0) {
        human_bytes(total_value(p, 1), a, sizeof a);
        human_bytes(total_value(p, 3), b, sizeof b);
        fprintf(stderr, "hotspur: wrote %s (%s allocated in %lld objects, %s in use at exit)\n", path,
                a, (long long)total_value(p, 0), b);
    } else if (strcmp(kind, "peak") == 0) {
        human_bytes(total_value(p, 1), a, sizeof a);
        fprintf(stderr, "hotspur: wrote %s (%s in use at the peak)\n", path, a);
    } else {
        leak_report(p, path);
    }
    hs_profile_free(p);
}

int hs_cmd_record(int argc, char **argv)
{
    enum { OPT_CPU = 256, OPT_HEAP, OPT_HEAP_RATE, OPT_LEAKS };
    static const struct option opts[] = {{"frequency", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"cpu", no_argument, 0, OPT_CPU},
                                         {"heap", no_argument, 0, OPT_HEAP},
                                         {"heap-rate", required_argument, 0, OPT_HEAP_RATE},
                                         {"leaks", no_argument, 0, OPT_LEAKS},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = "hotspur.pb.gz";
    long hz = 100;
    long long heap_rate = 524288;
    int cpu = 0, heap = 0, leaks = 0, rate_given = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+F:o:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'F':
            errno = 0;
            hz = strtol(optarg, &end, 10);
            if (errno || *end || hz < 1 || hz > 10000) {
                fprintf(stderr, "hotspur record: bad frequency '%s' (want 1..10000)\n", optarg);
                return 2;
            }
            break;
        case 'o': out = optarg; break;
        case OPT_CPU: cpu = 1; break;
        case OPT_HEAP: heap = 1; break;
        case OPT_LEAKS: leaks = heap = 1; break;
        case OPT_HEAP_RATE:
            errno = 0;
            heap_rate = strtoll(optarg, &end, 10);
            if (errno || *end || heap_rate < 1 || heap_rate > (1LL << 40)) {
                fprintf(stderr, "hotspur record: bad heap rate '%s' (want 1..%lld bytes)\n", optarg,
                        1LL << 40);
                return 2;
            }
            rate_given = heap = 1;
            break;
        case 'h': fputs(record_usage, stdout); return 0;
        default:
            fprintf(stderr, "hotspur record: try 'hotspur record --help'\n");
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "hotspur record: no command given; try 'hotspur record --help'\n");
        return 2;
    }
    if (leaks && rate_given && heap_rate != 1) {
        fprintf(stderr, "hotspur record: --leaks records every allocation; it can't go with "
                        "--heap-rate %lld\n", heap_rate);
        return 2;
    }
    if (leaks)
        heap_rate = 1;
    if (!cpu && !heap)
        cpu = 1;
    char agent[PATH_MAX], path[PATH_MAX];
    if (find_agent(agent, sizeof agent) != 0) {
        fprintf(stderr, "hotspur record: cannot find libhotspur.so (set HOTSPUR_LIB)\n");
        return 2;
    }
    if (absolute_path(out, path, sizeof path) != 0) {
        fprintf(stderr, "hotspur record: output path too long\n");
        return 2;
    }
    for (size_t i = 0; i < N_RECORD_FILES; i++) { /* no stale file may pass for new */
        char name[PATH_MAX];
        if (record_file_name(i, path, cpu, heap, leaks, name, sizeof name) == 0 && unlink(name) != 0 &&
            errno != ENOENT) {
            fprintf(stderr, "hotspur record: cannot replace %s: %s\n", name, strerror(errno));
            return 2;
        }
    }

    /* Like a shell running a foreground job: let the child get ^C and ^\ and
     * stay alive to report. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hotspur record: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        char preload[2 * PATH_MAX + 2], hzs[32], pids[32], rates[32];
        const char *prev = getenv("LD_PRELOAD");
        if (prev && *prev)
            snprintf(preload, sizeof preload, "%s:%s", prev, agent);
        else
            snprintf(preload, sizeof preload, "%s", agent);
        snprintf(hzs, sizeof hzs, "%ld", hz);
        snprintf(pids, sizeof pids, "%d", (int)getpid());
        setenv("LD_PRELOAD", preload, 1);
        setenv("HOTSPUR_OUTPUT", path, 1);
        setenv("HOTSPUR_CPU_HZ", hzs, 1);
        setenv("HOTSPUR_ROOT_PID", pids, 1);
        snprintf(rates, sizeof rates, "%lld", heap_rate);
        setenv("HOTSPUR_CPU", cpu ? "1" : "0", 1);
        setenv("HOTSPUR_HEAP", heap ? "1" : "0", 1);
        setenv("HOTSPUR_HEAP_RATE", rates, 1);
        setenv("HOTSPUR_LEAKS", leaks ? "1" : "0", 1);
        execvp(argv[optind], argv + optind);
        int e = errno;
        fprintf(stderr, "hotspur record: cannot run %s: %s\n", argv[optind], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "hotspur record: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    /* A command that could not be run (127/126) wrote nothing: say nothing. */
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126))
        return code;
    for (size_t i = 0; i < N_RECORD_FILES; i++) {
        char name[PATH_MAX];
        if (record_file_name(i, path, cpu, heap, leaks, name, sizeof name) == 0)
            summarize(name, record_files[i].kind);
    }
    return code;
}
