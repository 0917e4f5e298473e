/* attach.c — the agent in a process that already runs (`hotspur attach PID`,
 * docs/attach.md). The injector (src/attach/inject.c) dlopens the agent in
 * the target, whose code is bound to libc already, then calls
 * hotspur_attach_start(config) there: the agent starts with the profiles
 * asked for and the calls it interposes are sent to it by rewriting the
 * GOT entries (R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT of .rela.plt and
 * .rela.dyn) that name them, in every loaded module but the agent and the
 * loader (in libc only its own malloc, free, calloc and realloc entries,
 * through which strdup & co. allocate), RELRO pages made writable for the
 * write and read-only again.
 * Modules loaded later are rewritten as they come: dlopen's entries are
 * sent to a hook that calls the real dlopen and then rewrites what is new.
 * hotspur_attach_stop() puts every entry back, stops the agent's threads
 * and writes the profiles.
 *
 * The library stays loaded after a detach (a thread may still be inside one
 * of its functions, having read the GOT entry just before it was put back:
 * unmapping the code under it would crash the host); a second attach finds
 * it loaded and starts it again.
 *
 * A block allocated before the attach and freed after goes to libc's free
 * untouched: the heap profiler writes no header (heap.c) and finds no such
 * block in its live table. */
#define _GNU_SOURCE
#include "agent/attach.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/control.h"
#include "agent/core.h"
#include "agent/sampler.h"
#include "agent/upload.h"
#include "base/units.h"

#define HS_EXPORT __attribute__((visibility("default")))

/* The interposed functions, by profile. */
static const char *const k_heap[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
    "valloc", "pvalloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t", "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
static const char *const k_lock[] = {"pthread_mutex_lock",        "pthread_mutex_timedlock",
                                     "pthread_rwlock_rdlock",     "pthread_rwlock_wrlock",
                                     "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock"};

#define MAX_HOOKS 48
typedef struct {
    const char *name;
    void *hook;   /* where the rewritten entries point */
    void *global; /* what the name resolves to in the process (what an entry holds) */
} hook;

static hook g_hooks[MAX_HOOKS];
static int g_nhooks;

/* One rewritten entry. */
typedef struct {
    void **slot;
    void *orig;
    void *hook;
    uintptr_t base; /* its module's load address */
} patch;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* g_patches, g_armed */
static patch *g_patches;
static size_t g_npatches, g_cap;
static int g_armed; /* entries are being rewritten (between start and stop) */
static _Atomic int g_attached; /* 0 no, 1 attached, 2 detaching */
static void *(*g_real_dlopen)(const char *, int);
static long g_page;

/* ---- modules ---- */

/* libc's own entries for the allocator (libc calls malloc, free, calloc
 * and realloc through its GOT, as glibc lets a preloaded malloc replace
 * them: strdup, getline, fopen's buffer... reach them there). */
static int libc_entry(const char *name)
{
    static const char *const k[] = {"malloc", "free", "calloc", "realloc"};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (strcmp(name, k[i]) == 0)
            return 1;
    return 0;
}

static int is_libc(const struct dl_phdr_info *info)
{
    const char *name = info->dlpi_name, *base = strrchr(name, '/');
    return strcmp(base ? base + 1 : name, "libc.so.6") == 0;
}

/* Not ours to rewrite: the agent itself, the loader, the vDSO; in libc,
 * only its allocator entries (libc_entry). */
static int skipped(const struct dl_phdr_info *info)
{
    const char *name = info->dlpi_name, *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "linux-vdso", 10) == 0 ||
        strncmp(base, "linux-gate", 10) == 0)
        return 1;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD)
            return hs_agent_owns_pc(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return 1;
}

static int in_module(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
            return 1;
    }
    return 0;
}

/* The page range [lo, hi) the loader made read-only after relocation (0, 0: none). */
static void relro(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    *lo = *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_GNU_RELRO)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        *lo = s & ~(uintptr_t)(g_page - 1);
        *hi = (s + ph->p_memsz) & ~(uintptr_t)(g_page - 1); /* as the loader rounds it */
    }
}

/* Write v into slot, through a writable window when it is in RELRO. */
static int write_slot(void **slot, void *v, uintptr_t rlo, uintptr_t rhi)
{
    uintptr_t a = (uintptr_t)slot, page = a & ~(uintptr_t)(g_page - 1);
    int ro = a >= rlo && a < rhi;
    if (ro && mprotect((void *)page, (size_t)g_page, PROT_READ | PROT_WRITE) != 0)
        return -1;
    __atomic_store_n(slot, v, __ATOMIC_RELEASE);
    if (ro)
        mprotect((void *)page, (size_t)g_page, PROT_READ);
    return 0;
}

static int add_patch(void **slot, void *orig, void *h, uintptr_t base)
{
    if (g_npatches == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 256;
        patch *p = realloc(g_patches, cap * sizeof *p);
        if (!p)
            return -1;
        g_patches = p;
        g_cap = cap;
    }
    g_patches[g_npatches++] = (patch){slot, orig, h, base};
    return 0;
}

static const hook *hook_named(const char *name)
{
    for (int i = 0; i < g_nhooks; i++)
        if (strcmp(g_hooks[i].name, name) == 0)
            return &g_hooks[i];
    return NULL;
}

/* Rewrite the entries of one relocation table of module info. */
static void patch_table(const struct dl_phdr_info *info, const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *symtab,
                        const char *strtab, uintptr_t rlo, uintptr_t rhi)
{
    int libc = is_libc(info);
    for (size_t i = 0; i < bytes / sizeof *r; i++) {
        uint32_t type = ELF64_R_TYPE(r[i].r_info), sym = ELF64_R_SYM(r[i].r_info);
        if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !sym)
            continue;
        const hook *h = hook_named(strtab + symtab[sym].st_name);
        if (!h || (libc && !libc_entry(h->name)))
            continue;
        void **slot = (void **)(info->dlpi_addr + r[i].r_offset);
        void *v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        /* Only an entry bound to the process's definition, or not bound yet
         * (lazy binding: the module's own PLT stub); one bound elsewhere (a
         * module's own allocator) is left as it is. */
        if (v == h->hook || !(v == h->global || in_module(info, (uintptr_t)v)))
            continue;
        if (add_patch(slot, v, h->hook, info->dlpi_addr) == 0 && write_slot(slot, h->hook, rlo, rhi) != 0)
            g_npatches--;
    }
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size;
    (void)unused;
    if (skipped(info))
        return 0;
    hs_dyn_tables dt;
    hs_agent_dyn_tables(info, &dt);
    if (!dt.symtab || !dt.strtab)
        return 0;
    uintptr_t rlo, rhi;
    relro(info, &rlo, &rhi);
    if (dt.jmprel)
        patch_table(info, dt.jmprel, dt.jmprel_size, dt.symtab, dt.strtab, rlo, rhi);
    if (dt.rela)
        patch_table(info, dt.rela, dt.rela_size, dt.symtab, dt.strtab, rlo, rhi);
    return 0;
}

/* Put back the entries of the modules still loaded (newest first: an entry
 * rewritten twice, in two modules loaded one after the other at one
 * address, is put back to what the newer one held). */
static int restore_module(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size;
    (void)unused;
    if (skipped(info))
        return 0;
    uintptr_t rlo, rhi;
    relro(info, &rlo, &rhi);
    for (size_t i = g_npatches; i-- > 0;) {
        patch *p = &g_patches[i];
        if (p->base != info->dlpi_addr || !in_module(info, (uintptr_t)p->slot))
            continue;
        if (__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) == p->hook)
            write_slot(p->slot, p->orig, rlo, rhi);
    }
    return 0;
}

/* ---- dlopen ---- */

/* What a rewritten dlopen entry calls: the real dlopen, then the new
 * modules' entries. The real dlopen sees the agent as its caller: a name
 * without a slash is looked up without the calling module's RUNPATH
 * (docs/attach.md). */
static void *attach_dlopen(const char *file, int mode)
{
    void *h = g_real_dlopen(file, mode);
    int saved = errno;
    if (h) {
        hs_self.in_agent++;
        pthread_mutex_lock(&g_lock);
        if (g_armed)
            dl_iterate_phdr(patch_module, NULL);
        pthread_mutex_unlock(&g_lock);
        hs_self.in_agent--;
    }
    errno = saved;
    return h;
}

/* ---- start and stop ---- */

/* Is this thread loading the agent for `hotspur attach`, i.e. traced by a
 * process named hotspur? The library's constructor then does not start the
 * agent from the host's environment (a daemon may have HOTSPUR_OUTPUT or
 * HOTSPUR_SERVER set without the agent preloaded): hotspur_attach_start,
 * called next in the same stop, starts it with the attach's own config.
 * (`hotspur record` and `ctl` trace nothing.) */
int hs_attach_loading(void)
{
    char buf[4096], path[64];
    long tracer = 0;
    FILE *f = fopen("/proc/thread-self/status", "re");
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f))
        if (strncmp(buf, "TracerPid:", 10) == 0)
            tracer = atol(buf + 10);
    fclose(f);
    if (tracer <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/comm", tracer);
    f = fopen(path, "re");
    if (!f)
        return 0;
    int ours = fgets(buf, sizeof buf, f) && strcmp(buf, "hotspur\n") == 0;
    fclose(f);
    return ours;
}

static int add_hook(void *self, const char *name)
{
    void *f = dlsym(self, name);
    if (!f || !hs_agent_owns_pc((uint64_t)(uintptr_t)f) || g_nhooks == MAX_HOOKS)
        return -1;
    g_hooks[g_nhooks++] = (hook){name, f, dlsym(RTLD_DEFAULT, name)};
    return 0;
}

/* The upload settings of the config (server=, service=...), which upload.c
 * reads by their environment names through upload_setting: the host's
 * environment is neither read nor changed. */
static struct {
    const char *key, *env;
    char value[512];
} g_up[] = {{"server", "HOTSPUR_SERVER", ""},
            {"service", "HOTSPUR_SERVICE", ""},
            {"version", "HOTSPUR_VERSION", ""},
            {"labels", "HOTSPUR_LABELS", ""},
            {"token", "HOTSPUR_TOKEN", ""}};
#define N_UP (sizeof g_up / sizeof *g_up)

static const char *upload_setting(const char *env)
{
    for (size_t i = 0; i < N_UP; i++)
        if (strcmp(g_up[i].env, env) == 0)
            return g_up[i].value[0] ? g_up[i].value : NULL;
    return NULL; /* e.g. HOTSPUR_OTLP_ENDPOINT: not given to an attach */
}

static int upload_line(const char *key, const char *v)
{
    for (size_t i = 0; i < N_UP; i++)
        if (strcmp(g_up[i].key, key) == 0 && v && strlen(v) < sizeof g_up[i].value) {
            snprintf(g_up[i].value, sizeof g_up[i].value, "%s", v);
            return 0;
        }
    return -1;
}

/* The config lines (attach.h) into c. 0, or -1. */
static int parse_config(const char *s, hs_config *c)
{
    hs_agent_config_defaults(c);
    c->cpu = false;
    c->heap_rate = 524288;
    for (size_t i = 0; i < N_UP; i++)
        g_up[i].value[0] = 0;
    int64_t period = 0, window = 0;
    while (s && *s) {
        const char *end = strchr(s, '\n');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        char line[PATH_MAX + 16];
        if (n >= sizeof line)
            return -1;
        memcpy(line, s, n);
        line[n] = 0;
        s = end ? end + 1 : NULL;
        char *v = strchr(line, '=');
        if (v)
            *v++ = 0;
        if (!line[0])
            continue;
        if (strcmp(line, "heap") == 0)
            c->heap = true;
        else if (strcmp(line, "lock") == 0)
            c->lock = true;
        else if (strcmp(line, "leaks") == 0)
            c->heap = c->leaks = true;
        else if (strcmp(line, "stats") == 0)
            c->stats = true;
        else if (strcmp(line, "rate") == 0 && v && atoll(v) >= 1)
            c->heap_rate = atoll(v);
        else if (strcmp(line, "output") == 0 && v && v[0] == '/')
            snprintf(c->output, sizeof c->output, "%s", v);
        else if (strcmp(line, "period") == 0 && v && atoll(v) > 0)
            period = atoll(v);
        else if (strcmp(line, "window") == 0 && v && atoll(v) > 0)
            window = atoll(v);
        else if (upload_line(line, v) != 0)
            return -1;
    }
    /* Continuous mode (server=URL): a window of `window` ns every `period`
     * ns uploaded, as HOTSPUR_SERVER's defaults (10 s every minute). */
    c->continuous = g_up[0].value[0] != 0;
    if (c->continuous) {
        c->period_ns = period ? period : 60000000000LL;
        c->duration_ns = window ? window : 10000000000LL;
    } else if (period || window || g_up[1].value[0] || g_up[2].value[0] || g_up[3].value[0]) {
        return -1; /* upload settings without a server */
    }
    hs_upload_settings(c->continuous ? upload_setting : NULL);
    return 0;
}

HS_EXPORT long hotspur_attach_start(const char *config)
{
    if (atomic_load(&g_attached))
        return HS_ATTACH_ALREADY;
    if (hs_g.started)
        return HS_ATTACH_PRELOADED;
    hs_config c;
    if (parse_config(config, &c) != 0)
        return HS_ATTACH_BAD_CONFIG;
    if (!c.heap && !c.lock)
        return HS_ATTACH_NOTHING;
    hs_self.in_agent++;
    long rc = HS_ATTACH_OK;
    g_page = sysconf(_SC_PAGESIZE);
    /* Ourselves by handle: dlsym(self, "malloc") is the agent's malloc
     * (a plain reference from here would be bound to libc's). */
    Dl_info di;
    void *self = dladdr((void *)hotspur_attach_start, &di) && di.dli_fname
                     ? dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD)
                     : NULL;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    g_nhooks = 0;
    if (!self || !libc) {
        rc = HS_ATTACH_START_FAILED;
        goto out;
    }
    if (c.heap) {
        /* The agent forwards to libc's allocator: a process whose malloc is
         * another's (its blocks freed by libc's free would crash it) is
         * refused. */
        if (dlsym(RTLD_DEFAULT, "malloc") != dlsym(libc, "malloc") ||
            dlsym(RTLD_DEFAULT, "free") != dlsym(libc, "free")) {
            rc = HS_ATTACH_FOREIGN_MALLOC;
            goto out;
        }
        for (size_t i = 0; i < sizeof k_heap / sizeof *k_heap; i++)
            add_hook(self, k_heap[i]);
    }
    if (c.lock)
        for (size_t i = 0; i < sizeof k_lock / sizeof *k_lock; i++)
            add_hook(self, k_lock[i]);
    *(void **)&g_real_dlopen = dlsym(RTLD_DEFAULT, "dlopen");
    if (g_real_dlopen && g_nhooks < MAX_HOOKS)
        g_hooks[g_nhooks++] = (hook){"dlopen", (void *)attach_dlopen, (void *)g_real_dlopen};
    /* A thread of an earlier attach may still be ending (it notices the
     * stop within a second). */
    for (int i = 0; i < 2000 && hs_control_running(); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    hs_g.exiting = false;
    hs_g.dumps = 0;
    hs_g.exit_numbered = false;
    hs_g.attached = true;
    if (hs_agent_start_config(&c) != 0) {
        hs_g.attached = false;
        rc = HS_ATTACH_START_FAILED;
        goto out;
    }
    pthread_mutex_lock(&g_lock);
    g_npatches = 0;
    g_armed = 1;
    dl_iterate_phdr(patch_module, NULL);
    pthread_mutex_unlock(&g_lock);
    g_attached = 1;
    rc = (long)g_npatches;
out:
    hs_self.in_agent--;
    return rc;
}

/* How many entries are rewritten now (tests, `hotspur attach` output). */
HS_EXPORT long hotspur_attach_patched(const char *unused)
{
    (void)unused;
    pthread_mutex_lock(&g_lock);
    long n = 0;
    for (size_t i = 0; i < g_npatches; i++)
        n += __atomic_load_n(g_patches[i].slot, __ATOMIC_ACQUIRE) == g_patches[i].hook;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* The write after a detach, on a thread of its own: the thread the
 * injector stopped to call hotspur_attach_stop is released at once instead
 * of waiting for the symbolization (hundreds of milliseconds). */
static void *stop_main(void *arg)
{
    char *note = arg;
    hs_self.in_agent = 1;
    hs_agent_final_write(); /* stops the samplers and the agent thread */
    FILE *f = NULL;
    char tmp[PATH_MAX + 8];
    if (note && note[0] == '/' && snprintf(tmp, sizeof tmp, "%s.tmp", note) < (int)sizeof tmp)
        f = fopen(tmp, "we");
    if (f) { /* where the command learns the file names; renamed when complete */
        fprintf(f, "output=%s\nheap=%d\nlock=%d\nleaks=%d\n", hs_g.cfg.output, hs_g.cfg.heap, hs_g.cfg.lock,
                hs_g.cfg.leaks);
        if (hs_g.cfg.continuous) { /* the uploads, ended by hs_upload_exit */
            char up[256];
            hs_upload_status(up, sizeof up);
            fprintf(f, "uploads=%s\n", up[0] == ' ' ? up + 1 : up);
        }
        fclose(f);
    }
    hs_g.attached = false;
    atomic_store(&g_attached, 0); /* a new attach may start */
    if (f)
        rename(tmp, note);
    free(note);
    return NULL;
}

HS_EXPORT long hotspur_attach_stop(const char *note)
{
    int expect = 1;
    if (!atomic_compare_exchange_strong(&g_attached, &expect, 2)) /* 2: stopping */
        return HS_ATTACH_NOT_ATTACHED;
    hs_self.in_agent++;
    pthread_mutex_lock(&g_lock);
    g_armed = 0;
    dl_iterate_phdr(restore_module, NULL);
    g_npatches = 0;
    pthread_mutex_unlock(&g_lock);
    /* The alternate signal stack the agent gave this thread at the attach
     * (when the detach stops the same thread: usually, the main one). */
    hs_sampler_altstack_release();
    char *arg = note ? strdup(note) : NULL;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread never takes the program's signals */
    pthread_t t;
    int rc = hs_agent_thread_create(&t, stop_main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        pthread_detach(t);
    else
        stop_main(arg); /* no thread: write here */
    hs_self.in_agent--;
    return HS_ATTACH_OK;
}
