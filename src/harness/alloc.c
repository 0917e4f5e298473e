/* alloc.c — counting allocations in the measured loop (alloc.h).
 *
 * The harness library defines malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc; linked into
 * the benchmark program they come before libc's, and C++ operator new and
 * delete reach them through libstdc++, which allocates with malloc. Each
 * call adds to thread-local counters (initial-exec TLS: no allocation on
 * first touch) when the thread is measuring, then forwards to the next
 * definition found with dlsym(RTLD_NEXT). dlsym itself may allocate before
 * the real functions are known: those calls are served from a static
 * bootstrap arena, which free() recognizes and ignores — the approach of the
 * agent's heap hooks (src/agent/heap.c). A realloc counts as one allocation
 * of its new size; frees are not counted.
 *
 * Under AddressSanitizer the sanitizer owns malloc; the counts come from
 * its allocation hook (__sanitizer_install_malloc_and_free_hooks) instead. */
#define _GNU_SOURCE
#include "harness/alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int on;
    uint64_t n, bytes;
} counters;

static __thread counters tls_c __attribute__((tls_model("initial-exec")));
static _Atomic int g_seen; /* an allocation went through us */

static inline void count(size_t size)
{
    counters *c = &tls_c;
    if (c->on) {
        c->n++;
        c->bytes += size;
    }
}

void hs_alloc_begin(void)
{
    tls_c.n = tls_c.bytes = 0;
    tls_c.on = 1;
}

void hs_alloc_end(uint64_t *n, uint64_t *bytes)
{
    tls_c.on = 0;
    *n = tls_c.n;
    *bytes = tls_c.bytes;
}

void hs_alloc_pause(void)
{
    tls_c.on = 0;
}

void hs_alloc_resume(void)
{
    tls_c.on = 1;
}

int hs_alloc_active(void)
{
    return atomic_load(&g_seen);
}

#if defined(__SANITIZE_ADDRESS__)

void __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
                                                void (*)(const volatile void *));

static void on_malloc(const volatile void *p, size_t size)
{
    (void)p;
    atomic_store_explicit(&g_seen, 1, memory_order_relaxed);
    count(size);
}

static void on_free(const volatile void *p)
{
    (void)p;
}

__attribute__((constructor)) static void install_hooks(void)
{
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}

#else

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void *(*r_memalign)(size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);

static _Alignas(64) char g_boot[1 << 14];
static _Atomic size_t g_boot_used;
static _Atomic int g_resolving;

static void *boot_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    size_t off = atomic_fetch_add(&g_boot_used, size);
    return off + size <= sizeof g_boot ? g_boot + off : NULL; /* static: zeroed */
}

static int is_boot(const void *p)
{
    return (const char *)p >= g_boot && (const char *)p < g_boot + sizeof g_boot;
}

static void resolve(void)
{
    if (r_malloc && r_free)
        return;
    atomic_store(&g_resolving, 1);
    r_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    r_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    r_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    r_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    r_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    r_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    r_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    r_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    r_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    atomic_store(&g_seen, 1);
    atomic_store(&g_resolving, 0);
}

/* Resolve on first use; NULL while dlsym runs (caller uses the arena). */
#define NEED(fn)                                                                                   \
    do {                                                                                           \
        if (!(fn)) {                                                                               \
            if (atomic_load(&g_resolving))                                                         \
                break;                                                                             \
            resolve();                                                                             \
        }                                                                                          \
    } while (0)

void *malloc(size_t size)
{
    NEED(r_malloc);
    if (!r_malloc)
        return boot_alloc(size);
    void *p = r_malloc(size);
    if (p)
        count(size);
    return p;
}

void free(void *p)
{
    if (!p || is_boot(p))
        return;
    NEED(r_free);
    if (r_free)
        r_free(p);
}

void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    NEED(r_calloc);
    if (!r_calloc)
        return boot_alloc(total);
    void *p = r_calloc(n, size);
    if (p)
        count(total);
    return p;
}

void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (is_boot(p)) {
        void *q = malloc(size);
        size_t avail = (size_t)(g_boot + sizeof g_boot - (char *)p);
        if (q)
            memcpy(q, p, size < avail ? size : avail);
        return q;
    }
    NEED(r_realloc);
    if (!r_realloc) {
        errno = ENOMEM;
        return NULL;
    }
    void *q = r_realloc(p, size);
    if (q && size)
        count(size);
    return q;
}

void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    NEED(r_posix_memalign);
    if (!r_posix_memalign)
        return ENOMEM;
    int rc = r_posix_memalign(out, align, size);
    if (rc == 0)
        count(size);
    return rc;
}

void *aligned_alloc(size_t align, size_t size)
{
    NEED(r_aligned_alloc);
    if (!r_aligned_alloc)
        return NULL;
    void *p = r_aligned_alloc(align, size);
    if (p)
        count(size);
    return p;
}

void *memalign(size_t align, size_t size)
{
    NEED(r_memalign);
    if (!r_memalign)
        return NULL;
    void *p = r_memalign(align, size);
    if (p)
        count(size);
    return p;
}

void *valloc(size_t size)
{
    NEED(r_valloc);
    if (!r_valloc)
        return NULL;
    void *p = r_valloc(size);
    if (p)
        count(size);
    return p;
}

void *pvalloc(size_t size)
{
    NEED(r_pvalloc);
    if (!r_pvalloc)
        return NULL;
    void *p = r_pvalloc(size);
    if (p) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        count((size + page - 1) / page * page);
    }
    return p;
}

#endif
