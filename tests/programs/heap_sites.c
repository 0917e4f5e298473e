/* heap_sites.c — allocation sites whose bytes and objects are known by
 * construction, for the heap profiler's tests (tests/integration/heap_*.sh).
 *
 *   heap_sites exact     few thousand allocations of every kind (exact mode)
 *   heap_sites sampled   ~880 MB allocated, ~240 MB kept (sampled mode)
 *   heap_sites roots     blocks reachable only from the roots a leak checker
 *                        must scan besides data/bss: the main thread's TLS, a
 *                        live thread's stack and its TLS (threads still
 *                        running at exit); and one real leak
 *
 * Every site is a noinline function named site_* that itself calls the
 * allocator (so it is the leaf frame of its allocations: no tail calls, the
 * result is always used after the call), and counts what it does. At the end
 * the program prints its truth table, one line per site:
 *
 *   site NAME ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES LEAK_OBJECTS LEAK_BYTES
 *
 * "inuse" is what is still allocated when main returns (the profile written
 * at exit), "leak" the part of it that nothing points to any more.
 *
 * How the truth counts:
 * - sizes are the requested sizes (not malloc_usable_size);
 * - calloc(n, s) is one object of n*s bytes;
 * - realloc(p, n) with n > 0 is, as in pprof/Go and heaptrack, a free of p
 *   (charged to the site that allocated p) plus one allocation of n bytes at
 *   the realloc's own stack, whether or not the block moved; realloc(NULL, n)
 *   and reallocarray(NULL, k, s) are plain allocations. No realloc here has
 *   n == 0.
 * - posix_memalign / aligned_alloc / memalign / valloc count their size,
 *   not the alignment padding.
 * Kept blocks are reachable from globals (g_keep, directly, or through other
 * heap blocks: a linked list); leaked blocks are dropped pointers, in dedicated
 * site_leak_* functions, and the stack is scrubbed afterwards so no stale copy
 * of a leaked pointer survives in a dead stack slot.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone, no_icf)) /* no_icf: identical bodies stay apart */

struct site {
    const char *name;
    long alloc_objects, alloc_bytes, inuse_objects, inuse_bytes, leak_objects, leak_bytes;
};

enum {
    S_SMALL, S_LARGE, S_CALLOC, S_REALLOC_CHAIN, S_REALLOC_SRC, S_REALLOC_DST,
    S_REALLOCARRAY, S_POSIX_MEMALIGN, S_ALIGNED_ALLOC, S_MEMALIGN, S_VALLOC,
    S_STRDUP, S_LIST_KEPT, S_LEAK_MALLOC, S_LEAK_CALLOC, S_LEAK_LIST, S_MAIN_TLS,
    S_THREAD_STACK, S_THREAD_TLS, S_COUNT
};

static struct site g_sites[S_COUNT] = {
    [S_SMALL] = {"site_small", 0, 0, 0, 0, 0, 0},
    [S_LARGE] = {"site_large", 0, 0, 0, 0, 0, 0},
    [S_CALLOC] = {"site_calloc", 0, 0, 0, 0, 0, 0},
    [S_REALLOC_CHAIN] = {"site_realloc_chain", 0, 0, 0, 0, 0, 0},
    [S_REALLOC_SRC] = {"site_realloc_src", 0, 0, 0, 0, 0, 0},
    [S_REALLOC_DST] = {"site_realloc_dst", 0, 0, 0, 0, 0, 0},
    [S_REALLOCARRAY] = {"site_reallocarray", 0, 0, 0, 0, 0, 0},
    [S_POSIX_MEMALIGN] = {"site_posix_memalign", 0, 0, 0, 0, 0, 0},
    [S_ALIGNED_ALLOC] = {"site_aligned_alloc", 0, 0, 0, 0, 0, 0},
    [S_MEMALIGN] = {"site_memalign", 0, 0, 0, 0, 0, 0},
    [S_VALLOC] = {"site_valloc", 0, 0, 0, 0, 0, 0},
    [S_STRDUP] = {"site_strdup", 0, 0, 0, 0, 0, 0},
    [S_LIST_KEPT] = {"site_list_kept", 0, 0, 0, 0, 0, 0},
    [S_LEAK_MALLOC] = {"site_leak_malloc", 0, 0, 0, 0, 0, 0},
    [S_LEAK_CALLOC] = {"site_leak_calloc", 0, 0, 0, 0, 0, 0},
    [S_LEAK_LIST] = {"site_leak_list", 0, 0, 0, 0, 0, 0},
    [S_MAIN_TLS] = {"site_main_tls", 0, 0, 0, 0, 0, 0},
    [S_THREAD_STACK] = {"site_thread_stack", 0, 0, 0, 0, 0, 0},
    [S_THREAD_TLS] = {"site_thread_tls", 0, 0, 0, 0, 0, 0},
};

/* Everything kept is reachable from here (or from a kept block). Not
 * static: GCC drops a static array that is only ever written. */
#define KEEP_MAX 200000
void *g_keep[KEEP_MAX];
size_t g_nkeep;
struct node {
    struct node *next;
    char payload[56];
};
struct node *g_list; /* site_list_kept: reachable only through the list */
static volatile uintptr_t g_sink;

static void die(const char *what)
{
    fprintf(stderr, "heap_sites: %s failed\n", what);
    exit(1);
}

static void keep(void *p)
{
    if (g_nkeep == KEEP_MAX)
        die("keep (table full)");
    g_keep[g_nkeep++] = p;
}

/* Touch a block so the compiler cannot elide the allocation, with a
 * non-zero byte so malloc+memset is not turned into calloc. */
static void touch(void *p, size_t n)
{
    if (!p)
        die("allocation");
    unsigned char *c = p;
    c[0] = 0x5a;
    c[n / 2] = 0x33;
    c[n - 1] = 0xa5;
    g_sink += (uintptr_t)c[n / 2];
}

static void count_alloc(int s, size_t n)
{
    g_sites[s].alloc_objects++;
    g_sites[s].alloc_bytes += (long)n;
}

static void count_kept(int s, size_t n)
{
    g_sites[s].inuse_objects++;
    g_sites[s].inuse_bytes += (long)n;
}

static void count_leak(int s, size_t n)
{
    count_kept(s, n);
    g_sites[s].leak_objects++;
    g_sites[s].leak_bytes += (long)n;
}

/* Keeps p (reachable from g_keep, counted in use at site s) or frees it. */
static void keep_or_free(int s, void *p, size_t n, int kept)
{
    if (kept) {
        keep(p);
        count_kept(s, n);
    } else {
        free(p);
    }
}

/* n small blocks of `size` bytes; every `keep_every`-th is kept. */
static NOINLINE void site_small(long n, size_t size, long keep_every)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(size);
        touch(p, size);
        count_alloc(S_SMALL, size);
        keep_or_free(S_SMALL, p, size, i % keep_every == 0);
    }
}

/* Blocks above the mmap threshold; the first `nkeep` are kept. */
static NOINLINE void site_large(long n, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(size);
        touch(p, size);
        count_alloc(S_LARGE, size);
        keep_or_free(S_LARGE, p, size, i < nkeep);
    }
}

static NOINLINE void site_calloc(long n, size_t nmemb, size_t size, long keep_every)
{
    for (long i = 0; i < n; i++) {
        char *p = calloc(nmemb, size);
        if (!p || p[nmemb * size - 1] != 0)
            die("calloc");
        touch(p, nmemb * size);
        count_alloc(S_CALLOC, nmemb * size);
        keep_or_free(S_CALLOC, p, nmemb * size, i % keep_every == 0);
    }
}

/* Chains realloc(NULL, 16) -> 32 -> ... -> `top` bytes; `nkeep` chains kept. */
static NOINLINE void site_realloc_chain(long chains, size_t top, long nkeep)
{
    for (long i = 0; i < chains; i++) {
        char *p = NULL;
        size_t size = 0;
        for (size_t n = 16; n <= top; n *= 2) {
            char *q = realloc(p, n);
            if (!q)
                die("realloc");
            if (size && (q[0] != 0x5a || q[size - 1] != (char)0xa5))
                die("realloc (contents lost)");
            touch(q, n);
            count_alloc(S_REALLOC_CHAIN, n);
            p = q;
            size = n;
        }
        keep_or_free(S_REALLOC_CHAIN, p, size, i < nkeep);
    }
}

/* site_realloc_src allocates, site_realloc_dst grows those blocks: the
 * source site ends with nothing in use, the destination keeps them all. */
static NOINLINE void site_realloc_src(char **v, long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        v[i] = malloc(size);
        touch(v[i], size);
        count_alloc(S_REALLOC_SRC, size);
    }
}

static NOINLINE void site_realloc_dst(char **v, long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        char *q = realloc(v[i], size);
        touch(q, size);
        count_alloc(S_REALLOC_DST, size);
        keep(q);
        count_kept(S_REALLOC_DST, size);
        v[i] = NULL;
    }
}

static NOINLINE void site_reallocarray(long n, size_t nmemb, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        char *p = reallocarray(NULL, nmemb, size);
        touch(p, nmemb * size);
        count_alloc(S_REALLOCARRAY, nmemb * size);
        keep_or_free(S_REALLOCARRAY, p, nmemb * size, i < nkeep);
    }
}

static NOINLINE void site_posix_memalign(long n, size_t align, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (posix_memalign(&p, align, size) != 0 || ((uintptr_t)p & (align - 1)))
            die("posix_memalign");
        touch(p, size);
        count_alloc(S_POSIX_MEMALIGN, size);
        keep_or_free(S_POSIX_MEMALIGN, p, size, i < nkeep);
    }
}

static NOINLINE void site_aligned_alloc(long n, size_t align, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        void *p = aligned_alloc(align, size);
        if (!p || ((uintptr_t)p & (align - 1)))
            die("aligned_alloc");
        touch(p, size);
        count_alloc(S_ALIGNED_ALLOC, size);
        keep_or_free(S_ALIGNED_ALLOC, p, size, i < nkeep);
    }
}

static NOINLINE void site_memalign(long n, size_t align, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        void *p = memalign(align, size);
        if (!p || ((uintptr_t)p & (align - 1)))
            die("memalign");
        touch(p, size);
        count_alloc(S_MEMALIGN, size);
        keep_or_free(S_MEMALIGN, p, size, i < nkeep);
    }
}

static NOINLINE void site_valloc(long n, size_t size, long nkeep)
{
    for (long i = 0; i < n; i++) {
        void *p = valloc(size);
        if (!p || ((uintptr_t)p & 4095))
            die("valloc");
        touch(p, size);
        count_alloc(S_VALLOC, size);
        keep_or_free(S_VALLOC, p, size, i < nkeep);
    }
}

/* An allocation made inside libc: the stack is malloc <- strdup <- here. */
static NOINLINE void site_strdup(long n, long nkeep)
{
    static const char text[] = "a string that libc copies with malloc"; /* 38 bytes with NUL */
    for (long i = 0; i < n; i++) {
        char *p = strdup(text);
        if (!p)
            die("strdup");
        g_sink += (uintptr_t)p[3];
        count_alloc(S_STRDUP, sizeof text);
        keep_or_free(S_STRDUP, p, sizeof text, i < nkeep);
    }
}

/* A linked list reachable only through its head in a global: still
 * reachable, not a leak, although no root points at the inner nodes. */
static NOINLINE void site_list_kept(long n)
{
    for (long i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        touch(x, sizeof *x);
        x->next = g_list;
        g_list = x;
        count_alloc(S_LIST_KEPT, sizeof *x);
        count_kept(S_LIST_KEPT, sizeof *x);
    }
}

/* Leaks: the pointers are dropped. */
static NOINLINE void site_leak_malloc(long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(size);
        touch(p, size);
        count_alloc(S_LEAK_MALLOC, size);
        count_leak(S_LEAK_MALLOC, size);
        __asm__ volatile("" : : "r"(p) : "memory");
    }
}

static NOINLINE void site_leak_calloc(long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        char *p = calloc(1, size);
        touch(p, size);
        count_alloc(S_LEAK_CALLOC, size);
        count_leak(S_LEAK_CALLOC, size);
        __asm__ volatile("" : : "r"(p) : "memory");
    }
}

/* A whole list lost with its head: every node is unreachable. */
static NOINLINE void site_leak_list(long n)
{
    struct node *head = NULL;
    for (long i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        touch(x, sizeof *x);
        x->next = head;
        head = x;
        count_alloc(S_LEAK_LIST, sizeof *x);
        count_leak(S_LEAK_LIST, sizeof *x);
    }
    __asm__ volatile("" : : "r"(head) : "memory");
}

/* Overwrite the dead part of the stack where the leak sites ran, so the
 * only copies of the leaked pointers are gone. */
static NOINLINE void scrub_stack(void)
{
    volatile char buf[64 * 1024];
    memset((char *)buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

static NOINLINE void leak_some(long scale)
{
    site_leak_malloc(7 * scale, 333);
    site_leak_calloc(3 * scale, 12345);
    site_leak_list(10 * scale);
}

/* Roots other than data/bss. */
static __thread void *volatile t_keep; /* volatile: the store must not be dropped */

static NOINLINE void site_main_tls(size_t size)
{
    t_keep = malloc(size);
    touch(t_keep, size);
    count_alloc(S_MAIN_TLS, size);
    count_kept(S_MAIN_TLS, size);
}

static NOINLINE void *site_thread_stack(size_t size)
{
    void *p = malloc(size);
    touch(p, size);
    count_alloc(S_THREAD_STACK, size);
    count_kept(S_THREAD_STACK, size);
    return p;
}

static NOINLINE void site_thread_tls(size_t size)
{
    t_keep = malloc(size);
    touch(t_keep, size);
    count_alloc(S_THREAD_TLS, size);
    count_kept(S_THREAD_TLS, size);
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready, g_never;

/* Keeps one block on its stack and one in its TLS, then waits forever: the
 * process exits with this thread still running. */
static void *holder(void *arg)
{
    (void)arg;
    void *volatile on_stack = site_thread_stack(4444);
    site_thread_tls(5555);
    pthread_mutex_lock(&g_mu);
    g_ready = 1;
    pthread_cond_broadcast(&g_cv);
    while (!g_never)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    g_sink += (uintptr_t)on_stack;
    return NULL;
}

static void run_roots(void)
{
    site_main_tls(3333);
    pthread_t t;
    if (pthread_create(&t, NULL, holder, NULL) != 0)
        die("pthread_create");
    pthread_mutex_lock(&g_mu);
    while (!g_ready)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    leak_some(1);
    scrub_stack();
}

static void run_exact(void)
{
    static char *moving[20];
    site_small(1000, 24, 3);                   /* 1000 x 24 B, 334 kept */
    site_large(8, 1 << 20, 3);                 /* 8 x 1 MiB, 3 kept */
    site_calloc(50, 100, 40, 5);               /* 50 x 4000 B, 10 kept */
    site_realloc_chain(10, 64 * 1024, 2);      /* 10 chains 16 B..64 KiB, 2 kept */
    site_realloc_src(moving, 20, 100);         /* 20 x 100 B ... */
    site_realloc_dst(moving, 20, 5000);        /* ... grown to 5000 B, all kept */
    site_reallocarray(12, 30, 10, 4);          /* 12 x 300 B, 4 kept */
    site_posix_memalign(30, 64, 200, 5);       /* 30 x 200 B @64, 5 kept */
    site_aligned_alloc(10, 4096, 8192, 4);     /* 10 x 8 KiB @4096, 4 kept */
    site_memalign(10, 256, 1000, 2);           /* 10 x 1000 B @256, 2 kept */
    site_valloc(6, 3000, 1);                   /* 6 x 3000 B @page, 1 kept */
    site_strdup(40, 15);                       /* 40 x 38 B via strdup, 15 kept */
    site_list_kept(50);                        /* 50 x 64 B, reachable via g_list */
    leak_some(1);
    scrub_stack();
}

/* ~880 MB allocated, ~243 MB kept, sized so that sampling at the default
 * 512 KiB rate gives totals and shares with a few % standard deviation. */
static void run_sampled(void)
{
    site_small(8000000, 24, 64);               /* 192 MB, 3 MB kept */
    site_calloc(60000, 1000, 4, 8);            /* 240 MB, 30 MB kept */
    site_large(150, 2 << 20, 100);             /* 315 MB, 210 MB kept */
    site_realloc_chain(1000, 64 * 1024, 0);    /* 131 MB, none kept */
    leak_some(1);
    scrub_stack();
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "exact") != 0 && strcmp(argv[1], "sampled") != 0 &&
                      strcmp(argv[1], "roots") != 0)) {
        fprintf(stderr, "usage: heap_sites exact|sampled|roots\n");
        return 2;
    }
    /* stdout's buffer is allocated now, before any site runs, so that no
     * block allocated later can hold a stale copy of a leaked pointer */
    printf("heap_sites %s\n", argv[1]);
    fflush(stdout);
    if (strcmp(argv[1], "exact") == 0)
        run_exact();
    else if (strcmp(argv[1], "roots") == 0)
        run_roots();
    else
        run_sampled();
    long ab = 0, ib = 0, lb = 0;
    for (int s = 0; s < S_COUNT; s++) {
        const struct site *x = &g_sites[s];
        printf("site %s %ld %ld %ld %ld %ld %ld\n", x->name, x->alloc_objects, x->alloc_bytes,
               x->inuse_objects, x->inuse_bytes, x->leak_objects, x->leak_bytes);
        ab += x->alloc_bytes;
        ib += x->inuse_bytes;
        lb += x->leak_bytes;
    }
    printf("total alloc_bytes %ld inuse_bytes %ld leak_bytes %ld\n", ab, ib, lb);
    return 0;
}
