/* runner.c — main() of every benchmark program: options, then for each case
 * matching --filter, --forks fresh processes (fork + exec of the program
 * itself, as JMH forks JVMs: a new address-space layout, a new heap, and a
 * crash that takes only its own case down). Each fork calibrates the
 * iteration count to --time, throws --warmup measurements away, and reports
 * --iterations measurements on a pipe, one text line each. The parent
 * summarizes them (stats.h), adds the warnings a person should see, and
 * prints the report (report.c).
 *
 * --profile cpu|heap adds one fork per case that runs under the agent
 * (libhotspur.so preloaded, its autostart disabled) and starts it with
 * hotspur_start() when the measured loop begins and stops it when the loop
 * ends: the profile holds the loop and nothing of the setup or the harness
 * around it. */
#define _GNU_SOURCE
#include "harness/harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cmdline.h"
#include "base/units.h"
#include "harness/alloc.h"
#include "hotspur/hotspur.h"
#include "base/vec.h"

#ifndef HS_BENCH_AGENT_INSTALLED
#define HS_BENCH_AGENT_INSTALLED ""
#endif
#ifndef HS_BENCH_AGENT_BUILD
#define HS_BENCH_AGENT_BUILD ""
#endif

typedef struct {
    double time_s;
    int warmup, iterations, forks;
    const char *filter;
    int format;
    const char *out;
    const char *profile;     /* NULL, "cpu" or "heap" */
    const char *profile_out; /* file name prefix */
    double profile_time_s;
    const char *agent;
    int list;
    /* worker */
    int worker_case, worker_fd;
    const char *worker_profile_path;
    const char *prog; /* argv[0] */
} opts;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [OPTIONS]\n"
            "Runs the benchmarks of this program (hotspur's harness, docs/bench.md).\n"
            "\n"
            "  --filter RE        only the cases whose name matches the extended regex RE\n"
            "  --time D           target time of one measurement (default 0.1s; 250ms, 2s, ...)\n"
            "  --warmup N         measurements thrown away after calibration (default 2)\n"
            "  --iterations N     measurements kept per fork (default 5)\n"
            "  --forks N          fresh processes per case (default 3; 0: in this process)\n"
            "  --format F         table (default), json, csv or go (Go's benchmark format)\n"
            "  --out FILE         write the report (in --format) to FILE; the table still goes\n"
            "                     to stdout\n"
            "  --profile cpu|heap also write a hotspur profile of the measured loop of each case\n"
            "  --profile-out P    profile file name prefix (default hotspur-bench): P.CASE.TYPE.pb.gz\n"
            "  --profile-time D   length of the profiled run (default 1s)\n"
            "  --agent PATH       libhotspur.so for --profile (default: $HOTSPUR_LIB, the installed one)\n"
            "  --list             print the case names and exit\n",
            prog);
}

/* "0.1", "100ms", "2s", "500us" (units.h): seconds, or -1. */
static double parse_duration(const char *s)
{
    int64_t ns;
    if (hs_parse_duration_ns(s, &ns) < 0 || ns <= 0)
        return -1;
    return ns / 1e9;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

enum { O_LIST = 0x4800, O_FILTER, O_TIME, O_PROFILE_TIME, O_WARMUP, O_ITERATIONS, O_FORKS, O_FORMAT, O_OUT,
       O_PROFILE, O_PROFILE_OUT, O_AGENT, O_WORKER, O_FD, O_PROFILE_PATH };

/* hs_cmdline's take: one option into the opts. */
static int take_opt(void *ctx, int c, const char *v, const char *word, char *msg, size_t msglen)
{
    opts *o = ctx;
    (void)word;
    switch (c) {
    case O_LIST:
        o->list = 1;
        break;
    case O_FILTER:
        o->filter = v;
        break;
    case O_TIME:
    case O_PROFILE_TIME: {
        double d = parse_duration(v);
        if (d <= 0 || d > 3600) {
            snprintf(msg, msglen, "%s: bad duration '%s'", c == O_TIME ? "--time" : "--profile-time", v);
            return -1;
        }
        *(c == O_TIME ? &o->time_s : &o->profile_time_s) = d;
        break;
    }
    case O_WARMUP:
    case O_ITERATIONS:
    case O_FORKS: {
        int *dst = c == O_WARMUP ? &o->warmup : c == O_ITERATIONS ? &o->iterations : &o->forks;
        if (parse_int(v, c == O_ITERATIONS ? 1 : 0, 100000, dst) != 0) {
            snprintf(msg, msglen, "%s: bad count '%s'",
                     c == O_WARMUP ? "--warmup" : c == O_ITERATIONS ? "--iterations" : "--forks", v);
            return -1;
        }
        break;
    }
    case O_FORMAT: {
        static const char *names[] = {"table", "json", "csv", "go"};
        o->format = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(v, names[k]) == 0)
                o->format = k;
        if (o->format < 0) {
            snprintf(msg, msglen, "--format: table, json, csv or go, not '%s'", v);
            return -1;
        }
        break;
    }
    case O_OUT:
        o->out = v;
        break;
    case O_PROFILE:
        if (strcmp(v, "cpu") != 0 && strcmp(v, "heap") != 0) {
            snprintf(msg, msglen, "--profile: cpu or heap, not '%s'", v);
            return -1;
        }
        o->profile = v;
        break;
    case O_PROFILE_OUT:
        o->profile_out = v;
        break;
    case O_AGENT:
        o->agent = v;
        break;
    case O_WORKER:
    case O_FD:
        if (parse_int(v, 0, 1 << 20, c == O_WORKER ? &o->worker_case : &o->worker_fd) != 0) {
            snprintf(msg, msglen, "%s: bad value '%s'", c == O_WORKER ? "--hs-worker" : "--hs-fd", v);
            return -1;
        }
        break;
    case O_PROFILE_PATH:
        o->worker_profile_path = v;
        break;
    default:
        return HS_CMDLINE_UNKNOWN;
    }
    return 0;
}

static void help(void *ctx)
{
    usage(stdout, ((opts *)ctx)->prog);
}

/* 0 ok, 1 help printed, 2 usage error (message printed). */
static int parse_opts(int argc, char **argv, opts *o)
{
    *o = (opts){.time_s = 0.1, .warmup = 2, .iterations = 5, .forks = 3, .format = HS_BFMT_TABLE,
                .profile_out = "hotspur-bench", .profile_time_s = 1.0, .worker_case = -1, .worker_fd = -1, .prog = argv[0]};
    static const struct option table[] = {
        {"help", no_argument, NULL, 'h'},
        {"list", no_argument, NULL, O_LIST},
        {"filter", required_argument, NULL, O_FILTER},
        {"time", required_argument, NULL, O_TIME},
        {"profile-time", required_argument, NULL, O_PROFILE_TIME},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"iterations", required_argument, NULL, O_ITERATIONS},
        {"forks", required_argument, NULL, O_FORKS},
        {"format", required_argument, NULL, O_FORMAT},
        {"out", required_argument, NULL, O_OUT},
        {"profile", required_argument, NULL, O_PROFILE},
        {"profile-out", required_argument, NULL, O_PROFILE_OUT},
        {"agent", required_argument, NULL, O_AGENT},
        {"hs-worker", required_argument, NULL, O_WORKER}, /* internal: a fork */
        {"hs-fd", required_argument, NULL, O_FD},
        {"hs-profile-path", required_argument, NULL, O_PROFILE_PATH},
        {NULL, 0, NULL, 0},
    };
    hs_cmdline c = {.who = argv[0], .table = table, .take = take_opt, .help = help, .max_args = 0};
    int first;
    int rc = hs_cmdline_parse(&c, argc, argv, o, &first);
    return rc < 0 ? 0 : rc == 0 ? 1 : 2;
}

/* ---- a fork: calibrate, warm up, measure ---- */

static void profile_start(void *arg)
{
    const char *type = arg;
    int (*start)(const hotspur_config *) = (int (*)(const hotspur_config *))dlsym(RTLD_DEFAULT, "hotspur_start");
    hotspur_config cfg = {.cpu_hz = 1000};
    if (strcmp(type, "heap") == 0)
        cfg = (hotspur_config){.cpu_hz = -1, .heap = 1, .heap_rate = 1};
    if (!start || start(&cfg) != 0)
        fprintf(stderr, "hotspur-bench: hotspur_start: %s\n", start ? strerror(errno) : "the agent is not loaded");
}

static void profile_stop(void *arg)
{
    (void)arg;
    int (*stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hotspur_stop");
    if (stop)
        (void)stop();
}

static void put_meas(FILE *f, const hs_bmeas *m)
{
    fprintf(f, "m %llu %.0f %.0f %llu %llu", (unsigned long long)m->n, m->ns, m->cpu_ns,
            (unsigned long long)m->allocs, (unsigned long long)m->bytes);
    for (int k = 0; k < HS_HWC_N; k++)
        fprintf(f, " %.0f", m->hw[k]);
    fputc('\n', f);
    fflush(f);
}

static int run_fork(const hs_bcase *c, const opts *o, FILE *f)
{
    char err[512];
    hs_bmeas m;
    double target = o->time_s * 1e9;
    uint64_t n = 1;
    for (;;) { /* calibration, as Go's testing.B: grow n until one run takes --time */
        if (hs_bench_measure(c, n, NULL, &m, err, sizeof err) != 0) {
            fprintf(f, "fail %s\n", err);
            return 0;
        }
        if (m.ns >= target || n >= (1ull << 40))
            break;
        double next = m.ns > 0 ? (double)n * target / m.ns * 1.2 : (double)n * 100;
        if (next > (double)n * 100)
            next = (double)n * 100;
        n = next < (double)n + 1 ? n + 1 : (uint64_t)next;
    }
    uint64_t nm = m.ns > 0 ? (uint64_t)llround((double)n * target / m.ns) : n;
    if (nm < 1)
        nm = 1;
    /* Once more at that count: a run slowed by another process would
     * otherwise make every measurement short; the faster rate wins. */
    if (nm != n) {
        hs_bmeas m2;
        if (hs_bench_measure(c, nm, NULL, &m2, err, sizeof err) != 0) {
            fprintf(f, "fail %s\n", err);
            return 0;
        }
        if (m2.ns > 0 && m2.ns / (double)nm < m.ns / (double)n)
            nm = (uint64_t)llround((double)nm * target / m2.ns);
        if (nm < 1)
            nm = 1;
    }
    for (int i = 0; i < o->warmup; i++)
        if (hs_bench_measure(c, nm, NULL, &m, err, sizeof err) != 0) {
            fprintf(f, "fail %s\n", err);
            return 0;
        }
    if (o->worker_profile_path) {
        uint64_t np = (uint64_t)llround((double)nm * o->profile_time_s / o->time_s);
        hs_bhooks hooks = {profile_start, profile_stop, (void *)o->profile};
        if (hs_bench_measure(c, np ? np : 1, &hooks, &m, err, sizeof err) != 0) {
            fprintf(f, "fail %s\n", err);
            return 0;
        }
        int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "hotspur_dump");
        if (!dump || dump(o->worker_profile_path) != 0) {
            fprintf(f, "fail writing the profile %s: %s\n", o->worker_profile_path,
                    dump ? strerror(errno) : "the agent is not loaded");
            return 0;
        }
        fprintf(f, "profile %s\n", o->worker_profile_path);
        char peak[2048]; /* a heap profile comes with the profile at its peak */
        size_t pl = strlen(o->worker_profile_path);
        if (pl > 6 && pl < sizeof peak - 8 && strcmp(o->worker_profile_path + pl - 6, ".pb.gz") == 0) {
            snprintf(peak, sizeof peak, "%.*s.peak.pb.gz", (int)(pl - 6), o->worker_profile_path);
            if (access(peak, F_OK) == 0)
                fprintf(f, "profile %s\n", peak);
        }
    } else {
        for (int i = 0; i < o->iterations; i++) {
            if (hs_bench_measure(c, nm, NULL, &m, err, sizeof err) != 0) {
                fprintf(f, "fail %s\n", err);
                return 0;
            }
            put_meas(f, &m);
        }
    }
    fprintf(f, "done\n");
    return fflush(f) == 0 ? 0 : -1;
}

/* ---- the parent ---- */

static void set_str(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void add_warning(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_warning(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len && len + 2 < cap) {
        memcpy(buf + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    if (len < cap)
        vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Read one fork's lines into r. */
static void parse_fork_output(FILE *in, hs_bresult *r, int *done)
{
    char line[2048];
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "m ", 2) == 0) {
            hs_bmeas m;
            unsigned long long n, allocs, bytes;
            if (sscanf(line + 2, "%llu %lf %lf %llu %llu %lf %lf %lf %lf", &n, &m.ns, &m.cpu_ns, &allocs, &bytes,
                       &m.hw[0], &m.hw[1], &m.hw[2], &m.hw[3]) != 9)
                continue;
            m.n = n;
            m.allocs = allocs;
            m.bytes = bytes;
            if (HS_VEC_RESERVE(r->m, r->capm, r->nm + 1))
                continue;
            r->m[r->nm++] = m;
        } else if (strncmp(line, "fail ", 5) == 0) {
            r->failed = 1;
            set_str(r->error, sizeof r->error, line + 5);
        } else if (strncmp(line, "profile ", 8) == 0) {
            size_t len = strlen(r->profile);
            snprintf(r->profile + len, sizeof r->profile - len, "%s%s", len ? " " : "", line + 8);
        } else if (strcmp(line, "done") == 0) {
            *done = 1;
        }
    }
}

static const char *agent_path(const opts *o)
{
    if (o->agent)
        return o->agent;
    const char *env = getenv("HOTSPUR_LIB");
    if (env && *env)
        return env;
    if (*HS_BENCH_AGENT_INSTALLED && access(HS_BENCH_AGENT_INSTALLED, R_OK) == 0)
        return HS_BENCH_AGENT_INSTALLED;
    if (*HS_BENCH_AGENT_BUILD && access(HS_BENCH_AGENT_BUILD, R_OK) == 0)
        return HS_BENCH_AGENT_BUILD;
    return "libhotspur.so";
}

/* Run one fork of case `ci`; profile_path: the --profile fork. */
static void spawn_fork(const char *self, int ci, const opts *o, const char *profile_path, hs_bresult *r)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    char ci_s[16], fd_s[16], time_s[32], warm_s[16], it_s[16], pt_s[32];
    snprintf(ci_s, sizeof ci_s, "%d", ci);
    snprintf(fd_s, sizeof fd_s, "%d", fds[1]);
    snprintf(time_s, sizeof time_s, "%.9f", o->time_s);
    snprintf(pt_s, sizeof pt_s, "%.9f", o->profile_time_s);
    snprintf(warm_s, sizeof warm_s, "%d", o->warmup);
    snprintf(it_s, sizeof it_s, "%d", o->iterations);
    char *args[32];
    int na = 0;
    args[na++] = (char *)self;
    args[na++] = "--hs-worker";
    args[na++] = ci_s;
    args[na++] = "--hs-fd";
    args[na++] = fd_s;
    args[na++] = "--time";
    args[na++] = time_s;
    args[na++] = "--warmup";
    args[na++] = warm_s;
    args[na++] = "--iterations";
    args[na++] = it_s;
    if (profile_path) {
        args[na++] = "--profile";
        args[na++] = (char *)o->profile;
        args[na++] = "--profile-time";
        args[na++] = pt_s;
        args[na++] = "--hs-profile-path";
        args[na++] = (char *)profile_path;
    }
    args[na] = NULL;
    char preload[4096] = "";
    if (profile_path) {
        const char *old = getenv("LD_PRELOAD");
        snprintf(preload, sizeof preload, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", agent_path(o));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        int fl = fcntl(fds[1], F_GETFD);
        if (fl < 0 || fcntl(fds[1], F_SETFD, fl & ~FD_CLOEXEC) != 0)
            _exit(127);
        if (profile_path && (setenv("LD_PRELOAD", preload, 1) != 0 || setenv("HOTSPUR_DISABLE", "1", 1) != 0))
            _exit(127);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fds[1]);
    /* A watchdog: a fork that hangs is killed and its case fails. */
    double budget = 30.0 + 20.0 * o->time_s * (o->warmup + o->iterations + 10) +
                    (profile_path ? 20.0 * o->profile_time_s : 0);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int done = 0, timed_out = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = budget - ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9);
        if (left <= 0) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr <= 0)
            continue; /* EINTR or the deadline: checked above */
        if (HS_VEC_RESERVE(buf, cap, len + 4096))
            break;
        ssize_t got = read(fds[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* EOF: the fork is done (or dead) */
        len += (size_t)got;
    }
    close(fds[0]);
    if (!timed_out && buf) {
        FILE *in = fmemopen(buf, len, "r");
        if (in) {
            parse_fork_output(in, r, &done);
            fclose(in);
        }
    }
    free(buf);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "timed out after %.0f s", budget);
    } else if (WIFSIGNALED(status)) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "crashed: killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else if (!done && !r->failed) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "the fork exited with status %d before finishing",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

static void run_in_process(const hs_bcase *c, const opts *o, hs_bresult *r)
{
    FILE *tmp = tmpfile();
    if (!tmp) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "tmpfile: %s", strerror(errno));
        return;
    }
    int done = 0;
    if (run_fork(c, o, tmp) == 0) {
        rewind(tmp);
        parse_fork_output(tmp, r, &done);
    }
    fclose(tmp);
    if (!done && !r->failed) {
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "the measurement did not finish");
    }
}

double hs_bench_per_op(const hs_bresult *r, const hs_bmeas *m, int metric)
{
    double ops = (double)m->n * (double)r->c->threads;
    switch (metric) {
    case HS_M_NS:
        return m->ns / (double)m->n;
    case HS_M_CPU:
        return m->cpu_ns / ops;
    case HS_M_BYTES:
        return hs_alloc_active() ? (double)m->bytes / ops : -1;
    case HS_M_ALLOCS:
        return hs_alloc_active() ? (double)m->allocs / ops : -1;
    default:
        return m->hw[metric - HS_M_HW] < 0 ? -1 : m->hw[metric - HS_M_HW] / ops;
    }
}

static void summarize(hs_bresult *r, hs_brun_info *info)
{
    if (r->nm == 0)
        return;
    double *x = malloc(r->nm * sizeof *x);
    if (!x)
        return;
    for (int metric = 0; metric < HS_M_N; metric++) {
        int ok = 1;
        for (size_t i = 0; i < r->nm; i++) {
            x[i] = hs_bench_per_op(r, &r->m[i], metric);
            if (x[i] < 0)
                ok = 0;
        }
        r->ok[metric] = ok;
        if (!ok)
            continue;
        if (metric >= HS_M_HW)
            info->hw_any = 1;
        hs_bstat_summarize(x, r->nm, &r->s[metric]);
    }
    free(x);
    if (!r->c->def->optimized)
        add_warning(r->warnings, sizeof r->warnings,
                    "%s was compiled without optimization (no -O): the figures describe a debug build",
                    r->c->def->file);
    const hs_bstat_summary *ns = &r->s[HS_M_NS];
    if (r->nm >= 2 && ns->mean > 0) {
        double rel = (ns->ci_hi - ns->mean) / ns->mean;
        if (rel > 0.05)
            add_warning(r->warnings, sizeof r->warnings,
                        "unstable: the 99.9%% interval is +-%.1f%% of the mean (more --forks/--iterations, a "
                        "quieter machine)",
                        rel * 100);
    }
    if (ns->outliers)
        add_warning(r->warnings, sizeof r->warnings, "%zu of %zu measurements are outliers (Tukey's fences)",
                    ns->outliers, r->nm);
}

static void machine_info(hs_brun_info *info)
{
    cpu_set_t set;
    info->ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c += strspn(c + 1, " \t") + 1;
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(info->cpu_model, sizeof info->cpu_model, "%s", c);
                }
                break;
            }
        fclose(f);
    }
    glob_t g;
    if (glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            FILE *gf = fopen(g.gl_pathv[i], "r");
            if (!gf)
                continue;
            char gov[64] = "";
            if (fgets(gov, sizeof gov, gf)) {
                gov[strcspn(gov, "\n")] = '\0';
                if (!info->governor[0] || strcmp(gov, "performance") != 0)
                    snprintf(info->governor, sizeof info->governor, "%s", gov);
            }
            fclose(gf);
        }
        globfree(&g);
    }
    if (info->governor[0] && strcmp(info->governor, "performance") != 0)
        add_warning(info->warnings, sizeof info->warnings,
                    "the CPU frequency governor is '%s', not 'performance': the clock speed varies",
                    info->governor);
    f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &info->load1) != 1)
            info->load1 = 0;
        fclose(f);
    }
    if (info->load1 >= info->ncpu * 0.75)
        add_warning(info->warnings, sizeof info->warnings,
                    "load average %.2f on %d CPUs: other processes compete with the benchmarks", info->load1,
                    info->ncpu);
    hs_hwc h;
    if (hs_hwc_open(&h, info->hw_error, sizeof info->hw_error) == HS_HWC_N)
        info->hw_error[0] = '\0';
    hs_hwc_close(&h);
    if (!hs_alloc_active())
        add_warning(info->warnings, sizeof info->warnings,
                    "allocations are not seen (malloc is not interposed): B/op and allocs/op are unavailable");
}

static void sanitize_name(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++) {
        char ch = in[i];
        out[j++] = (ch == '/' || ch == ' ' || ch == '=' || ch == ':') ? (ch == '=' ? '-' : '_') : ch;
    }
    out[j] = '\0';
}

int main(int argc, char **argv)
{
    if (argc > 0 && strrchr(argv[0], '/')) /* messages name the program, not its path */
        argv[0] = strrchr(argv[0], '/') + 1;
    opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    hs_bcase *cases;
    char err[512];
    int nc = hs_bench_cases(&cases, err, sizeof err);
    if (nc < 0) {
        fprintf(stderr, "%s: %s\n", argv[0], err);
        return 2;
    }
    if (o.worker_case >= 0) { /* a fork */
        if (o.worker_case >= nc || o.worker_fd < 0)
            return 2;
        FILE *f = fdopen(o.worker_fd, "w");
        if (!f)
            return 1;
        int wrc = run_fork(&cases[o.worker_case], &o, f);
        if (fclose(f) != 0)
            wrc = -1;
        free(cases);
        /* The profile of the measured loop is written; end without the agent's
         * exit write (it writes at exit and at _exit too, so neither will do). */
        if (o.worker_profile_path)
            syscall(SYS_exit_group, wrc == 0 ? 0 : 1);
        return wrc == 0 ? 0 : 1;
    }
    regex_t re;
    if (o.filter && regcomp(&re, o.filter, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "%s: --filter: bad regular expression '%s'\n", argv[0], o.filter);
        free(cases);
        return 2;
    }
    hs_bresult *res = calloc((size_t)(nc ? nc : 1), sizeof *res);
    if (!res) {
        free(cases);
        return 1;
    }
    size_t nr = 0;
    for (int i = 0; i < nc; i++)
        if (!o.filter || regexec(&re, cases[i].name, 0, NULL, 0) == 0)
            res[nr++].c = &cases[i];
    if (o.filter)
        regfree(&re);
    if (o.list) {
        for (size_t i = 0; i < nr; i++)
            printf("%s\n", res[i].c->name);
        free(res);
        free(cases);
        return 0;
    }
    if (nr == 0)
        fprintf(stderr, "%s: no benchmark matches%s%s\n", argv[0], o.filter ? " " : "", o.filter ? o.filter : "");
    hs_brun_info info = {.program = argv[0], .time_s = o.time_s, .warmup = o.warmup, .iterations = o.iterations,
                         .forks = o.forks, .filter = o.filter};
    machine_info(&info);
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "%s: readlink /proc/self/exe: %s\n", argv[0], strerror(errno));
        return 1;
    }
    self[sl] = '\0';
    int tty = isatty(2), any_failed = 0;
    for (size_t i = 0; i < nr; i++) {
        hs_bresult *r = &res[i];
        int ci = (int)(r->c - cases);
        if (tty)
            fprintf(stderr, "# %s ...\n", r->c->name);
        if (o.forks == 0)
            run_in_process(r->c, &o, r);
        for (int k = 0; k < o.forks && !r->failed; k++)
            spawn_fork(self, ci, &o, NULL, r);
        if (o.profile && !r->failed) {
            char safe[512], path[2048];
            sanitize_name(r->c->name, safe, sizeof safe);
            snprintf(path, sizeof path, "%s.%s.%s.pb.gz", o.profile_out, safe, o.profile);
            spawn_fork(self, ci, &o, path, r);
        }
        if (r->failed) {
            any_failed = 1;
            fprintf(stderr, "%s: %s FAILED: %s\n", argv[0], r->c->name, r->error);
        }
        summarize(r, &info);
    }
    if (info.warnings[0])
        fprintf(stderr, "%s: warning: %s\n", argv[0], info.warnings);
    for (size_t i = 0; i < nr; i++)
        if (res[i].warnings[0])
            fprintf(stderr, "%s: warning: %s: %s\n", argv[0], res[i].c->name, res[i].warnings);
    int out_rc = 0;
    if (o.out) {
        FILE *f = fopen(o.out, "w");
        if (!f) {
            fprintf(stderr, "%s: %s: %s\n", argv[0], o.out, strerror(errno));
            out_rc = 1;
        } else {
            if (hs_bench_report(f, o.format, &info, res, nr) != 0)
                out_rc = 1;
            if (fclose(f) != 0)
                out_rc = 1;
            if (out_rc)
                fprintf(stderr, "%s: error writing %s\n", argv[0], o.out);
        }
        if (hs_bench_report(stdout, HS_BFMT_TABLE, &info, res, nr) != 0)
            out_rc = 1;
    } else if (hs_bench_report(stdout, o.format, &info, res, nr) != 0) {
        out_rc = 1;
    }
    if (fflush(stdout) != 0)
        out_rc = 1;
    for (size_t i = 0; i < nr; i++)
        free(res[i].m);
    free(res);
    free(cases);
    return any_failed || out_rc ? 1 : 0;
}
