/* cmd_record.c — `hotspur record`: run a command with the agent preloaded,
 * pass its stdio and exit status through, then list every profile the
 * command and (when followed) its children wrote, one summary line each,
 * and the leak report when asked for. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/units.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "base/vec.h"

static const char record_usage[] =
    "usage: hotspur record [--cpu] [--heap] [--wall] [--lock] [options] [-o FILE] [--] CMD [ARGS...]\n"
    "\n"
    "Run CMD with the hotspur agent (LD_PRELOAD) and write its profiles.\n"
    "CMD's stdin, stdout and stderr are passed through untouched and hotspur\n"
    "exits with CMD's exit status (128+N if CMD was killed by signal N).\n"
    "\n"
    "Profile types (default: --cpu):\n"
    "      --cpu              CPU time, sampled per thread\n"
    "      --heap             heap allocations: allocated and in use (plus the\n"
    "                         in-use profile at the peak, as a companion file)\n"
    "      --wall             wall-clock time of every thread, running or waiting\n"
    "      --lock             contended pthread mutex and rwlock waits\n"
    "Options:\n"
    "  -F, --frequency HZ     CPU samples per second of CPU time per thread\n"
    "                         (default 100, 1..10000)\n"
    "      --wall-hz HZ       wall-clock samples per second per thread (default\n"
    "                         100, 1..1000; implies --wall)\n"
    "      --heap-rate BYTES  mean bytes between heap samples (default 524288;\n"
    "                         1 records every allocation exactly)\n"
    "      --leaks            heap in exact mode; at exit, report the blocks no\n"
    "                         pointer reaches any more, by allocation stack, and\n"
    "                         write them as a profile\n"
    "      --no-follow        profile only CMD's process, not the processes it\n"
    "                         forks or execs\n"
    "      --wait SEC         when CMD ends, wait up to SEC seconds (default 2)\n"
    "                         for the profiled processes it left running (a\n"
    "                         daemon), to list their files too; those still\n"
    "                         running are named with the files they will write\n"
    "  -o, --output FILE      where to write (default hotspur.pb.gz); gzipped pprof\n"
    "  -h, --help             show this help\n"
    "Continuous mode (profiles go to a collector, `hotspur serve`, not to files):\n"
    "      --server URL       upload to http://HOST:PORT: every period, each type\n"
    "                         is collected for a window at a random point of the\n"
    "                         period and uploaded (HOTSPUR_SERVER)\n"
    "      --period D         one window per period D (default 60s; 500ms, 10s, 2m)\n"
    "      --duration D       each window's length (default 10s)\n"
    "      --service NAME     the service (default: the program's name)\n"
    "      --version V        the version uploads are tagged with\n"
    "      --labels K=V,...   labels uploads are tagged with\n"
    "                         The bearer token comes from HOTSPUR_TOKEN only (a\n"
    "                         flag would show in ps). Nothing is written to -o\n"
    "                         but what `hotspur ctl PID dump` asks for.\n"
    "\n"
    "Files: with one type its profile is FILE and companions get a suffix before\n"
    ".pb.gz (out.peak.pb.gz, out.leaks.pb.gz); with several, each file carries\n"
    "its type (out.cpu.pb.gz, out.wall.pb.gz, out.heap.peak.pb.gz, ...). Other\n"
    "processes (children) insert their pid: out.4242.pb.gz. Every file written\n"
    "is listed on stderr at the end; `hotspur merge` combines them.\n"
    "\n"
    "A process writes its profiles when it exits (exit, _exit, return from main),\n"
    "crashes, or is ended by SIGINT, SIGTERM or SIGHUP that it doesn't handle\n"
    "itself; an image replaced by exec writes its own (FILE.PID.execN); one\n"
    "killed by SIGKILL writes none. SIGTERM and SIGHUP sent to record are\n"
    "passed on to CMD. While it runs, `hotspur ctl PID dump` writes them on\n"
    "demand.\n"
    "Environment: HOTSPUR_LIB overrides the agent's path.\n"
    "\n"
    "Processes already running are profiled from outside instead, without\n"
    "LD_PRELOAD (-F, --duration and -o mean the same there):\n";

/* The agent: $HOTSPUR_LIB, else next to this binary (../lib). */
int hs_cli_find_agent(char *out, size_t outlen)
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

/* Before the program runs: can the profile be written where -o says?
 * (A missing directory used to show only after the whole run.) Says why
 * on stderr and returns 1 when it cannot. */
static int output_unwritable(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "hotspur record: cannot write %s: it is a directory (-o names a file)\n", path);
        return 1;
    }
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "hotspur record: cannot write %s: %s: %s\n", path, dir,
                errno == ENOENT ? "no such directory" : strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "hotspur record: cannot write %s: %s is not a directory\n", path, dir);
        return 1;
    }
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "hotspur record: cannot write %s: directory %s: %s\n", path, dir, strerror(errno));
        return 1;
    }
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
static void leak_report(FILE *out, const hs_profile *p, const char *path)
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
    fprintf(out, "hotspur: leaks: %lld blocks, %s, from %zu allocation stacks (%s)\n",
            (long long)total_value(p, 0), b, n, path);
    for (size_t i = 0; i < n; i++) {
        human_bytes(sites[i].bytes, b, sizeof b);
        fprintf(out, "  %s in %lld block%s allocated at\n", b, (long long)sites[i].objs,
                sites[i].objs == 1 ? "" : "s");
        const hs_sample *s = sites[i].s;
        for (size_t k = 0; k < s->n_locations && k < 12; k++)
            fprintf(out, "      %s\n", frame_name(p, s->location_ids[k]));
        if (s->n_locations > 12)
            fprintf(out, "      ... %zu more frames\n", s->n_locations - 12);
    }
    free(sites);
}

/* What a run records. */
typedef struct {
    int cpu, heap, wall, lock, leaks;
} record_types;

/* The files a run writes, in the order they are reported. */
static const struct {
    const char *type, *companion;
} record_files[] = {{"cpu", NULL},  {"wall", NULL},   {"lock", NULL},
                    {"heap", NULL}, {"heap", "peak"}, {"heap", "leaks"}};
#define N_RECORD_FILES (sizeof record_files / sizeof *record_files)

static int writes_file(size_t i, const record_types *t)
{
    const char *type = record_files[i].type, *comp = record_files[i].companion;
    if (strcmp(type, "heap") == 0)
        return t->heap && (!comp || strcmp(comp, "leaks") != 0 || t->leaks);
    return strcmp(type, "cpu") == 0 ? t->cpu : strcmp(type, "wall") == 0 ? t->wall : t->lock;
}

/* The name of record_files[i] for a process whose base name is `base`. */
static int record_file_name(size_t i, const char *base, const record_types *t, char *out, size_t outlen)
{
    int several = t->cpu + t->heap + t->wall + t->lock > 1;
    return hs_profile_file_name(base, record_files[i].type, several, record_files[i].companion, out, outlen);
}

/* path with ".<what>" inserted before ".pb.gz", as the agent inserts a
 * child's pid, an exec part (execN) or a dump's number. */
static int insert_part(const char *path, const char *what, char *out, size_t outlen)
{
    return hs_profile_file_name(path, what, 1, NULL, out, outlen);
}

/* A child's base name: the pid before ".pb.gz" (as the agent names it). */
static int child_base(const char *path, long pid, char *out, size_t outlen)
{
    char num[32];
    snprintf(num, sizeof num, "%ld", pid);
    return insert_part(path, num, out, outlen);
}

/* A file of the run: <stem>[.PID][.execK][.N]<type suffix>. The first
 * process's files have no pid; a process's ctl dumps, and then its exit
 * file, are numbered parts (N); an image replaced by exec wrote execK. */
typedef struct {
    long pid;  /* 0: the first process (for a single number: see find_files) */
    long exec; /* K of .execK, 0 if none */
    long part; /* N, 0 if none */
    char name[PATH_MAX];
    size_t file; /* index in record_files */
} found_file;

static int by_process(const void *a, const void *b)
{
    const found_file *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->exec != y->exec)
        return x->exec < y->exec ? -1 : 1;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    return x->file < y->file ? -1 : x->file > y->file;
}

/* A decimal number then '.' at *p: its value (> 0), *p moved past the
 * dot; else 0 and *p unchanged. */
static long number_part(const char **p)
{
    char *end;
    if (**p < '1' || **p > '9')
        return 0;
    long v = strtol(*p, &end, 10);
    if (*end != '.' || v <= 0)
        return 0;
    *p = end + 1;
    return v;
}

/* The child being recorded, for forward_signal (a signal handler can reach
 * nothing else). */
static volatile pid_t g_record_child;

static void forward_signal(int sig)
{
    int saved = errno;
    if (g_record_child > 0)
        kill(g_record_child, sig);
    errno = saved;
}

/* Every file of this run's naming in path's directory (see found_file),
 * in the order of processes. root is the first process's pid (0: not
 * known yet): a name with a single number N is ambiguous (the first
 * process's dump part N, or the unnumbered file of child N); it is taken
 * for a part of the first process when N is smaller than root (pids grow;
 * dump numbers start at 1). Returns how many (malloc'd in *out). */
static size_t find_files(const char *path, const record_types *t, long root, found_file **out)
{
    size_t n = 0, cap = 16;
    found_file *f = malloc(cap * sizeof *f);
    *out = f;
    if (!f)
        return 0;
    char dir[PATH_MAX], stem[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *file = slash ? slash + 1 : path;
    if (slash)
        *slash = 0;
    snprintf(stem, sizeof stem, "%s", file);
    size_t sl = strlen(stem);
    if (sl > 6 && strcmp(stem + sl - 6, ".pb.gz") == 0)
        stem[sl -= 6] = 0;
    DIR *d = opendir(slash ? dir : ".");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        /* (-o without ".pb.gz": the first process's file is the stem itself) */
        if (strncmp(de->d_name, stem, sl) != 0 || (de->d_name[sl] != '.' && de->d_name[sl] != 0))
            continue;
        const char *p = de->d_name + sl + (de->d_name[sl] != 0);
        long pid = number_part(&p), exec = 0, part;
        if (strncmp(p, "exec", 4) == 0) {
            const char *q = p + 4;
            if ((exec = number_part(&q)) > 0)
                p = q;
        }
        part = number_part(&p);
        /* The base name these parts give, then each file of the run on it. */
        char base[PATH_MAX], tmp[PATH_MAX], num[32];
        snprintf(base, sizeof base, "%s", path);
        const long parts[3] = {pid, exec, part};
        int ok = 1;
        for (int k = 0; k < 3 && ok; k++) {
            if (!parts[k])
                continue;
            snprintf(num, sizeof num, "%s%ld", k == 1 ? "exec" : "", parts[k]);
            ok = insert_part(base, num, tmp, sizeof tmp) == 0;
            snprintf(base, sizeof base, "%s", tmp);
        }
        if (!ok)
            continue;
        if (pid && !exec && !part && root > 0 && pid < root) { /* the first process's dump part */
            part = pid;
            pid = 0;
        }
        for (size_t i = 0; i < N_RECORD_FILES; i++) {
            char want[PATH_MAX];
            if (!writes_file(i, t) || record_file_name(i, base, t, want, sizeof want) != 0)
                continue;
            const char *w = strrchr(want, '/');
            if (strcmp(w ? w + 1 : want, de->d_name) != 0)
                continue;
            if (HS_VEC_RESERVE(f, cap, n + 1))
                break;
            *out = f;
            f[n] = (found_file){.pid = pid == root ? 0 : pid, .exec = exec, .part = part, .file = i};
            snprintf(f[n].name, sizeof f[n].name, "%s", want);
            n++;
        }
    }
    if (d)
        closedir(d);
    qsort(f, n, sizeof *f, by_process);
    return n;
}

/* Symbolize a profile the agent left unsymbolized, in place (with sym,
 * shared by the files of the run; a file with nothing to symbolize, as a
 * short process's without samples, is left as written); then one summary
 * line (and the leak report) on out. 1 if the file holds no sample (its
 * line says "0 samples" or the like), else 0. */
static int summarize(FILE *out, hs_symbolizer *sym, const char *path, size_t file)
{
    char err[256];
    hs_profile *p = hs_profile_read_file(path, err, sizeof err);
    if (!p) {
        fprintf(out, "hotspur: %s: %s\n", path, err);
        return 0;
    }
    int empty = p->n_samples == 0;
    snprintf(err, sizeof err, "out of memory");
    if (hs_symbolize_needed(p) &&
        (hs_symbolize_with_mappings(sym, p) != 0 || hs_profile_write_file(p, path, err, sizeof err) != 0))
        fprintf(out, "hotspur: %s: cannot symbolize: %s\n", path, err);
    const char *type = record_files[file].type, *comp = record_files[file].companion;
    char a[32], b[32];
    if (strcmp(type, "cpu") == 0) {
        fprintf(out, "hotspur: wrote %s (%lld samples, %.2f s CPU)\n", path,
                (long long)total_value(p, 0), (double)total_value(p, 1) / 1e9);
    } else if (strcmp(type, "wall") == 0) {
        fprintf(out, "hotspur: wrote %s (%lld samples, %.2f s of thread time)\n", path,
                (long long)total_value(p, 0), (double)total_value(p, 1) / 1e9);
    } else if (strcmp(type, "lock") == 0) {
        fprintf(out, "hotspur: wrote %s (%lld contentions, %.3f s waited)\n", path,
                (long long)total_value(p, 0), (double)total_value(p, 1) / 1e9);
    } else if (!comp) {
        human_bytes(total_value(p, 1), a, sizeof a);
        human_bytes(total_value(p, 3), b, sizeof b);
        fprintf(out, "hotspur: wrote %s (%s allocated in %lld objects, %s in use at exit)\n", path,
                a, (long long)total_value(p, 0), b);
    } else if (strcmp(comp, "peak") == 0) {
        human_bytes(total_value(p, 1), a, sizeof a);
        fprintf(out, "hotspur: wrote %s (%s in use at the peak)\n", path, a);
    } else {
        leak_report(out, p, path);
    }
    hs_profile_free(p);
    return empty;
}

/* Summarize files [0, n) in turn with one symbolizer; file i's text goes
 * to stderr, or framed to `to` (a worker's pipe to record; a file it could
 * not answer for is left to record). A file is taken by *next (shared by
 * the workers): returns when none is left. */
static void summarize_some(const found_file *files, size_t n, _Atomic size_t *next, FILE *to)
{
    hs_symbolizer *sym = hs_symbolizer_new();
    for (size_t i; sym && (i = atomic_fetch_add(next, 1)) < n;) {
        if (!to) {
            summarize(stderr, sym, files[i].name, files[i].file);
            continue;
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (!mem)
            continue; /* not answered: record does it */
        uint64_t empty = (uint64_t)summarize(mem, sym, files[i].name, files[i].file);
        if (fclose(mem) == 0) {
            uint64_t head[3] = {i, len, empty}; /* to record: index, length, empty, text */
            if (fwrite(head, sizeof head, 1, to) != 1 || fwrite(buf, 1, len, to) != len)
                _exit(1);
        }
        free(buf);
    }
    if (!sym && !to)
        fprintf(stderr, "hotspur: cannot start the symbolizer\n");
    hs_symbolizer_free(sym);
}

/* Read a worker's answers (see summarize_some) into texts (and empty)
 * until EOF. */
static void read_answers(FILE *from, size_t n, char **texts, unsigned char *empty)
{
    uint64_t head[3];
    while (fread(head, sizeof head, 1, from) == 1) {
        char *buf = head[0] < n && head[1] < (1u << 30) ? malloc(head[1] + 1) : NULL;
        if (!buf || fread(buf, 1, head[1], from) != head[1]) {
            free(buf);
            return;
        }
        buf[head[1]] = 0;
        free(texts[head[0]]);
        texts[head[0]] = buf;
        empty[head[0]] = head[2] != 0;
    }
}

/* Past this many files (a build: one per process), the files without a
 * sample are not listed one by one but counted on one line. */
#define RECORD_LIST_ALL 20

/* Symbolize and summarize every file, in parallel on the online CPUs (at
 * most 8 worker processes, each with its own symbolizer shared by the files
 * it takes), and print the summaries in the files' order (with more than
 * RECORD_LIST_ALL files, those of other processes without a sample as one
 * line). A file no worker answered for (one died) is done here. */
static void summarize_all(const found_file *files, size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t workers = cpus > 1 ? (size_t)cpus : 1;
    if (workers > 8)
        workers = 8;
    if (workers > n)
        workers = n;
    _Atomic size_t *next = workers > 1 ? mmap(NULL, sizeof *next, PROT_READ | PROT_WRITE,
                                              MAP_SHARED | MAP_ANONYMOUS, -1, 0)
                                       : MAP_FAILED;
    char **texts = calloc(n ? n : 1, sizeof *texts);
    unsigned char *empty = calloc(n ? n : 1, 1);
    if (next == MAP_FAILED || !texts || !empty) {
        _Atomic size_t i = 0;
        free(texts);
        free(empty);
        summarize_some(files, n, &i, NULL);
        if (next != MAP_FAILED)
            munmap((void *)next, sizeof *next);
        return;
    }
    atomic_store(next, 0);
    int fds[8];
    pid_t pids[8];
    size_t started = 0;
    fflush(NULL);
    for (; started < workers; started++) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) != 0)
            break;
        pid_t pid = fork();
        if (pid < 0) {
            close(pfd[0]);
            close(pfd[1]);
            break;
        }
        if (pid == 0) {
            for (size_t k = 0; k < started; k++)
                close(fds[k]);
            close(pfd[0]);
            FILE *to = fdopen(pfd[1], "w");
            if (!to)
                _exit(1);
            summarize_some(files, n, next, to);
            _exit(fclose(to) == 0 ? 0 : 1);
        }
        close(pfd[1]);
        fds[started] = pfd[0];
        pids[started] = pid;
    }
    for (size_t k = 0; k < started; k++) { /* in turn: a full pipe only waits for its turn */
        FILE *from = fdopen(fds[k], "r");
        if (from) {
            read_answers(from, n, texts, empty);
            fclose(from);
        } else {
            close(fds[k]);
        }
        while (waitpid(pids[k], NULL, 0) < 0 && errno == EINTR)
            ;
    }
    munmap((void *)next, sizeof *next);
    hs_symbolizer *sym = NULL;
    size_t n_empty = 0;
    const char *an_empty = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!texts[i] && (sym || (sym = hs_symbolizer_new()))) {
            size_t len = 0;
            FILE *mem = open_memstream(&texts[i], &len);
            if (!mem) {
                summarize(stderr, sym, files[i].name, files[i].file);
                continue;
            }
            empty[i] = (unsigned char)summarize(mem, sym, files[i].name, files[i].file);
            if (fclose(mem) != 0) {
                free(texts[i]);
                texts[i] = NULL;
            }
        }
        if (texts[i] && empty[i] && n > RECORD_LIST_ALL && files[i].pid != 0) { /* (the command's own: listed) */
            n_empty++;
            an_empty = an_empty ? an_empty : files[i].name;
        } else if (texts[i]) {
            fputs(texts[i], stderr);
        }
        free(texts[i]);
    }
    if (n_empty)
        fprintf(stderr, "hotspur: and %zu more files without a sample (processes that ended before their first "
                        "sample), such as %s\n",
                n_empty, an_empty);
    hs_symbolizer_free(sym);
    free(texts);
    free(empty);
}

/* Whether process pid runs with HOTSPUR_ROOT_PID=root in its environment
 * (a process of this run, profiling itself) and has not ended. */
static int of_this_run(long pid, pid_t root)
{
    char path[64], want[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parens */
    if (!paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
        return 0; /* gone (a zombie has written its files) */
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    int wl = snprintf(want, sizeof want, "HOTSPUR_ROOT_PID=%d", (int)root);
    if (!(f = fopen(path, "re")))
        return 0; /* not ours to read: another user's */
    int found = 0, at_start = 1, c;
    size_t k = 0;
    while (!found && (c = getc(f)) != EOF) { /* NUL-separated NAME=VALUE entries */
        if (c == 0) {
            found = at_start && k == (size_t)wl;
            at_start = 1;
            k = 0;
        } else if (at_start && k < (size_t)wl && c == want[k]) {
            k++;
        } else {
            at_start = 0;
        }
    }
    fclose(f);
    return found;
}

/* The processes of this run still running (a daemon that double-forked, a
 * worker its parent left behind): up to max pids in out; how many. */
static size_t still_running(pid_t root, long *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && n < max && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (pid > 0 && !*end && pid != (long)getpid() && of_this_run(pid, root))
            out[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* After CMD ended: wait up to wait_ms for the processes of the run it left
 * running, so that the files they write as they end are listed too; name
 * where the others will write theirs, for `hotspur symbolize` then. */
static void wait_for_stragglers(pid_t root, const char *path, const record_types *t, long wait_ms)
{
    long pids[64];
    size_t n = still_running(root, pids, 64);
    for (long waited = 0; n > 0 && waited < wait_ms; waited += 50) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (of_this_run(pids[i], root))
                pids[k++] = pids[i];
        n = k;
    }
    for (size_t i = 0; i < n; i++) {
        char base[PATH_MAX], names[2 * PATH_MAX] = "", name[PATH_MAX], comm[64] = "?";
        char cpath[64];
        snprintf(cpath, sizeof cpath, "/proc/%ld/comm", pids[i]);
        FILE *f = fopen(cpath, "re");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = 0;
            fclose(f);
        }
        if (child_base(path, pids[i], base, sizeof base) != 0)
            continue;
        for (size_t k = 0; k < N_RECORD_FILES; k++) {
            if (record_files[k].companion || !writes_file(k, t) || record_file_name(k, base, t, name, sizeof name) != 0)
                continue;
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", name);
        }
        fprintf(stderr, "hotspur: process %ld (%s) of this run is still running: it writes %s when it ends "
                        "(then name its frames with `hotspur symbolize FILE`)\n", pids[i], comm, names);
    }
}

/* cmd as execvp finds it, into out; -1 if not found. */
static int resolve_command(const char *cmd, char *out, size_t outlen)
{
    if (strchr(cmd, '/'))
        return snprintf(out, outlen, "%s", cmd) < (int)outlen ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        if ((size_t)snprintf(out, outlen, "%.*s/%s", (int)len, len ? p : ".", cmd) < outlen &&
            access(out, X_OK) == 0)
            return 0;
        p += len + (p[len] == ':');
    }
    return -1;
}

/* Why the agent can't run in program file `prog` (NULL if it can): the
 * dynamic loader ignores LD_PRELOAD for a set-user-ID or set-group-ID
 * program, and a static program has no dynamic loader. A script is judged
 * by its interpreter. */
static const char *agent_cannot_load(const char *prog, int depth)
{
    struct stat st;
    int fd = open(prog, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if ((st.st_mode & S_ISUID && st.st_uid != geteuid()) || (st.st_mode & S_ISGID && st.st_gid != getegid())) {
        close(fd);
        return "is set-user-ID or set-group-ID: the dynamic loader ignores LD_PRELOAD for it";
    }
    unsigned char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    close(fd);
    if (n >= 2 && buf[0] == '#' && buf[1] == '!' && depth == 0) { /* #!/path/interp [arg] */
        char interp[PATH_MAX];
        size_t i = 2, k = 0;
        while (i < (size_t)n && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        while (i < (size_t)n && k + 1 < sizeof interp && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n')
            interp[k++] = (char)buf[i++];
        interp[k] = 0;
        return k ? agent_cannot_load(interp, 1) : NULL;
    }
    if (n < (ssize_t)sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0 || buf[EI_CLASS] != ELFCLASS64)
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > (uint64_t)n)
        return NULL; /* program headers beyond the first page: don't guess */
    for (int i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, buf + eh->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_INTERP)
            return NULL;
    }
    return "is statically linked: it has no dynamic loader to load the agent (LD_PRELOAD)";
}

/* Parse a rate option's value into *out within [lo, hi]; 0 or 2 (usage). */
/* A decimal in [lo, hi] into *out: 0, or -1 with "bad OPT 'ARG' (want LO..HI)" in err. */
static int parse_number(const char *opt, const char *arg, long long lo, long long hi, long long *out,
                        char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || *end || end == arg || v < lo || v > hi) {
        snprintf(err, errlen, "bad %s '%s' (want %lld..%lld)", opt, arg, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Continuous mode's settings (NULL: not given). */
typedef struct {
    const char *server, *period, *duration, *service, *version, *labels;
} record_upload;

static void set_if(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
}

/* The child: set the agent's environment and exec CMD. */
static void run_child(char **cmd, const char *agent, const char *path, long long hz, long long wall_hz,
                      long long heap_rate, const record_types *t, int follow, const record_upload *up)
{
    char preload[2 * PATH_MAX + 2], buf[32];
    const char *prev = getenv("LD_PRELOAD");
    if (prev && *prev)
        snprintf(preload, sizeof preload, "%s:%s", prev, agent);
    else
        snprintf(preload, sizeof preload, "%s", agent);
    setenv("LD_PRELOAD", preload, 1);
    setenv("HOTSPUR_OUTPUT", path, 1);
    snprintf(buf, sizeof buf, "%d", (int)getpid());
    setenv("HOTSPUR_ROOT_PID", buf, 1);
    snprintf(buf, sizeof buf, "%lld", hz);
    setenv("HOTSPUR_CPU_HZ", buf, 1);
    snprintf(buf, sizeof buf, "%lld", t->wall ? wall_hz : 0);
    setenv("HOTSPUR_WALL_HZ", buf, 1);
    snprintf(buf, sizeof buf, "%lld", heap_rate);
    setenv("HOTSPUR_HEAP_RATE", buf, 1);
    setenv("HOTSPUR_CPU", t->cpu ? "1" : "0", 1);
    setenv("HOTSPUR_HEAP", t->heap ? "1" : "0", 1);
    setenv("HOTSPUR_LEAKS", t->leaks ? "1" : "0", 1);
    setenv("HOTSPUR_LOCK", t->lock ? "1" : "0", 1);
    setenv("HOTSPUR_FOLLOW", follow ? "1" : "0", 1);
    setenv("HOTSPUR_DEFER_SYMBOLS", "1", 1); /* symbolized below, not in CMD */
    if (up->server) {
        setenv("HOTSPUR_SERVER", up->server, 1);
        set_if("HOTSPUR_PERIOD", up->period);
        set_if("HOTSPUR_DURATION", up->duration);
        set_if("HOTSPUR_SERVICE", up->service);
        set_if("HOTSPUR_VERSION", up->version);
        set_if("HOTSPUR_LABELS", up->labels);
    }
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "hotspur record: cannot run %s: %s\n", cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

enum { OPT_FREQUENCY = HS_CLI_EXTRA, OPT_DURATION, /* both modes */
       OPT_CPU, OPT_HEAP, OPT_HEAP_RATE, OPT_LEAKS, OPT_WALL, OPT_WALL_HZ, OPT_LOCK, OPT_NO_FOLLOW,
       OPT_SERVER, OPT_PERIOD, OPT_SERVICE, OPT_VERSION, OPT_LABELS, OPT_WAIT, /* running CMD */
       OPT_PID, OPT_ALL, OPT_STACK, OPT_OFF_CPU, OPT_PER_PROCESS /* -p/-a (cmd_record_live.c) */ };

/* Both modes' options: record CMD, and record -p/-a (running processes). */
static const hs_cli_extra record_extras[] = {
    {"frequency", required_argument, OPT_FREQUENCY}, /* -F, -p and -a: short_names "Fpa" */
    {"pid", required_argument, OPT_PID},
    {"all-cpus", no_argument, OPT_ALL},
    {"duration", required_argument, OPT_DURATION},
    {"cpu", no_argument, OPT_CPU},
    {"heap", no_argument, OPT_HEAP},
    {"heap-rate", required_argument, OPT_HEAP_RATE},
    {"leaks", no_argument, OPT_LEAKS},
    {"wall", no_argument, OPT_WALL},
    {"wall-hz", required_argument, OPT_WALL_HZ},
    {"lock", no_argument, OPT_LOCK},
    {"no-follow", no_argument, OPT_NO_FOLLOW},
    {"server", required_argument, OPT_SERVER},
    {"period", required_argument, OPT_PERIOD},
    {"service", required_argument, OPT_SERVICE},
    {"version", required_argument, OPT_VERSION},
    {"labels", required_argument, OPT_LABELS},
    {"wait", required_argument, OPT_WAIT},
    {"stack-size", required_argument, OPT_STACK},
    {"off-cpu", no_argument, OPT_OFF_CPU},
    {"per-process", no_argument, OPT_PER_PROCESS},
    {NULL, 0, 0},
};

/* What the options set. */
typedef struct {
    long long hz, wall_hz, heap_rate, wait_s;
    record_types t;
    record_upload up;
    int rate_given, follow;
    hs_live_options live; /* -p/-a: pids, all, duration, stack_bytes, off_cpu */
    int pids[256], per_process;
    int cmd_only, live_only; /* the first option of one mode only given (its code), or 0 */
} record_args;

/* -p PID[,PID...] (repeatable) into a->pids: 0, or -1. */
static int add_pids(record_args *a, const char *arg, char *err, size_t errlen)
{
    for (const char *s = arg;;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > INT_MAX || (*end && *end != ',') || a->live.n_pids == 256) {
            snprintf(err, errlen, "bad pid list '%s'", arg);
            return -1;
        }
        a->pids[a->live.n_pids++] = (int)v;
        if (!*end)
            return 0;
        s = end + 1;
    }
}

static int record_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                        size_t errlen)
{
    record_args *a = ctx;
    (void)o;
    if (code >= OPT_CPU && code <= OPT_WAIT && !a->cmd_only)
        a->cmd_only = code;
    if (code >= OPT_STACK && !a->live_only)
        a->live_only = code;
    switch (code) {
    case OPT_FREQUENCY: return parse_number("frequency", arg, 1, 10000, &a->hz, err, errlen);
    case OPT_CPU: a->t.cpu = 1; break;
    case OPT_HEAP: a->t.heap = 1; break;
    case OPT_LEAKS: a->t.leaks = a->t.heap = 1; break;
    case OPT_HEAP_RATE:
        a->rate_given = a->t.heap = 1;
        return parse_number("heap rate", arg, 1, 1LL << 40, &a->heap_rate, err, errlen);
    case OPT_WALL: a->t.wall = 1; break;
    case OPT_WALL_HZ:
        a->t.wall = 1;
        return parse_number("wall-clock rate", arg, 1, 1000, &a->wall_hz, err, errlen);
    case OPT_LOCK: a->t.lock = 1; break;
    case OPT_NO_FOLLOW: a->follow = 0; break;
    case OPT_WAIT: return parse_number("wait", arg, 0, 3600, &a->wait_s, err, errlen);
    case OPT_SERVER: a->up.server = arg; break;
    case OPT_PERIOD:
    case OPT_DURATION: {
        double secs;
        if (hs_cli_parse_seconds(arg, &secs) < 0) {
            snprintf(err, errlen, "bad --%s '%s' (want " HS_DURATION_HINT ")",
                     code == OPT_PERIOD ? "period" : "duration", arg);
            return -1;
        }
        *(code == OPT_PERIOD ? &a->up.period : &a->up.duration) = arg;
        if (code == OPT_DURATION)
            a->live.duration = secs; /* -p/-a: stop after it */
        break;
    }
    case OPT_SERVICE: a->up.service = arg; break;
    case OPT_VERSION: a->up.version = arg; break;
    case OPT_LABELS: a->up.labels = arg; break;
    case OPT_PID: return add_pids(a, arg, err, errlen);
    case OPT_ALL: a->live.all = 1; break;
    case OPT_STACK: {
        long long v;
        if (parse_number("stack size", arg, 512, 65528, &v, err, errlen) < 0)
            return -1;
        a->live.stack_bytes = (int)v;
        break;
    }
    case OPT_OFF_CPU: a->live.off_cpu = 1; break;
    case OPT_PER_PROCESS: a->per_process = 1; break;
    }
    return 0;
}

/* The long name of one of record_extras' codes. */
static const char *option_name(int code)
{
    for (const hs_cli_extra *e = record_extras; e->name; e++)
        if (e->code == code)
            return e->name;
    return "?";
}

static void record_help(FILE *out)
{
    fputs(record_usage, out);
    fputc('\n', out);
    hs_record_live_usage(out);
}

/* record -p/-a: profile running processes (cmd_record_live.c). */
static int record_running(record_args *a, int argc, char **argv, int cmd_at, const char *out)
{
    if (cmd_at < argc) {
        fprintf(stderr, "hotspur record: -p/-a take no command (got '%s')\n", argv[cmd_at]);
        return 2;
    }
    if (a->cmd_only) {
        fprintf(stderr, "hotspur record: --%s is for a command run under the agent, not -p/-a "
                        "(see hotspur record --help)\n", option_name(a->cmd_only));
        return 2;
    }
    a->live.hz = (int)a->hz;
    a->live.pids = a->pids;
    return hs_record_live(&a->live, a->per_process, out);
}

int hs_cmd_record(int argc, char **argv)
{
    /* in_order: the options end where CMD begins (record -F 99 ./prog -F 3) */
    static const hs_cli_spec spec = {
        .name = "record", .usage = record_help, .takes = HS_CLI_OUTPUT, .extras = record_extras,
        .short_names = "Fpa", .extra = record_extra, .in_order = true,
        .max_args = -1};
    record_args a = {.hz = 100, .wall_hz = 100, .heap_rate = 524288, .wait_s = 2, .follow = 1};
    const char *out = "hotspur.pb.gz";
    int cmd_at = 0;
    int prc = hs_cli_parse(&spec, argc, argv, NULL, &a, &out, &cmd_at);
    if (prc >= 0)
        return prc;
    if (a.live.n_pids || a.live.all)
        return record_running(&a, argc, argv, cmd_at, out);
    if (a.live_only) {
        fprintf(stderr, "hotspur record: --%s is for running processes, with -p PID or -a "
                        "(see hotspur record --help)\n", option_name(a.live_only));
        return 2;
    }
    if (cmd_at >= argc) {
        fprintf(stderr, "hotspur record: no command given; try 'hotspur record --help'\n");
        return 2;
    }
    long long hz = a.hz, wall_hz = a.wall_hz, heap_rate = a.heap_rate, wait_s = a.wait_s;
    record_types t = a.t;
    record_upload up = a.up;
    int rate_given = a.rate_given, follow = a.follow;
    if (t.leaks && rate_given && heap_rate != 1) {
        fprintf(stderr, "hotspur record: --leaks records every allocation; it can't go with "
                        "--heap-rate %lld\n", heap_rate);
        return 2;
    }
    if (t.leaks)
        heap_rate = 1;
    if (!up.server && (up.period || up.duration || up.service || up.version || up.labels)) {
        fprintf(stderr, "hotspur record: --period, --duration, --service, --version and --labels go "
                        "with --server URL\n");
        return 2;
    }
    if (up.server && strncmp(up.server, "http://", 7) != 0) {
        fprintf(stderr, "hotspur record: --server wants http://HOST:PORT, not '%s'\n", up.server);
        return 2;
    }
    if (up.server && t.leaks) {
        fprintf(stderr, "hotspur record: --leaks writes a file at exit; it can't go with --server\n");
        return 2;
    }
    if (!t.cpu && !t.heap && !t.wall && !t.lock)
        t.cpu = 1;
    char agent[PATH_MAX], path[PATH_MAX];
    if (hs_cli_find_agent(agent, sizeof agent) != 0) {
        fprintf(stderr, "hotspur record: cannot find libhotspur.so (set HOTSPUR_LIB)\n");
        return 2;
    }
    if (absolute_path(out, path, sizeof path) != 0) {
        fprintf(stderr, "hotspur record: output path too long\n");
        return 2;
    }
    if (!up.server && output_unwritable(path))
        return 2;
    /* No stale file of an earlier run may pass for new. */
    found_file *old;
    size_t n_old = find_files(path, &t, 0, &old);
    for (size_t i = 0; i < n_old; i++) {
        if (unlink(old[i].name) != 0 && errno != ENOENT) {
            fprintf(stderr, "hotspur record: cannot replace %s: %s\n", old[i].name, strerror(errno));
            free(old);
            return 2;
        }
    }
    free(old);

    /* Like a shell running a foreground job: let the child get ^C and ^\ and
     * stay alive to report. SIGTERM and SIGHUP sent to record itself (a
     * service manager stopping it) are passed on to the child, and record
     * waits for it just the same. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit, old_term, old_hup;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    struct sigaction fwd = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
    sigemptyset(&fwd.sa_mask);
    g_record_child = 0;
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hotspur record: fork: %s\n", strerror(errno));
        return 1;
    }
    g_record_child = pid;
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        run_child(argv + cmd_at, agent, path, hz, wall_hz, heap_rate, &t, follow, &up);
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
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    /* A command that could not be run (127/126) wrote nothing: say nothing. */
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126))
        return code;
    if (up.server)
        return code; /* the agent reported its uploads */
    if (follow)
        wait_for_stragglers(pid, path, &t, (long)wait_s * 1000);
    found_file *files;
    size_t n = find_files(path, &t, (long)pid, &files);
    int first = 0;
    for (size_t i = 0; i < n; i++)
        first += files[i].pid == 0;
    char prog[PATH_MAX];
    const char *why = resolve_command(argv[cmd_at], prog, sizeof prog) == 0 ? agent_cannot_load(prog, 0) : NULL;
    if (!first && why)
        fprintf(stderr, "hotspur: no profile of %s: it %s, so the agent never ran in it%s\n", argv[cmd_at], why,
                n ? " (the programs it ran did profile themselves)" : "");
    else if (!first)
        fprintf(stderr, "hotspur: no profile written to %s (the program was killed by SIGKILL or by a "
                        "signal it handles, or it cleared LD_PRELOAD)\n", path);
    summarize_all(files, n);
    free(files);
    return code;
}
