/* agent.c — the agent's life cycle: start sampling when the library is
 * loaded (or hotspur_start() asks), write the profiles on demand, at
 * window ends, before exec and when the process exits (exit() or return
 * from main), and give fork children a clean agent. The state, clocks,
 * configuration and threads every module uses are core.c's.
 */
#define _GNU_SOURCE
#include "agent/agent.h"
#include "agent/attach.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/control.h"
#include "agent/heap.h"
#include "agent/labels.h"
#include "agent/modules.h"
#include "agent/output.h"
#include "agent/sampler.h"
#include "agent/symlib.h"
#include "agent/upload.h"
#include "agent/wall.h"
#include "base/units.h"
#include "profile/profile.h"

/* ---- file names ---- */

/* Put ".<what>" before a trailing ".pb.gz" of name (else at its end). */
static int insert_part(char *name, size_t len, const char *what)
{
    char tmp[PATH_MAX];
    return hs_profile_file_name(name, what, 1, NULL, tmp, sizeof tmp) != 0 ||
                   snprintf(name, len, "%s", tmp) >= (int)len
               ? -1
               : 0;
}

/* Expand the template for dump `seq` (0: not a numbered dump): %p pid,
 * %t start time, %n seq, %% percent. With `automatic` (the configured
 * template, not one the caller chose) a follower's pid and a dump's number
 * are inserted when the template doesn't place them. */
static int expand_template(const char *tmpl, int seq, int automatic, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *p = tmpl; *p; p++) {
        char buf[32];
        const char *ins = NULL;
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 't' || p[1] == 'n' || p[1] == '%')) {
            p++;
            if (*p == 'p')
                snprintf(buf, sizeof buf, "%d", (int)getpid());
            else if (*p == 't')
                snprintf(buf, sizeof buf, "%lld", (long long)(hs_g.start_wall_ns / 1000000000LL));
            else if (*p == 'n')
                snprintf(buf, sizeof buf, "%d", seq);
            else
                snprintf(buf, sizeof buf, "%%");
            ins = buf;
        }
        size_t k = ins ? strlen(ins) : 1;
        if (o + k + 1 > outlen)
            return -1;
        memcpy(out + o, ins ? ins : p, k);
        o += k;
    }
    out[o] = 0;
    char num[32];
    if (!automatic)
        return 0;
    if (!hs_g.root && !strstr(tmpl, "%p")) {
        snprintf(num, sizeof num, "%d", (int)getpid());
        if (insert_part(out, outlen, num) != 0)
            return -1;
    }
    if (seq > 0 && !strstr(tmpl, "%n")) {
        snprintf(num, sizeof num, "%d", seq);
        if (insert_part(out, outlen, num) != 0)
            return -1;
    }
    return 0;
}

/* ---- dumps ---- */

static pthread_mutex_t g_dump_lock = PTHREAD_MUTEX_INITIALIZER;

static int n_types(void)
{
    return hs_g.cfg.cpu + hs_g.cfg.heap + (hs_g.cfg.wall_hz > 0) + hs_g.cfg.lock;
}

/* Write one file of the dump; 1 written, -1 failed. */
static int write_one(const char *base, const char *type, const char *companion, int kind,
                     void (*on_file)(const char *, void *), void *arg)
{
    char path[PATH_MAX];
    if (hs_profile_file_name(base, type, n_types() > 1, companion, path, sizeof path) != 0) {
        fprintf(stderr, "hotspur: output name too long: %s\n", base);
        return -1;
    }
    int rc;
    switch (kind) {
    case 0: rc = hs_output_write_cpu(path, 1); break;
    case 1: rc = hs_output_write_wall(path, 1); break;
    case 2: rc = hs_output_write_lock(path, 1); break;
    case 3: rc = hs_output_write_heap(path, HS_HEAP_ALL, 1); break;
    case 4: rc = hs_output_write_heap(path, HS_HEAP_PEAK, 0); break;
    default: rc = hs_output_write_heap(path, HS_HEAP_LEAKS, 0); break;
    }
    if (rc != 0)
        return -1;
    if (on_file)
        on_file(path, arg);
    return 1;
}

/* Write every enabled profile as dump number seq (0: unnumbered). */
static int write_base(const char *base, int leaks, void (*on_file)(const char *, void *), void *arg);
static int write_all(const char *tmpl, int seq, int leaks, void (*on_file)(const char *, void *), void *arg)
{
    char base[PATH_MAX];
    if (expand_template(tmpl ? tmpl : hs_g.cfg.output, seq, tmpl == NULL, base, sizeof base) != 0) {
        fprintf(stderr, "hotspur: output name too long: %s\n", tmpl ? tmpl : hs_g.cfg.output);
        return -1;
    }
    return write_base(base, leaks, on_file, arg);
}

/* Write every enabled profile under the expanded name base. */
static int write_base(const char *base, int leaks, void (*on_file)(const char *, void *), void *arg)
{
    int n = 0, failed = 0, r;
    /* Every file of the dump ends where the dump began: the time spent
     * writing the first ones (symbolized here: seconds on a loaded
     * machine) is not in the later ones' windows. */
    hs_g.write_end_ns = hs_now_ns(CLOCK_REALTIME);
#define ONE(cond, type, comp, kind)                                   \
    if (cond) {                                                      \
        r = write_one(base, type, comp, kind, on_file, arg);         \
        if (r < 0)                                                   \
            failed = 1;                                              \
        else                                                         \
            n += r;                                                  \
    }
    ONE(hs_g.cfg.cpu, "cpu", NULL, 0)
    ONE(hs_g.cfg.wall_hz > 0, "wall", NULL, 1)
    ONE(hs_g.cfg.lock, "lock", NULL, 2)
    ONE(hs_g.cfg.heap, "heap", NULL, 3)
    ONE(hs_g.cfg.heap, "heap", "peak", 4)
    uint64_t bytes;
    ONE(leaks && hs_heap_scan_leaks(&bytes) >= 0, "heap", "leaks", 5)
#undef ONE
    hs_g.window_wall_ns = hs_now_ns(CLOCK_REALTIME);
    hs_g.write_end_ns = 0;
    return failed ? -1 : n;
}

/* hs_agent_dump with the dump lock held. */
static int dump_locked(const char *tmpl, void (*on_file)(const char *path, void *arg), void *arg)
{
    /* Numbered: dumps to the configured name; a name the caller chose is
     * used as it is. If that is the name the exit write would use, the exit
     * write gets a number instead of overwriting it. */
    int seq = ++hs_g.dumps;
    if (tmpl) {
        char a[PATH_MAX], b[PATH_MAX];
        if (expand_template(tmpl, seq, 0, a, sizeof a) == 0 &&
            expand_template(hs_g.cfg.output, 0, 1, b, sizeof b) == 0 && strcmp(a, b) == 0)
            hs_g.exit_numbered = true;
    } else {
        hs_g.exit_numbered = true; /* the configured name is numbered now */
    }
    return write_all(tmpl, seq, 0, on_file, arg);
}

int hs_agent_dump(const char *tmpl, void (*on_file)(const char *path, void *arg), void *arg)
{
    if (!hs_g.started) {
        errno = ESRCH;
        return -1;
    }
    hs_self.in_agent++;
    pthread_mutex_lock(&g_dump_lock);
    int n = dump_locked(tmpl, on_file, arg);
    pthread_mutex_unlock(&g_dump_lock);
    hs_self.in_agent--;
    return n;
}

/* Encode every enabled type for fn (the dump lock held). */
static int collect_locked(void (*fn)(const char *, void *, size_t, int64_t, int64_t, void *), void *arg)
{
    static const char *const types[] = {"cpu", "wall", "lock", "heap"};
    const int on[] = {hs_g.cfg.cpu, hs_g.cfg.wall_hz > 0, hs_g.cfg.lock, hs_g.cfg.heap};
    int n = 0;
    int64_t end = hs_now_ns(CLOCK_REALTIME); /* one window end for every type */
    hs_encoded e[4];
    size_t samples = 0;
    for (int i = 0; i < 4; i++) {
        e[i].data = NULL;
        if (on[i] && hs_output_encode(types[i], end, &e[i]) != 0)
            e[i].data = NULL;
        samples += e[i].data ? e[i].n_samples : 0;
    }
    /* A window in which no type has a sample is not uploaded: a process
     * with nothing to report (a wrapper such as timeout, an idle helper)
     * would count as a profile and halve the service's average (issue 28).
     * Otherwise every type goes, empty ones too (a window is complete). */
    for (int i = 0; i < 4; i++) {
        if (!e[i].data)
            continue;
        if (samples == 0 && fn == hs_upload_queue) {
            free(e[i].data);
            continue;
        }
        fn(types[i], e[i].data, e[i].len, e[i].start_ns, e[i].duration_ns, arg);
        n++;
    }
    hs_output_release();
    hs_g.window_wall_ns = hs_now_ns(CLOCK_REALTIME);
    return n;
}

void hs_agent_window_end(void)
{
    hs_self.in_agent++;
    pthread_mutex_lock(&g_dump_lock);
    if (hs_g.started && hs_control_window_close()) {
        if (hs_g.cfg.continuous)
            collect_locked(hs_upload_queue, NULL);
        else
            dump_locked(NULL, NULL, NULL);
    }
    pthread_mutex_unlock(&g_dump_lock);
    hs_self.in_agent--;
}

static void relocate_in(hs_stacktab *t, uint64_t lo, uint64_t hi, uint64_t to)
{
    uint32_t n = atomic_load(&t->n_used);
    for (uint32_t i = 0; i < n; i++) {
        hs_stack_entry *e = hs_stacktab_nth(t, i);
        if (!e)
            continue;
        uint64_t *f = (uint64_t *)hs_stacktab_frames(t, e);
        for (uint32_t d = 0; d < e->depth; d++)
            if (f[d] >= lo && f[d] < hi)
                f[d] = to + (f[d] - lo);
    }
}

void hs_agent_relocate_frames(uint64_t lo, uint64_t hi, uint64_t to)
{
    if (!hs_g.started)
        return;
    if (hs_g.cfg.cpu)
        relocate_in(&hs_g.cpu, lo, hi, to);
    if (hs_g.cfg.wall_hz > 0)
        relocate_in(&hs_g.wall, lo, hi, to);
    if (hs_g.cfg.lock)
        relocate_in(&hs_g.lock, lo, hi, to);
    if (hs_g.cfg.heap)
        relocate_in(hs_heap_table(), lo, hi, to);
}

void hs_agent_mark(void)
{
    pthread_mutex_lock(&g_dump_lock);
    if (hs_g.cfg.cpu)
        hs_stacktab_mark(&hs_g.cpu);
    if (hs_g.cfg.wall_hz > 0) {
        hs_stacktab_mark(&hs_g.wall);
        hs_wall_mark(); /* the threads' time before it is not the window's */
    }
    if (hs_g.cfg.lock)
        hs_stacktab_mark(&hs_g.lock);
    if (hs_g.cfg.heap)
        hs_stacktab_mark(hs_heap_table());
    hs_g.window_wall_ns = hs_now_ns(CLOCK_REALTIME);
    pthread_mutex_unlock(&g_dump_lock);
}

void hs_agent_populate_tables(void)
{
    if (!hs_g.started)
        return;
    if (hs_g.cfg.cpu)
        hs_stacktab_populate(&hs_g.cpu);
    if (hs_g.cfg.wall_hz > 0)
        hs_stacktab_populate(&hs_g.wall);
}

void hs_agent_pause(void)
{
    atomic_store(&hs_g.cpu_on, 0);
    atomic_store(&hs_g.wall_on, 0);
    atomic_store(&hs_g.lock_on, 0);
    if (hs_g.cfg.heap)
        hs_heap_stop();
}

void hs_agent_resume(void)
{
    atomic_store(&hs_g.cpu_on, hs_g.cfg.cpu);
    atomic_store(&hs_g.wall_on, hs_g.cfg.wall_hz > 0);
    atomic_store(&hs_g.lock_on, hs_g.cfg.lock);
    if (hs_g.cfg.heap)
        hs_heap_resume();
}

static void print_stats(void)
{
    uint64_t calls = atomic_load(&hs_g.handler_calls), ns = atomic_load(&hs_g.handler_ns);
    fprintf(stderr, "hotspur: %llu samples, %.0f ns per sample in the handler\n",
            (unsigned long long)calls, calls ? (double)ns / (double)calls : 0.0);
    if (hs_g.cfg.heap && hs_heap_untracked())
        fprintf(stderr, "hotspur: %llu allocations could not be followed (raise HOTSPUR_HEAP_MAX_LIVE)\n",
                (unsigned long long)hs_heap_untracked());
}

void hs_agent_final_write(void)
{
    if (!hs_g.started || hs_g.pid != getpid())
        return;
    hs_self.in_agent++;
    hs_control_stop();
    hs_sampler_stop();
    hs_agent_pause();
    pthread_mutex_lock(&g_dump_lock);
    /* In periodic mode only an open window is left to write; in continuous
     * mode it is uploaded, with a short bounded wait. */
    hs_g.exiting = true;
    if (hs_g.cfg.continuous && hs_control_window_close())
        collect_locked(hs_upload_queue, NULL);
    else if (!hs_g.cfg.continuous && (!hs_g.cfg.period_ns || hs_control_window_close()))
        write_all(NULL, hs_g.exit_numbered ? hs_g.dumps + 1 : 0, hs_g.cfg.leaks, NULL, NULL);
    pthread_mutex_unlock(&g_dump_lock);
    if (hs_g.cfg.continuous)
        hs_upload_exit();
    if (hs_g.cfg.stats || (hs_g.cfg.heap && hs_heap_untracked()))
        print_stats();
    hs_g.started = false;
    hs_self.in_agent--;
}

static void at_exit(void)
{
    hs_agent_final_write();
}

/* _exit and _Exit (a forked child's proper end; dash ends with it): write
 * what was collected first, on the agent thread when there is one (_exit
 * may be called from a signal handler). exit() reaches the kernel through
 * libc's internal _exit, not these. */
static void before_exit(void)
{
    if (!hs_g.started || hs_g.pid != getpid()) /* not profiling, or a vfork child */
        return;
    if (hs_control_write_before_exit() != 0 && hs_g.started)
        hs_agent_final_write();
}

/* exit() itself only notes where the program's frames end for the leak
 * scan (heap.c), then is libc's. */
__attribute__((visibility("default"), noreturn)) void exit(int status)
{
    hs_heap_note_exit(__builtin_frame_address(0));
    static void (*real_exit)(int);
    if (!real_exit)
        real_exit = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    if (real_exit)
        real_exit(status);
    syscall(SYS_exit_group, status); /* no libc exit found: cannot happen */
    __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
    before_exit();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
    before_exit();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* ---- exec ---- */

/* The first name base.execN (N from 1) whose file of type is not taken,
 * into name (the file's path into path). 0, or -1. */
static int exec_name(const char *base, const char *type, char *name, size_t len, char *path, size_t plen)
{
    char num[32];
    for (int k = 1; k < 1000; k++) {
        snprintf(name, len, "%s", base);
        snprintf(num, sizeof num, "exec%d", k);
        if (insert_part(name, len, num) != 0 || hs_profile_file_name(name, type, n_types() > 1, NULL, path, plen) != 0)
            return -1;
        if (access(path, F_OK) != 0)
            return 0;
    }
    return -1;
}

/* Continuous mode, before exec: an upload that could not be sent in time
 * goes to its exec file (hs_upload_before_exec's keep). */
static void keep_upload(const char *type, const void *data, size_t len, void *arg)
{
    char name[PATH_MAX], path[PATH_MAX], err[256];
    if (exec_name(arg, type, name, sizeof name, path, sizeof path) != 0)
        return;
    if (hs_profile_write_encoded(data, len, path, err, sizeof err) != 0)
        fprintf(stderr, "hotspur: %s: %s\n", path, err);
    else
        fprintf(stderr, "hotspur: before exec: a %s profile not uploaded in time is in %s\n", type, path);
}

/* Before the image is replaced: keep what it collected, if anything, and
 * pause. Written under its own name (the process's name with ".PID.execN"
 * inserted, N the first number not taken, so neither the new image, which
 * has the same pid, nor an earlier image of it overwrites the file); in
 * continuous mode an open window is cut short and queued, the queue is
 * uploaded (at most 1 s), and only what could not be sent is written so.
 * Returns 1 when paused. */
static int before_exec(void)
{
    if (!hs_g.started || hs_g.pid != getpid() || hs_g.exiting) /* a vfork child: not ours */
        return 0;
    int saved = errno;
    hs_self.in_agent++;
    hs_agent_pause();
    pthread_mutex_lock(&g_dump_lock);
    char base[PATH_MAX], name[PATH_MAX], num[32], probe[PATH_MAX];
    int ok = expand_template(hs_g.cfg.output, 0, 1, base, sizeof base) == 0;
    if (ok && hs_g.root && !strstr(hs_g.cfg.output, "%p")) {
        snprintf(num, sizeof num, "%d", (int)getpid());
        ok = insert_part(base, sizeof base, num) == 0;
    }
    if (hs_g.cfg.continuous) {
        if (hs_control_window_open())
            collect_locked(hs_upload_queue, NULL);
        pthread_mutex_unlock(&g_dump_lock);
        if (ok)
            hs_upload_before_exec(keep_upload, base);
        hs_agent_mark(); /* if exec fails, the next window covers what follows */
        errno = saved;
        return 1;
    }
    /* A fork child that execs at once (a shell's, make's) has nothing. */
    int empty = !hs_g.cfg.heap && (!hs_g.cfg.cpu || !atomic_load(&hs_g.cpu.n_used)) &&
                (hs_g.cfg.wall_hz <= 0 || !atomic_load(&hs_g.wall.n_used)) &&
                (!hs_g.cfg.lock || !atomic_load(&hs_g.lock.n_used));
    const char *type = hs_g.cfg.cpu ? "cpu" : hs_g.cfg.wall_hz > 0 ? "wall" : hs_g.cfg.lock ? "lock" : "heap";
    if (ok && !empty && exec_name(base, type, name, sizeof name, probe, sizeof probe) == 0) {
        hs_g.before_exec = true; /* an image's last write, as at exit */
        write_base(name, 0, NULL, NULL);
        hs_g.before_exec = false;
    }
    pthread_mutex_unlock(&g_dump_lock);
    hs_agent_mark(); /* if exec fails, the exit write covers what follows */
    errno = saved;
    return 1;
}

/* exec failed: go on profiling. */
static void after_exec_failed(int paused)
{
    if (!paused)
        return;
    int saved = errno;
    if (hs_g.cfg.continuous && !hs_control_window_open()) {
        if (hs_g.cfg.heap) /* between windows only the heap profiler runs */
            hs_heap_resume();
    } else {
        hs_agent_resume();
    }
    hs_self.in_agent--;
    errno = saved;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);

static void *next_fn(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[], char *const envp[])
{
    static execve_fn real;
    if (!real)
        *(void **)&real = next_fn("execve");
    int p = before_exec();
    int rc = real ? real(path, argv, envp) : (errno = ENOSYS, -1);
    after_exec_failed(p);
    return rc;
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static execvpe_fn real;
    if (!real)
        *(void **)&real = next_fn("execvpe");
    int p = before_exec();
    int rc = real ? real(file, argv, envp) : (errno = ENOSYS, -1);
    after_exec_failed(p);
    return rc;
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[])
{
    static int (*real)(int, char *const[], char *const[]);
    if (!real)
        *(void **)&real = next_fn("fexecve");
    int p = before_exec();
    int rc = real ? real(fd, argv, envp) : (errno = ENOSYS, -1);
    after_exec_failed(p);
    return rc;
}

/* execl, execlp, execle: count the arguments, copy them into an array
 * (with execle, then take envp), then as above. */
static size_t count_args(const char *arg0, va_list ap)
{
    size_t n = 1;
    if (arg0)
        while (va_arg(ap, const char *))
            n++;
    return n;
}

static char *const *fill_args(const char **argv, size_t n, const char *arg0, va_list ap)
{
    argv[0] = arg0;
    for (size_t i = 1; i <= n; i++)
        argv[i] = i < n ? va_arg(ap, const char *) : NULL;
    if (arg0)
        (void)va_arg(ap, const char *); /* the terminating NULL */
    return (char *const *)argv;
}

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = count_args(arg, ap);
    va_end(ap);
    const char *argv[n + 1];
    va_start(ap, arg);
    fill_args(argv, n, arg, ap);
    va_end(ap);
    return execve(path, (char *const *)argv, environ);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = count_args(arg, ap);
    va_end(ap);
    const char *argv[n + 1];
    va_start(ap, arg);
    fill_args(argv, n, arg, ap);
    va_end(ap);
    return execvpe(file, (char *const *)argv, environ);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = count_args(arg, ap);
    va_end(ap);
    const char *argv[n + 1];
    va_start(ap, arg);
    fill_args(argv, n, arg, ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, (char *const *)argv, envp);
}

static void after_fork_child(void)
{
    if (!hs_g.started)
        return;
    /* The child starts clean (the heap's live blocks excepted: they are the
     * child's too) and profiles itself only when children are followed. */
    int on = hs_g.cfg.follow;
    hs_self.in_agent++;
    /* Locks that a thread left behind by fork may have held. */
    hs_labels_after_fork();
    hs_modules_after_fork();
    hs_control_forget_parent();
    hs_agent_pause();
    if (hs_g.cfg.cpu)
        hs_stacktab_clear(&hs_g.cpu);
    if (hs_g.cfg.wall_hz > 0)
        hs_stacktab_clear(&hs_g.wall);
    if (hs_g.cfg.lock)
        hs_stacktab_clear(&hs_g.lock);
    pthread_mutex_init(&g_dump_lock, NULL);
    hs_g.pid = getpid();
    hs_g.root = false;
    hs_g.dumps = 0;
    hs_g.exit_numbered = false;
    hs_g.start_wall_ns = hs_g.window_wall_ns = hs_now_ns(CLOCK_REALTIME);
    if (hs_g.cfg.heap)
        hs_heap_after_fork(on);
    if (hs_g.cfg.continuous)
        hs_upload_after_fork(on);
    if (on)
        hs_control_after_fork();
    /* Timers last: the set-up above is not the program's CPU time. */
    hs_sampler_after_fork(on);
    if (on)
        hs_agent_resume();
    else
        hs_g.started = false;
    hs_self.in_agent--;
}

static int map_table(hs_stacktab *t, const char *what, int populate)
{
    if (t->entries && t->pool_cap == hs_g.cfg.max_stacks * 32u) { /* started again (attach): reuse it */
        hs_stacktab_clear(t);
        return 0;
    }
    if (hs_stacktab_init(t, hs_g.cfg.max_stacks, hs_g.cfg.max_stacks * 32u, populate) == 0)
        return 0;
    fprintf(stderr, "hotspur: cannot map the %s table; not profiling\n", what);
    return -1;
}

/* What the agent thread (control.c) may ask of the life cycle. */
static const hs_control_ops g_control_ops = {
    .dump = hs_agent_dump,
    .pause = hs_agent_pause,
    .resume = hs_agent_resume,
    .mark = hs_agent_mark,
    .window_end = hs_agent_window_end,
    .populate_tables = hs_agent_populate_tables,
    .final_write = hs_agent_final_write,
};

/* Start with hs_g.cfg. */
static int agent_start(void)
{
    const hs_config *c = &hs_g.cfg;
    hs_g.root = hs_agent_is_root();
    if ((!hs_g.root && !c->follow) || (!c->cpu && !c->heap && !c->wall_hz && !c->lock))
        return 0;
    if ((c->cpu && map_table(&hs_g.cpu, "CPU", 0) != 0) || (c->wall_hz && map_table(&hs_g.wall, "wall", 0) != 0) ||
        (c->lock && map_table(&hs_g.lock, "lock", 0) != 0))
        return -1;
    if (hs_agent_threads_init() != 0)
        return -1;
    hs_g.pid = getpid();
    hs_g.start_wall_ns = hs_g.window_wall_ns = hs_now_ns(CLOCK_REALTIME);
    hs_g.start_mono_ns = hs_now_ns(CLOCK_MONOTONIC);
    hs_modules_on_unload(hs_agent_relocate_frames);
    if (c->continuous && hs_upload_start() != 0)
        return -1; /* it said why */
    if (c->heap && hs_heap_start() != 0) {
        fprintf(stderr, "hotspur: cannot map the heap tables; not profiling\n");
        return -1;
    }
    atomic_store(&hs_g.cpu_on, c->cpu);
    if (hs_sampler_start() != 0) { /* the signal serves CPU and wall samples */
        hs_agent_pause();
        fprintf(stderr, "hotspur: cannot start the sampler: %s; not profiling\n", strerror(errno));
        return -1;
    }
    atomic_store(&hs_g.wall_on, c->wall_hz > 0);
    atomic_store(&hs_g.lock_on, c->lock);
    hs_g.started = true;
    static int once;
    if (!once++) {
        pthread_atfork(NULL, NULL, after_fork_child);
        atexit(at_exit);
    }
    /* Before the program runs (no thread of its own yet): a fork while
     * the agent thread was inside dlopen gave the child a half-loaded
     * symbolizer, and could hang it at exit. */
    hs_symlib_preload();
    if (hs_control_start(&g_control_ops) != 0)
        fprintf(stderr, "hotspur: no control thread: %s (ctl, periodic and wall profiles are off)\n",
                strerror(errno));
    return 0;
}

int hs_agent_start_config(const hs_config *cfg)
{
    if (hs_g.started) {
        errno = EALREADY;
        return -1;
    }
    hs_self.in_agent++;
    hs_g.cfg = *cfg;
    hs_agent_config_finish(&hs_g.cfg);
    int rc = agent_start();
    hs_self.in_agent--;
    if (rc == 0 && !hs_g.started) {
        errno = EINVAL; /* nothing to profile */
        return -1;
    }
    return rc;
}

/* Preloaded, or linked and asked to by the environment: start now. */
static int autostart(void)
{
    const char *off = getenv("HOTSPUR_DISABLE");
    if (off && *off && strcmp(off, "0") != 0)
        return 0;
    const char *pre = getenv("LD_PRELOAD");
    const char *out = getenv("HOTSPUR_OUTPUT"), *server = getenv("HOTSPUR_SERVER");
    const char *otlp = getenv("HOTSPUR_OTLP_ENDPOINT");
    return ((pre && strstr(pre, "libhotspur")) || (out && *out) || (server && *server) || (otlp && *otlp) ||
            hs_agent_env_long("HOTSPUR_AUTOSTART", 0, 0, 1) == 1) &&
           !hs_attach_loading(); /* dlopened by `hotspur attach`: it starts the agent itself */
}

__attribute__((constructor)) static void hs_agent_init(void)
{
    hs_self.in_agent++; /* the agent's own allocations are not the program's */
    hs_agent_core_init();
    if (autostart()) {
        hs_agent_read_config(&hs_g.cfg);
        agent_start();
    }
    hs_self.in_agent--;
}
