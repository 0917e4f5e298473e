/* core.c — the agent's core, what every module of the agent uses: the
 * process-wide record and the per-thread data, clocks, the agent's own
 * address range, the configuration read from the environment, and the
 * threads (the pthread_create interposition that registers each new thread
 * with the samplers). The life cycle (start, dumps, fork, exec, exit) is
 * agent.c's.
 *
 * Environment: see docs/agent.md and hs_agent_read_config().
 */
#define _GNU_SOURCE
#include "agent/core.h"

#include "agent/hotpath.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/sampler.h"
#include "base/units.h"

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

static uintptr_t g_self_lo, g_self_hi; /* the agent library's address range */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        lo = s < lo ? s : lo;
        hi = e > hi ? e : hi;
    }
    if (me < lo || me >= hi)
        return 0;
    g_self_lo = lo;
    g_self_hi = hi;
    return 1;
}

HS_SAMPLE_PATH int hs_agent_owns_pc(uint64_t addr)
{
    return addr >= g_self_lo && addr < g_self_hi;
}

/* A pointer from object info's dynamic section (glibc has relocated most
 * entries in place; the vDSO's are not). */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

void hs_agent_dyn_tables(const struct dl_phdr_info *info, hs_dyn_tables *t)
{
    memset(t, 0, sizeof *t);
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: t->symtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: t->strtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: t->gnu_hash = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_JMPREL: t->jmprel = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: t->jmprel_size = dyn->d_un.d_val; break;
        case DT_RELA: t->rela = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_RELASZ: t->rela_size = dyn->d_un.d_val; break;
        default: break;
        }
    }
}

/* Whether object info defines (not just references) the function name,
 * looked up in its GNU hash table (objects without one count as not). */
static int defines(const struct dl_phdr_info *info, const char *name)
{
    hs_dyn_tables dt;
    hs_agent_dyn_tables(info, &dt);
    const ElfW(Sym) *symtab = dt.symtab;
    const char *strtab = dt.strtab;
    const uint32_t *gnu = dt.gnu_hash;
    if (!symtab || !strtab || !gnu || !gnu[0])
        return 0;
    uint32_t h = 5381, nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return 0;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *sym = &symtab[i];
        if ((h | 1) == (h2 | 1) && strcmp(strtab + sym->st_name, name) == 0)
            return sym->st_shndx != SHN_UNDEF && sym->st_value != 0;
        if (h2 & 1)
            return 0;
    }
}

typedef struct {
    const char *name;
    const char *owner; /* the first definer's path ("" the program) */
    int found, ours;
} owner_search;

static int find_owner(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    owner_search *o = data;
    if (!defines(info, o->name))
        return 0;
    o->found = 1;
    for (int i = 0; i < info->dlpi_phnum && !o->ours; i++) /* is it this library? */
        o->ours = info->dlpi_phdr[i].p_type == PT_LOAD &&
                  hs_agent_owns_pc(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    o->owner = info->dlpi_name;
    return 1; /* objects come in the global lookup order: the first one wins */
}

const char *hs_agent_symbol_owner(const char *name)
{
    owner_search o = {name, NULL, 0, 0};
    dl_iterate_phdr(find_owner, &o);
    if (!o.found || o.ours)
        return NULL;
    return o.owner && *o.owner ? o.owner : "the program";
}

HS_SAMPLE_PATH int hs_agent_hide_frames(uint64_t *pcs, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!hs_agent_owns_pc(pcs[i]))
            pcs[k++] = pcs[i];
    return k;
}

HS_SAMPLE_PATH hs_stack_entry *hs_agent_intern_call(hs_stacktab *t, const hs_call_regs *c)
{
    hs_thread *self = &hs_self;
    if (!self->tid)
        hs_thread_identify();
    int max = hs_g.cfg.max_depth;
    uint64_t pcs[HS_MAX_DEPTH_LIMIT + 8];
    int n = c ? hs_unwind_call(c, &self->stack, pcs, max + 8) : hs_unwind_here(&self->stack, pcs, max + 8, 0);
    n = hs_agent_hide_frames(pcs, n); /* from here: the hook's; from c: a thread start's */
    int depth = n > max ? max : n;
    return depth > 0 ? hs_stacktab_intern(t, self->tid, self->labels, pcs, (uint32_t)depth) : NULL;
}

hs_stack_entry *hs_agent_intern_here(hs_stacktab *t)
{
    return hs_agent_intern_call(t, NULL);
}

pid_t hs_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

void hs_thread_identify(void)
{
    hs_self.tid = hs_gettid();
    if (hs_unwind_initial_stack(&hs_self.stack) == 0)
        return; /* without the /proc/self/maps glibc reads for it */
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

/* A duration (base/units.h: "90" seconds, "500ms", "2m", "1d"); def if unset or bad. */
static int64_t env_duration(const char *name, int64_t def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    int64_t v;
    if (hs_parse_duration_ns(s, &v) < 0 || v <= 0) {
        fprintf(stderr, "hotspur: ignoring %s=%s (want " HS_DURATION_HINT ")\n", name, s);
        return def;
    }
    return v;
}

int64_t hs_agent_env_duration(const char *name, int64_t def)
{
    return env_duration(name, def);
}

long hs_agent_env_long(const char *name, long def, long lo, long hi)
{
    return env_long(name, def, lo, hi);
}

void hs_agent_config_defaults(hs_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->output, sizeof c->output, "hotspur.%%p.pb.gz");
    c->cpu = true;
    c->cpu_hz = 100;
    c->max_depth = 128;
    c->max_stacks = 65536;
    c->heap_rate = 524288;
    c->wall_threads = 16;
    c->control = true;
}

void hs_agent_config_finish(hs_config *c)
{
    if (c->leaks) {
        c->heap = true;
        c->heap_rate = 1;
    }
    if (!c->heap_max_live) /* exact mode follows every block */
        c->heap_max_live = c->heap_rate == 1 ? 1u << 23 : 1u << 16;
    if (c->period_ns && (!c->duration_ns || c->duration_ns > c->period_ns))
        c->duration_ns = c->period_ns;
}

void hs_agent_read_config(hs_config *c)
{
    hs_agent_config_defaults(c);
    const char *out = getenv("HOTSPUR_OUTPUT");
    if (out && *out)
        snprintf(c->output, sizeof c->output, "%s", out);
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
    c->wall_hz = (int)env_long("HOTSPUR_WALL_HZ", 0, 0, 1000);
    c->wall_threads = (int)env_long("HOTSPUR_WALL_THREADS", 16, 1, 1024);
    c->lock = env_long("HOTSPUR_LOCK", 0, 0, 1) == 1;
    const char *server = getenv("HOTSPUR_SERVER"), *otlp = getenv("HOTSPUR_OTLP_ENDPOINT");
    c->continuous = (server && *server) || (otlp && *otlp);
    /* Continuous mode: a 10 s window every minute unless told otherwise. */
    c->period_ns = env_duration("HOTSPUR_PERIOD", c->continuous ? 60000000000LL : 0);
    c->duration_ns = env_duration("HOTSPUR_DURATION", c->continuous ? 10000000000LL : 0);
    c->control = env_long("HOTSPUR_CONTROL", 1, 0, 1) == 1;
    c->defer_symbols = env_long("HOTSPUR_DEFER_SYMBOLS", 0, 0, 1) == 1;
    const char *sym = getenv("HOTSPUR_SYMBOLIZE");
    c->symbolize_server = sym && strcmp(sym, "server") == 0;
    if (sym && *sym && !c->symbolize_server && strcmp(sym, "agent") != 0)
        fprintf(stderr, "hotspur: HOTSPUR_SYMBOLIZE=%s is neither 'agent' nor 'server': using 'agent'\n", sym);
    /* Children profile themselves when asked to, or when the output name
     * tells them apart anyway (%p). */
    c->follow = env_long("HOTSPUR_FOLLOW", strstr(c->output, "%p") ? 1 : 0, 0, 1) == 1;
    if (c->leaks && c->heap_rate != 1 && getenv("HOTSPUR_HEAP_RATE"))
        fprintf(stderr, "hotspur: HOTSPUR_LEAKS needs every allocation: using HOTSPUR_HEAP_RATE=1\n");
    hs_agent_config_finish(c);
}

int hs_agent_is_root(void)
{
    const char *root = getenv("HOTSPUR_ROOT_PID");
    return !root || !*root || atol(root) == (long)getpid();
}

/* ---- threads ---- */

int hs_agent_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    if (!g_real_pthread_create)
        g_real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    return g_real_pthread_create ? g_real_pthread_create(t, NULL, fn, arg) : EAGAIN;
}

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
    hs_self.start_fn = (uint64_t)(uintptr_t)a.fn;
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

int hs_agent_threads_init(void)
{
    /* Once per process: an attached agent is started again by each attach,
     * and a key per start was one key left behind per attach. */
    static int made;
    if (!made && pthread_key_create(&g_thread_key, thread_exiting) != 0)
        return -1;
    made = 1;
    return 0;
}

void hs_agent_core_init(void)
{
    dl_iterate_phdr(find_self, (void *)(uintptr_t)&hs_agent_owns_pc);
    if (!g_real_pthread_create)
        g_real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
}
