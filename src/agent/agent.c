/* agent.c — the agent's life cycle: read the configuration from the
 * environment, start sampling when the library is loaded, cover new threads
 * (pthread_create interposition) and fork children, and write the profile
 * when the process exits (exit() or return from main).
 *
 * Environment: see docs/agent.md and read_config().
 */
#define _GNU_SOURCE
#include "agent/agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/heap.h"
#include "agent/output.h"
#include "agent/sampler.h"
#include "profile/profile.h"

__thread hs_thread hs_self __attribute__((tls_model("initial-exec"))) = {.slot = -1};
hs_agent hs_g;

static pthread_key_t g_thread_key;
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn g_real_pthread_create;

int64_t hs_now_ns(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

pid_t hs_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

void hs_thread_identify(void)
{
    hs_self.tid = hs_gettid();
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            hs_self.stack.lo = (uintptr_t)addr;
            hs_self.stack.hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
}

/* ---- configuration ---- */

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        fprintf(stderr, "hotspur: ignoring %s=%s (want %ld..%ld), using %ld\n", name, s, lo, hi, def);
        return def;
    }
    return v;
}

static void read_config(hs_config *c)
{
    const char *out = getenv("HOTSPUR_OUTPUT");
    snprintf(c->output, sizeof c->output, "%s", out && *out ? out : "hotspur.%p.pb.gz");
    c->cpu_hz = (int)env_long("HOTSPUR_CPU_HZ", 100, 1, 10000);
    c->max_depth = (int)env_long("HOTSPUR_MAX_DEPTH", 128, 1, HS_MAX_DEPTH_LIMIT);
    c->max_stacks = (uint32_t)env_long("HOTSPUR_MAX_STACKS", 65536, 1024, 1 << 24);
    c->stats = env_long("HOTSPUR_STATS", 0, 0, 1) == 1;
    c->signal = (int)env_long("HOTSPUR_SIGNAL", 0, 0, 64);
    c->cpu = env_long("HOTSPUR_CPU", 1, 0, 1) == 1;
    c->heap = env_long("HOTSPUR_HEAP", 0, 0, 1) == 1;
    c->leaks = env_long("HOTSPUR_LEAKS", 0, 0, 1) == 1;
    c->heap_rate = env_long("HOTSPUR_HEAP_RATE", 524288, 1, 1L << 40);
    c->heap_max_live = (uint32_t)env_long("HOTSPUR_HEAP_MAX_LIVE", 0, 0, 1 << 28);
    if (c->leaks) {
        c->heap = true;
        if (c->heap_rate != 1 && getenv("HOTSPUR_HEAP_RATE"))
            fprintf(stderr, "hotspur: HOTSPUR_LEAKS needs every allocation: using HOTSPUR_HEAP_RATE=1\n");
        c->heap_rate = 1;
    }
    if (!c->heap_max_live) /* exact mode follows every block */
        c->heap_max_live = c->heap_rate == 1 ? 1u << 23 : 1u << 16;
}

/* A process that must not write its own profile: a descendant of the one
 * `hotspur record` started when the output name has no %p to tell them
 * apart. */
static int should_profile(const hs_config *c)
{
    if (strstr(c->output, "%p"))
        return 1;
    const char *root = getenv("HOTSPUR_ROOT_PID");
    return !root || !*root || atol(root) == (long)getpid();
}

/* ---- threads ---- */

typedef struct {
    void *(*fn)(void *);
    void *arg;
} start_args;

static void thread_exiting(void *unused)
{
    (void)unused;
    hs_self.in_agent++;
    hs_sampler_thread_end();
    hs_self.in_agent--;
}

static void *thread_trampoline(void *p)
{
    start_args a = *(start_args *)p;
    hs_self.in_agent++;
    free(p);
    hs_sampler_thread_begin();
    hs_self.in_agent--;
    pthread_setspecific(g_thread_key, (void *)1); /* runs thread_exiting at exit */
    return a.fn(a.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg)
{
    if (!g_real_pthread_create) {
        g_real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (!g_real_pthread_create)
            return EAGAIN;
    }
    if (!hs_g.started)
        return g_real_pthread_create(t, attr, fn, arg);
    hs_self.in_agent++;
    start_args *a = malloc(sizeof *a);
    hs_self.in_agent--;
    if (!a)
        return g_real_pthread_create(t, attr, fn, arg);
    a->fn = fn;
    a->arg = arg;
    int rc = g_real_pthread_create(t, attr, thread_trampoline, a);
    if (rc != 0)
        free(a);
    return rc;
}

/* ---- process life cycle ---- */

static int profile_name(const char *type, const char *companion, char *out, size_t outlen)
{
    char base[PATH_MAX];
    int several = hs_g.cfg.cpu && hs_g.cfg.heap;
    if (hs_output_expand(hs_g.cfg.output, base, sizeof base) != 0 ||
        hs_profile_file_name(base, type, several, companion, out, outlen) != 0) {
        fprintf(stderr, "hotspur: output name too long: %s\n", hs_g.cfg.output);
        return -1;
    }
    return 0;
}

/* Write every enabled profile; at exit also the leak report's profile. */
static void write_profiles(int at_exit)
{
    char path[PATH_MAX];
    if (hs_g.cfg.cpu && profile_name("cpu", NULL, path, sizeof path) == 0)
        hs_output_write_cpu(path);
    if (hs_g.cfg.heap) {
        if (profile_name("heap", NULL, path, sizeof path) == 0)
            hs_output_write_heap(path, HS_HEAP_ALL);
        if (profile_name("heap", "peak", path, sizeof path) == 0)
            hs_output_write_heap(path, HS_HEAP_PEAK);
        uint64_t bytes;
        if (at_exit && hs_g.cfg.leaks && hs_heap_scan_leaks(&bytes) >= 0 &&
            profile_name("heap", "leaks", path, sizeof path) == 0)
            hs_output_write_heap(path, HS_HEAP_LEAKS);
        if (hs_heap_untracked())
            fprintf(stderr, "hotspur: %llu allocations could not be followed (raise HOTSPUR_HEAP_MAX_LIVE)\n",
                    (unsigned long long)hs_heap_untracked());
    }
    if (hs_g.cfg.stats) {
        uint64_t calls = atomic_load(&hs_g.handler_calls), ns = atomic_load(&hs_g.handler_ns);
        fprintf(stderr, "hotspur: %llu samples, %.0f ns per sample in the handler\n",
                (unsigned long long)calls, calls ? (double)ns / (double)calls : 0.0);
    }
}

static void at_exit(void)
{
    if (!hs_g.started || hs_g.pid != getpid())
        return;
    hs_self.in_agent++;
    hs_sampler_stop();
    if (hs_g.cfg.heap)
        hs_heap_stop();
    write_profiles(1);
    hs_g.started = false;
    hs_self.in_agent--;
}

static void after_fork_child(void)
{
    if (!hs_g.started)
        return;
    /* The child starts clean; it writes its own file only when the output
     * name has %p, so it can't overwrite its parent's. */
    int on = strstr(hs_g.cfg.output, "%p") != NULL;
    atomic_store(&hs_g.cpu_on, 0);
    hs_stacktab_clear(&hs_g.cpu);
    hs_g.pid = getpid();
    hs_g.start_wall_ns = hs_now_ns(CLOCK_REALTIME);
    hs_g.start_mono_ns = hs_now_ns(CLOCK_MONOTONIC);
    hs_self.in_agent++;
    hs_sampler_after_fork(on && hs_g.cfg.cpu);
    hs_self.in_agent--;
    if (hs_g.cfg.heap)
        hs_heap_after_fork(on);
    if (on)
        atomic_store(&hs_g.cpu_on, hs_g.cfg.cpu);
    else
        hs_g.started = false;
}

static int agent_start(void)
{
    read_config(&hs_g.cfg);
    if (!should_profile(&hs_g.cfg) || (!hs_g.cfg.cpu && !hs_g.cfg.heap))
        return 0;
    if (hs_g.cfg.cpu && hs_stacktab_init(&hs_g.cpu, hs_g.cfg.max_stacks, hs_g.cfg.max_stacks * 32u) != 0) {
        fprintf(stderr, "hotspur: cannot map the sample table; not profiling\n");
        return -1;
    }
    if (pthread_key_create(&g_thread_key, thread_exiting) != 0)
        return -1;
    hs_g.pid = getpid();
    hs_g.start_wall_ns = hs_now_ns(CLOCK_REALTIME);
    hs_g.start_mono_ns = hs_now_ns(CLOCK_MONOTONIC);
    if (hs_g.cfg.heap && hs_heap_start() != 0) {
        fprintf(stderr, "hotspur: cannot map the heap tables; not profiling\n");
        return -1;
    }
    if (hs_g.cfg.cpu) {
        atomic_store(&hs_g.cpu_on, 1);
        if (hs_sampler_start() != 0) {
            atomic_store(&hs_g.cpu_on, 0);
            hs_heap_stop();
            fprintf(stderr, "hotspur: cannot start the CPU sampler: %s; not profiling\n", strerror(errno));
            return -1;
        }
    } else {
        hs_sampler_thread_begin(); /* register the main thread for stack walks */
    }
    hs_g.started = true;
    pthread_atfork(NULL, NULL, after_fork_child);
    atexit(at_exit);
    return 0;
}

__attribute__((constructor)) static void hs_agent_init(void)
{
    hs_self.in_agent++; /* the agent's own allocations are not the program's */
    if (!g_real_pthread_create)
        g_real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    const char *off = getenv("HOTSPUR_DISABLE");
    if (!off || !*off || strcmp(off, "0") == 0)
        agent_start();
    hs_self.in_agent--;
}
