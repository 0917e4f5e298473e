/* heap.c — the heap profiler.
 *
 * The whole malloc family is interposed and forwards to the next allocator
 * (found with dlsym(RTLD_NEXT); calls made while dlsym itself runs are served
 * from a static bootstrap arena). C++ operator new/new[]/delete/delete[] in
 * all their sized, aligned and nothrow variants reach us through libstdc++,
 * which implements them with malloc, aligned_alloc and free.
 *
 * The fast path. Sampling is Poisson by bytes like Go and tcmalloc: each
 * thread counts down a random exponential number of bytes (mean = rate, in
 * initial-exec TLS) and only the allocation that takes it below zero goes
 * further; rate 1 records every one. malloc always counts down (the heap
 * profile off, it crosses once per MiB and goes on) and jumps to the real
 * allocator: the subtraction, a branch and one indirect jump, no lock, no
 * clock, no table, no second jump through a pointer chosen by the state
 * (which cost more time than its one instruction). free is one indirect
 * jump through such a pointer: the real allocator's free while no sampled
 * block can be out, else the look at the filter below. (free looking at the
 * filter itself, one jump less, measured no faster with the profile on and
 * 1.5-3% slower with it off: docs/agent.md.) calloc counts down like malloc
 * and realloc also reads the filter byte of its block; both jump to the
 * allocator unless one says otherwise.
 *
 * Recording unwinds the stack (the agent's own frames are dropped), counts it
 * in a lock-free stack table and puts the block in a lock-free live table
 * (address -> stack, size), so free() and realloc() can take it out again.
 * The blocks are the real allocator's own (no header of ours), so
 * realloc, memalign's alignment and malloc_usable_size are what the
 * allocator makes of them. free() must tell the rare sampled block from the
 * rest without a table probe: a 64 KiB filter of counters indexed by bits
 * 4..19 of the address says "none here" for nearly every unsampled block
 * (one load and a branch); only a non-zero counter leads to the live table.
 * Bootstrap blocks are counted in the filter too, so they never reach the
 * real free. A block allocated before the heap profile started, or by
 * another allocator behind our back, is simply not in the table.
 * Values are unbiased at write time as pprof does: scale =
 * 1/(1-exp(-avg/rate)).
 *
 * The estimated in-use heap is tracked; whenever it passes the last peak by
 * 1% the per-stack in-use figures are copied, which gives the peak profile.
 * In exact mode the leak scan at exit marks every live block reachable from
 * the loaded modules' writable segments and the thread stacks; the rest leaked.
 */
#define _GNU_SOURCE
#include "agent/heap.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/draw.h"
#include "agent/sampler.h"

#define HS_EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SLOW __attribute__((noinline, cold))

/* ---- the filter of special blocks ----
 *
 * One byte per bucket of addresses (bits 4..19): how many sampled live
 * blocks or bootstrap blocks start in it. A counter that reaches 255 stays
 * there (its bucket always takes the slow path: correct, only slower). Written
 * with atomics on the slow paths; read with a plain load on free's fast path,
 * where a stale value is harmless: a block's own entry was made before the
 * program could see the block, so only other blocks' entries can be stale. */

#define FILTER_BUCKETS (1u << 16)
static uint8_t g_filter[FILTER_BUCKETS];

static inline uint8_t *bucket_of(const void *p)
{
    return &g_filter[((uintptr_t)p >> 4) & (FILTER_BUCKETS - 1)];
}

static void filter_add(const void *p)
{
    uint8_t *b = bucket_of(p);
    uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);
    while (v < 255 && !__atomic_compare_exchange_n(b, &v, (uint8_t)(v + 1), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void filter_sub(const void *p)
{
    uint8_t *b = bucket_of(p);
    uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);
    while (v > 0 && v < 255 && !__atomic_compare_exchange_n(b, &v, (uint8_t)(v - 1), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* ---- the real allocator ---- */

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void *(*r_memalign)(size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);

static _Alignas(64) char g_boot[1 << 16];
static _Atomic size_t g_boot_used;
static _Atomic int g_resolving;

static void *boot_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    size_t off = atomic_fetch_add(&g_boot_used, size);
    if (off + size > sizeof g_boot)
        return NULL;
    filter_add(g_boot + off); /* so that free() looks closer */
    return g_boot + off;      /* static: zeroed */
}

static int is_boot(const void *p)
{
    return (const char *)p >= g_boot && (const char *)p < g_boot + sizeof g_boot;
}

/* What the interposed malloc and free jump to (see route()). */
static void *malloc_first(size_t size);
static void free_first(void *p);
static void *calloc_first(size_t n, size_t size);
static void *realloc_slow(void *p, size_t size);
static void *(*_Atomic p_malloc)(size_t) = malloc_first;
static void (*_Atomic p_free)(void *) = free_first;
static void *(*_Atomic p_calloc)(size_t, size_t) = calloc_first;
static void *(*_Atomic p_realloc)(void *, size_t) = realloc_slow;
static void route(void);

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
    atomic_store(&g_resolving, 0);
    if (r_malloc && r_free)
        route();
}

/* libm's exp, for the heap profiler only (the weight of a block of more
 * than 1/64 of the rate; the sampling draw has its own log, agent/draw.h):
 * loaded as it starts, so that a process profiling CPU alone never maps
 * libm (its loading and ifunc relocations were a tenth of the loader's
 * work at every start). */
static double (*m_exp)(double);

static int load_libm(void)
{
    void *h = m_exp ? NULL : dlopen(LIBM_SO, RTLD_NOW | RTLD_LOCAL);
    if (h)
        *(void **)&m_exp = dlsym(h, "exp");
    if (m_exp)
        return 0;
    fprintf(stderr, "hotspur: cannot load %s for the heap profiler: %s\n", LIBM_SO, h ? "no exp" : dlerror());
    return -1;
}

/* ---- state ---- */

typedef struct {
    _Atomic uint64_t key; /* block address; 0 empty, 1 deleted */
    uint64_t data;        /* stack entry index (24 bits) << 40 | size (40 bits) */
} live_slot;

#define KEY_EMPTY 0
#define KEY_DELETED 1
#define SIZE_BITS 40
#define SIZE_MASK ((1ull << SIZE_BITS) - 1)

static struct {
    _Atomic int on;
    int64_t rate;
    int exact; /* rate 1: every allocation */
    hs_stacktab tab;
    live_slot *live;   /* non-NULL once started: frees look for sampled blocks */
    uint64_t live_cap; /* power of two */
    _Atomic uint64_t untracked;
    /* peak */
    _Atomic int64_t inuse_est, next_snapshot;
    int64_t peak_est;
    int64_t *peak; /* 2 per entry: raw objects, raw bytes at the peak */
    pthread_mutex_t peak_lock;
    /* leaks */
    int64_t *leak; /* 2 per entry */
} H = {.peak_lock = PTHREAD_MUTEX_INITIALIZER};

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hs_heap_start(void)
{
    resolve();
    if (load_libm() != 0)
        return -1;
    if (H.live && !atomic_load(&g_boot_used)) {
        /* Started again (a second `hotspur attach`): what the first run
         * followed is not this one's. Nothing is routed here yet, and no
         * bootstrap block is out: the filter starts empty too. */
        memset(g_filter, 0, sizeof g_filter);
        atomic_store(&H.inuse_est, 0);
        atomic_store(&H.untracked, 0);
        H.peak_est = 0;
        H.leak = NULL;
    }
    H.rate = hs_g.cfg.heap_rate;
    H.exact = H.rate <= 1;
    uint64_t cap = 1024;
    while (cap < 2ull * hs_g.cfg.heap_max_live)
        cap <<= 1;
    /* Started again (a second `hotspur attach`): the tables of the first
     * run are reused when of the same size, their pages dropped (they read
     * as zeros again, and their memory goes back): a daemon attached to
     * over and over does not grow. They are never unmapped: a thread may
     * still be on its way through a hook it entered before the detach. */
    live_slot *live = NULL;
    if (H.live && H.live_cap == cap) {
        madvise(H.live, cap * sizeof(live_slot), MADV_DONTNEED);
        live = H.live;
    } else {
        if (H.live)
            madvise(H.live, H.live_cap * sizeof(live_slot), MADV_DONTNEED);
        live = map_zeroed(cap * sizeof(live_slot));
    }
    H.live_cap = cap;
    uint32_t pool = hs_g.cfg.max_stacks * 32u;
    if (H.tab.entries && H.tab.pool_cap == pool && H.peak) {
        hs_stacktab_clear(&H.tab);
        madvise(H.peak, (size_t)H.tab.cap * 2 * sizeof(int64_t), MADV_DONTNEED);
    } else {
        if (!live || hs_stacktab_init(&H.tab, hs_g.cfg.max_stacks, pool, 0) != 0)
            return -1;
        H.peak = map_zeroed((size_t)H.tab.cap * 2 * sizeof(int64_t));
    }
    if (!live || !H.peak)
        return -1;
    atomic_store(&H.next_snapshot, H.rate > 4096 ? H.rate : 4096);
    /* A malloc that comes before ours (e.g. AddressSanitizer's runtime,
     * preloaded first) would leave the heap profile silently empty. */
    const char *other = hs_agent_symbol_owner("malloc"); /* (python3's PLT stub is not one) */
    if (other && !hs_g.attached) { /* attached, libc's comes first: its GOT entries are rewritten */
        fprintf(stderr, "hotspur: malloc belongs to %s, which comes before the agent: the heap "
                        "profile will be empty\n", other);
    }
    H.live = live;
    atomic_store(&H.on, 1);
    route();
    /* This thread's next malloc draws its first interval; the other threads
     * that already run do when their idle countdown runs out (at most
     * IDLE_COUNTDOWN bytes later), new ones at their first malloc. */
    hs_self.heap_countdown = 0;
    return 0;
}

void hs_heap_stop(void)
{
    atomic_store(&H.on, 0);
    route();
}

void hs_heap_resume(void)
{
    if (H.live)
        atomic_store(&H.on, 1);
    route();
}

void hs_heap_after_fork(int on)
{
    pthread_mutex_init(&H.peak_lock, NULL); /* its holder may not have come along */
    if (H.live)
        atomic_store(&H.on, on);
    route();
}

hs_stacktab *hs_heap_table(void)
{
    return &H.tab;
}

uint64_t hs_heap_untracked(void)
{
    return atomic_load(&H.untracked);
}

/* ---- sampling ---- */

static uint64_t next_random(hs_thread *t)
{
    if (!t->rng) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
    }
    return hs_draw_random(&t->rng);
}

/* Bytes until the next sample: exponential with mean rate. */
static int64_t next_interval(hs_thread *t)
{
    return hs_draw_interval(next_random(t), (double)H.rate);
}

/* Count size off the thread's countdown; true when it goes below zero:
 * then crossed() decides. In unsigned arithmetic: a huge size (that fails
 * anyway) must not overflow. */
static inline int counts_down(size_t size)
{
    uint64_t c = (uint64_t)hs_self.heap_countdown - (uint64_t)size;
    hs_self.heap_countdown = (int64_t)c;
    return UNLIKELY((int64_t)c < 0);
}

/* The countdown went below zero: whether this allocation is a sample, and
 * the next interval drawn. A thread's first allocation finds its countdown
 * at zero and draws its first interval instead. */
static int crossed(void)
{
    hs_thread *t = &hs_self;
    if (!t->rng) {
        t->heap_countdown += next_interval(t);
        if (t->heap_countdown >= 0)
            return 0;
    }
    t->heap_countdown = next_interval(t);
    return 1;
}

/* Expected bytes represented by one sampled block of `size`: size / (1 -
 * exp(-x)), x = size / rate. For the usual block, far below the rate, the
 * series of x / (1 - exp(-x)) = 1 + x/2 + x^2/12 - x^4/720 ... stopped
 * at x^2 is exact to double precision well past x < 1/64 (the next term is
 * under 1e-10 of the value) and spares a call of exp at every sample and
 * at every free of one. */
static int64_t weight(uint64_t size)
{
    if (H.exact || size == 0)
        return (int64_t)size;
    double r = (double)H.rate, z = (double)size;
    if (z * 64.0 < r)
        return (int64_t)(r + z / 2.0 + z * z / (12.0 * r));
    double s = 1.0 / (1.0 - m_exp(-z / r));
    return (int64_t)(z * s);
}

/* ---- the live table ---- */

/* Where key's probe starts. Sampled, the blocks of one 4 KiB page of the
 * heap start in one 4 KiB page of the table (256 slots: bits 4..11 of the
 * address), at a page chosen by a hash of the heap page: the table's pages
 * touched follow the heap's, not one new page per sample (a first touch
 * of a page of the 2 MiB table cost more than the rest of a sample: on a
 * malloc/free loop over 35 KB of heap, 1.16x against 1.11x with the table
 * prefaulted, bench/heap_fastpath.sh). Sampled blocks are sparse, so a
 * page's slots are not crowded. In exact mode every block is in the table,
 * a heap page can fill its page of slots: there the whole address is
 * hashed. */
static inline uint64_t slot_of(uint64_t key)
{
    if (H.exact) {
        uint64_t h = key * 0x9e3779b97f4a7c15ull;
        return (h ^ (h >> 29)) & (H.live_cap - 1);
    }
    uint64_t page = (key >> 12) * 0x9e3779b97f4a7c15ull;
    return ((page >> 32) << 8 | ((key >> 4) & 0xff)) & (H.live_cap - 1);
}

static int live_insert(uint64_t key, uint32_t entry, uint64_t size)
{
    uint64_t i = slot_of(key);
    for (int probe = 0; probe < 256; probe++, i = (i + 1) & (H.live_cap - 1)) {
        uint64_t k = atomic_load_explicit(&H.live[i].key, memory_order_relaxed);
        if (k != KEY_EMPTY && k != KEY_DELETED)
            continue;
        if (!atomic_compare_exchange_strong(&H.live[i].key, &k, key))
            continue;
        H.live[i].data = ((uint64_t)entry << SIZE_BITS) | (size & SIZE_MASK);
        if (!H.exact)
            filter_add((const void *)(uintptr_t)key);
        return 0;
    }
    return -1;
}

/* Take key out; fills entry and size. 0 if it was there. */
static int live_remove(uint64_t key, uint32_t *entry, uint64_t *size)
{
    uint64_t i = slot_of(key);
    for (int probe = 0; probe < 256; probe++, i = (i + 1) & (H.live_cap - 1)) {
        uint64_t k = atomic_load_explicit(&H.live[i].key, memory_order_acquire);
        if (k == KEY_EMPTY)
            return -1;
        if (k != key)
            continue;
        uint64_t d = H.live[i].data;
        *entry = (uint32_t)(d >> SIZE_BITS);
        *size = d & SIZE_MASK;
        atomic_store_explicit(&H.live[i].key, KEY_DELETED, memory_order_release);
        if (!H.exact)
            filter_sub((const void *)(uintptr_t)key);
        return 0;
    }
    return -1;
}

/* ---- recording ---- */

static void snapshot_peak(int64_t now)
{
    if (pthread_mutex_trylock(&H.peak_lock) != 0)
        return; /* someone else is taking it */
    if (now > H.peak_est) {
        uint32_t n = atomic_load(&H.tab.n_used);
        for (uint32_t i = 0; i < n; i++) {
            hs_stack_entry *e = hs_stacktab_nth(&H.tab, i);
            if (!e)
                continue;
            size_t idx = (size_t)(e - H.tab.entries);
            H.peak[2 * idx] = atomic_load(&e->values[0]) - atomic_load(&e->values[2]);
            H.peak[2 * idx + 1] = atomic_load(&e->values[1]) - atomic_load(&e->values[3]);
        }
        H.peak_est = now;
        int64_t step = now / 100 > H.rate ? now / 100 : H.rate;
        atomic_store(&H.next_snapshot, now + (step > 4096 ? step : 4096));
    }
    pthread_mutex_unlock(&H.peak_lock);
}

/* Record block p of size as allocated here (unless the agent allocates).
 * Not cold: exact mode comes here for every allocation. */
static __attribute__((noinline)) void record_alloc_at(void *p, size_t size, const hs_call_regs *c)
{
    hs_thread *t = &hs_self;
    if (t->in_agent)
        return;
    atomic_thread_fence(memory_order_acquire); /* pairs with route() */
    t->in_agent++;
    /* The block's slot in the live table is rarely in cache when a sample
     * is rare: its line is fetched while the stack is unwound. */
    __builtin_prefetch(&H.live[slot_of((uint64_t)(uintptr_t)p)], 1);
    hs_stack_entry *e = hs_agent_intern_call(&H.tab, c);
    if (e) {
        uint32_t idx = (uint32_t)(e - H.tab.entries);
        atomic_fetch_add_explicit(&e->values[0], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->values[1], (int64_t)size, memory_order_relaxed);
        if (live_insert((uint64_t)(uintptr_t)p, idx, size) == 0) {
            int64_t w = weight(size);
            int64_t now = atomic_fetch_add(&H.inuse_est, w) + w;
            if (now > atomic_load_explicit(&H.next_snapshot, memory_order_relaxed))
                snapshot_peak(now);
        } else { /* can't follow its free: count it freed now */
            atomic_fetch_add(&H.untracked, 1);
            atomic_fetch_add_explicit(&e->values[2], 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&e->values[3], (int64_t)size, memory_order_relaxed);
        }
    }
    t->in_agent--;
}

static void record_alloc(void *p, size_t size)
{
    record_alloc_at(p, size, NULL);
}

/* After an allocation by any function but malloc (which has its own). */
static inline void after_alloc(void *p, size_t size)
{
    if (p && atomic_load_explicit(&H.on, memory_order_relaxed) && (H.exact || (counts_down(size) && crossed())))
        record_alloc(p, size);
}

/* Forget p if it was sampled; returns its record for realloc's undo. */
static int before_free(void *p, uint32_t *entry, uint64_t *size)
{
    if (!H.live || (!H.exact && !*bucket_of(p)) || live_remove((uint64_t)(uintptr_t)p, entry, size) != 0)
        return -1;
    if (*entry < H.tab.cap) {
        hs_stack_entry *e = &H.tab.entries[*entry];
        atomic_fetch_add_explicit(&e->values[2], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->values[3], (int64_t)*size, memory_order_relaxed);
    }
    atomic_fetch_sub(&H.inuse_est, weight(*size));
    return 0;
}

static void undo_free(void *p, uint32_t entry, uint64_t size)
{
    if (entry < H.tab.cap && live_insert((uint64_t)(uintptr_t)p, entry, size) == 0) {
        hs_stack_entry *e = &H.tab.entries[entry];
        atomic_fetch_sub(&e->values[2], 1);
        atomic_fetch_sub(&e->values[3], (int64_t)size);
        atomic_fetch_add(&H.inuse_est, weight(size));
    }
}

/* ---- what malloc and free jump to ---- */

/* What a thread's countdown is set to while the heap profile has not
 * started (or never will): its next malloc of a MiB comes back here. */
#define IDLE_COUNTDOWN (1 << 20)

/* malloc's countdown went below zero: whether this allocation is recorded,
 * with the countdown set for the next. While the profile is paused the
 * countdown keeps being drawn from the same distribution, so that when it
 * resumes the bytes to the next sample are as if it never stopped (the
 * exponential has no memory); in exact mode it is -1, so every call comes
 * here. */
static int malloc_decides(void)
{
    hs_thread *t = &hs_self;
    int on = atomic_load_explicit(&H.on, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire); /* the tables and rate of hs_heap_start */
    if (!on) {
        t->heap_countdown = !H.live ? IDLE_COUNTDOWN : H.exact ? -1 : next_interval(t);
        return 0;
    }
    if (H.exact) {
        t->heap_countdown = -1;
        return 1;
    }
    return crossed();
}

/* malloc's countdown crossed zero; c: the registers of malloc's call
 * site, so that a sample's stack starts there instead of stepping through
 * the agent's frames (half of a sample's instructions: 857, were 1678). */
void *hs_heap_malloc_crossed(size_t size, const hs_call_regs *c);
__attribute__((visibility("hidden"), used, noinline, cold)) void *hs_heap_malloc_crossed(size_t size,
                                                                                        const hs_call_regs *c)
{
    void *p = atomic_load_explicit(&p_malloc, memory_order_relaxed)(size);
    if (p && malloc_decides())
        record_alloc_at(p, size, c);
    return p;
}

#if defined(__x86_64__)
_Static_assert(offsetof(hs_call_regs, pc) == 0 && offsetof(hs_call_regs, sp) == 8 &&
                   offsetof(hs_call_regs, rbp) == 16 && offsetof(hs_call_regs, rbx) == 24 &&
                   offsetof(hs_call_regs, r12) == 32 && offsetof(hs_call_regs, r15) == 56,
               "hs_heap_malloc_slow writes hs_call_regs in this layout");
/* malloc's slow path enters here: malloc jumps to it (a tail call), so at
 * its entry the return address on the stack and the callee-saved registers
 * are those of malloc's caller. It writes them as an hs_call_regs on its
 * stack and calls hs_heap_malloc_crossed with them. (Were malloc to call
 * it instead, e.g. unoptimized, the registers are those of a call site in
 * malloc: still right to unwind from, with one frame of the agent's that
 * hs_agent_hide_frames drops.) */
__attribute__((visibility("hidden"))) void *hs_heap_malloc_slow(size_t size);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl hs_heap_malloc_slow\n"
        ".hidden hs_heap_malloc_slow\n"
        ".type hs_heap_malloc_slow, @function\n"
        "hs_heap_malloc_slow:\n"
        ".cfi_startproc\n"
        "sub $72, %rsp\n" /* 8 slots + 8: the call below finds the stack aligned */
        ".cfi_adjust_cfa_offset 72\n"
        "mov 72(%rsp), %rax\n" /* pc: the return address */
        "mov %rax, 0(%rsp)\n"
        "lea 80(%rsp), %rax\n" /* sp: the caller's once it returns */
        "mov %rax, 8(%rsp)\n"
        "mov %rbp, 16(%rsp)\n"
        "mov %rbx, 24(%rsp)\n"
        "mov %r12, 32(%rsp)\n"
        "mov %r13, 40(%rsp)\n"
        "mov %r14, 48(%rsp)\n"
        "mov %r15, 56(%rsp)\n"
        "mov %rsp, %rsi\n"
        "call hs_heap_malloc_crossed\n"
        "add $72, %rsp\n"
        ".cfi_adjust_cfa_offset -72\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size hs_heap_malloc_slow, .-hs_heap_malloc_slow\n");
#else
static SLOW void *hs_heap_malloc_slow(size_t size)
{
    return hs_heap_malloc_crossed(size, NULL);
}
#endif

/* A free that can't be the real allocator's at once: NULL, a bootstrap
 * block, a sampled block. */
static SLOW void free_special(void *p)
{
    if (!p || is_boot(p))
        return;
    atomic_thread_fence(memory_order_acquire); /* pairs with route() */
    uint32_t entry;
    uint64_t size;
    before_free(p, &entry, &size);
    r_free(p);
}

/* Sampled mode (or bootstrap blocks out): one look at the filter. */
static void free_filtered(void *p)
{
    if (UNLIKELY(*bucket_of(p)))
        free_special(p);
    else
        r_free(p);
}

/* The first calls, before the real allocator is known. */
static void *malloc_first(size_t size)
{
    if (atomic_load(&g_resolving))
        return boot_alloc(size);
    resolve();
    if (!r_malloc)
        return boot_alloc(size);
    return r_malloc(size);
}

static void free_first(void *p)
{
    if (!p || is_boot(p))
        return;
    resolve();
    void (*f)(void *) = atomic_load(&p_free);
    if (f != free_first)
        f(p);
    else if (r_free)
        r_free(p);
}

/* Point free at what the state asks: the real allocator's function while
 * no sampled or bootstrap block can be out. Free keeps looking for sampled
 * blocks after the profile is paused. malloc's pointer names the real
 * allocator from the moment it is known (its countdown does the rest). */
static void route(void)
{
    void (*f)(void *) = r_free;
    if (H.live && H.exact)
        f = free_special; /* every block is in the live table */
    else if (H.live || atomic_load(&g_boot_used))
        f = free_filtered;
    /* Release: the tables set up before are seen by the slow paths, which
     * take an acquire fence after malloc's and free's relaxed loads. */
    if (r_malloc)
        atomic_store_explicit(&p_malloc, r_malloc, memory_order_release);
    if (r_calloc)
        atomic_store_explicit(&p_calloc, r_calloc, memory_order_release);
    if (r_realloc) /* in exact mode every block is in the live table */
        atomic_store_explicit(&p_realloc, H.live && H.exact ? realloc_slow : r_realloc, memory_order_release);
    atomic_store_explicit(&p_free, f, memory_order_release);
}

/* calloc's first calls, before the real allocator is known (dlsym's own
 * come while it is being looked up: from the bootstrap arena, zeroed). */
static void *calloc_first(size_t n, size_t size)
{
    if (!r_calloc) {
        if (atomic_load(&g_resolving))
            return boot_alloc(n * size); /* calloc_slow checked the product */
        resolve();
        if (!r_calloc)
            return boot_alloc(n * size);
    }
    return r_calloc(n, size);
}

/* calloc's countdown crossed zero (or n * size overflows). */
static SLOW void *calloc_slow(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = atomic_load_explicit(&p_calloc, memory_order_relaxed)(n, size);
    if (p && malloc_decides())
        record_alloc(p, total);
    return p;
}

/* realloc's slow path: its countdown crossed zero (realloc() counted size
 * down: a negative countdown says so), or p may be a sampled or bootstrap
 * block, or the profile is exact (every block is in the live table), or
 * the real allocator is not known yet. */
static SLOW void *realloc_slow(void *p, size_t size)
{
    int crossed = hs_self.heap_countdown < 0;
    if (!p) { /* a malloc, counted down already */
        void *q = atomic_load_explicit(&p_malloc, memory_order_relaxed)(size);
        if (q && crossed && malloc_decides())
            record_alloc(q, size);
        return q;
    }
    if (is_boot(p)) {
        void *q = malloc(size);
        size_t avail = (size_t)(g_boot + sizeof g_boot - (char *)p);
        if (q)
            memcpy(q, p, size < avail ? size : avail);
        return q;
    }
    if (!r_realloc)
        resolve();
    atomic_thread_fence(memory_order_acquire); /* pairs with route() */
    uint32_t entry;
    uint64_t old;
    int was = before_free(p, &entry, &old);
    void *q = r_realloc(p, size);
    if (!q && size != 0) { /* failed: p is still live */
        if (was == 0)
            undo_free(p, entry, old);
        return NULL;
    }
    if (q && crossed && malloc_decides())
        record_alloc(q, size);
    return q;
}

/* ---- the interposed functions ---- */

/* The countdown is the only test: it crosses zero once per sampling
 * interval when the profile is on, once per IDLE_COUNTDOWN bytes when it is
 * off, at every call in exact mode; then hs_heap_malloc_slow decides. Otherwise
 * one jump to the real allocator. (A second jump through a pointer chosen
 * by the state, as free has, cost more time than these three instructions;
 * so did a test of a flag before the countdown, which saves them when the
 * heap profile is off: bench/heap_fastpath.sh, docs/agent.md.) */
HS_EXPORT void *malloc(size_t size)
{
    if (counts_down(size))
        return hs_heap_malloc_slow(size);
    return atomic_load_explicit(&p_malloc, memory_order_relaxed)(size);
}

HS_EXPORT void free(void *p)
{
    atomic_load_explicit(&p_free, memory_order_relaxed)(p);
}

/* calloc and realloc count down like malloc and jump to the allocator
 * (tail calls: the return is the allocator's); only a crossing, an
 * overflowing calloc, a realloc of a block the filter marks (sampled or
 * bootstrap) and every realloc in exact mode take the slow paths below. */
HS_EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (UNLIKELY(__builtin_mul_overflow(n, size, &total)) || counts_down(total))
        return calloc_slow(n, size);
    return atomic_load_explicit(&p_calloc, memory_order_relaxed)(n, size);
}

HS_EXPORT void *realloc(void *p, size_t size)
{
    if (counts_down(size) || UNLIKELY(*bucket_of(p))) /* realloc_slow sees a crossing in the countdown */
        return realloc_slow(p, size);
    return atomic_load_explicit(&p_realloc, memory_order_relaxed)(p, size);
}

HS_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

HS_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (!r_posix_memalign)
        resolve();
    int rc = r_posix_memalign(out, align, size);
    if (rc == 0)
        after_alloc(*out, size);
    return rc;
}

HS_EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (!r_aligned_alloc)
        resolve();
    void *p = r_aligned_alloc(align, size);
    after_alloc(p, size);
    return p;
}

HS_EXPORT void *memalign(size_t align, size_t size)
{
    if (!r_memalign)
        resolve();
    void *p = r_memalign(align, size);
    after_alloc(p, size);
    return p;
}

HS_EXPORT void *valloc(size_t size)
{
    if (!r_valloc)
        resolve();
    void *p = r_valloc(size);
    after_alloc(p, size);
    return p;
}

HS_EXPORT void *pvalloc(size_t size)
{
    if (!r_pvalloc)
        resolve();
    void *p = r_pvalloc(size);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    after_alloc(p, (size + page - 1) / page * page);
    return p;
}

/* ---- reading the figures ---- */

static double scale_for(int64_t objs, int64_t bytes)
{
    if (H.rate <= 1 || objs <= 0 || bytes <= 0)
        return 1.0;
    double avg = (double)bytes / (double)objs;
    return 1.0 / (1.0 - m_exp(-avg / (double)H.rate));
}

int hs_heap_values(const hs_stack_entry *e, hs_heap_view view, const int64_t cur[4],
                   const int64_t base[4], int64_t out[4])
{
    size_t idx = (size_t)(e - H.tab.entries);
    double s = scale_for(cur[0], cur[1]);
    switch (view) {
    case HS_HEAP_ALL:
        out[0] = (int64_t)((double)(cur[0] - base[0]) * s);
        out[1] = (int64_t)((double)(cur[1] - base[1]) * s);
        out[2] = (int64_t)((double)(cur[0] - cur[2]) * s);
        out[3] = (int64_t)((double)(cur[1] - cur[3]) * s);
        return 4;
    case HS_HEAP_PEAK:
        out[0] = (int64_t)((double)H.peak[2 * idx] * s);
        out[1] = (int64_t)((double)H.peak[2 * idx + 1] * s);
        return 2;
    case HS_HEAP_LEAKS:
        out[0] = H.leak ? H.leak[2 * idx] : 0;
        out[1] = H.leak ? H.leak[2 * idx + 1] : 0;
        return 2;
    }
    return 0;
}

/* ---- the leak scan ----
 *
 * At exit, in exact mode: every live block is marked reachable from the
 * roots (the modules' writable segments, this thread's TLS, the live part
 * of each thread's stack and the registers of the other threads), then
 * transitively from marked blocks; the rest leaked. The other threads are
 * stopped for the scan (hs_sampler_stop_others) so that what they hold
 * does not move under it; while they are, the scan takes no lock one of
 * them may hold: its arrays come from mmap, not malloc, it sorts by
 * itself (qsort may malloc), and what needs the loader's lock (the
 * modules' segments, glibc's functions) is looked up before. */

typedef struct {
    uint64_t addr, size;
    uint32_t entry;
    uint32_t marked;
} block;

typedef struct {
    uint64_t lo, hi;
} addr_range;

typedef struct {
    block *b;
    size_t n;
    size_t *work;
    size_t nwork, capwork;
    addr_range *roots; /* the modules' writable segments and this thread's TLS */
    size_t nroots, caproots;
    int failed;
} scan_t;

/* Grow an mmap'd array *p of *cap elements of size bytes to hold one more. */
static int grow(void **p, size_t *cap, size_t size)
{
    size_t ncap = *cap ? *cap * 2 : 1024;
    void *q = *p ? mremap(*p, *cap * size, ncap * size, MREMAP_MAYMOVE) : map_zeroed(ncap * size);
    if (!q || q == MAP_FAILED)
        return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

static void unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

/* Heapsort by address: no allocation. */
static void sift(block *b, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && b[c + 1].addr > b[c].addr)
            c++;
        if (b[i].addr >= b[c].addr)
            return;
        block t = b[i];
        b[i] = b[c];
        b[c] = t;
        i = c;
    }
}

static void sort_blocks(block *b, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(b, i, n);
    for (size_t end = n; end > 1; end--) {
        block t = b[0];
        b[0] = b[end - 1];
        b[end - 1] = t;
        sift(b, 0, end - 1);
    }
}

static block *find_block(scan_t *s, uint64_t v)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v < s->b[mid].addr)
            hi = mid;
        else if (v >= s->b[mid].addr + (s->b[mid].size ? s->b[mid].size : 1))
            lo = mid + 1;
        else
            return &s->b[mid];
    }
    return NULL;
}

static void mark_word(scan_t *s, uint64_t v)
{
    block *b = find_block(s, v);
    if (!b || b->marked)
        return;
    b->marked = 1;
    if (s->nwork == s->capwork && grow((void **)&s->work, &s->capwork, sizeof *s->work) != 0) {
        s->failed = 1;
        return;
    }
    s->work[s->nwork++] = (size_t)(b - s->b);
}

/* Scan [lo, hi) that is known to be mapped and readable. Raw words of
 * stacks and blocks, redzones included: not for AddressSanitizer to check. */
__attribute__((no_sanitize_address)) static void scan_range(scan_t *s, uint64_t lo, uint64_t hi)
{
    lo = (lo + 7) & ~7ull;
    for (uint64_t a = lo; a + 8 <= hi; a += 8)
        mark_word(s, *(const uint64_t *)(uintptr_t)a);
}

/* Scan memory that may be partly unmapped, through process_vm_readv. */
static void scan_range_safe(scan_t *s, uint64_t lo, uint64_t hi)
{
    uint64_t buf[4096];
    lo = (lo + 7) & ~7ull;
    while (lo + 8 <= hi) {
        size_t want = hi - lo < sizeof buf ? (size_t)(hi - lo) & ~7ul : sizeof buf;
        struct iovec l = {buf, want}, r = {(void *)(uintptr_t)lo, want};
        ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
        if (got <= 0) {
            lo += 4096; /* skip an unmapped page */
            lo &= ~4095ull;
            continue;
        }
        for (size_t i = 0; i < (size_t)got / 8; i++)
            mark_word(s, buf[i]);
        lo += (uint64_t)got;
    }
}

static void add_root(scan_t *s, uint64_t lo, uint64_t hi)
{
    if (s->nroots == s->caproots && grow((void **)&s->roots, &s->caproots, sizeof *s->roots) != 0) {
        s->failed = 1;
        return;
    }
    s->roots[s->nroots++] = (addr_range){lo, hi};
}

static int module_roots(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    scan_t *s = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_TLS && info->dlpi_tls_data) { /* this thread's TLS block */
            uint64_t lo = (uint64_t)(uintptr_t)info->dlpi_tls_data;
            add_root(s, lo, lo + ph->p_memsz);
            continue;
        }
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (hs_agent_owns_pc(lo))
            continue; /* the agent's own data points at nothing of the program's */
        add_root(s, lo, hi);
    }
    return 0;
}

/* Where the program's live frames end on the thread that exits. Below
 * that point the stack holds exit()'s machinery (exit handlers, this scan)
 * in frames whose unwritten slots still hold what dead program frames left
 * there: stale pointers that made real leaks look reachable (valgrind
 * ignores them: uninitialized). exit() called by the program passes
 * through the agent's exit wrapper, which notes its frame; exit after main
 * returned is called from inside libc, so on the main thread with no note
 * the program has no live frame left: from glibc's __libc_stack_end (the
 * stack pointer _start began with) up. */
static uintptr_t g_exit_frame;
static int32_t g_exit_tid;
extern void *__libc_stack_end;

void hs_heap_note_exit(void *frame)
{
    if (!g_exit_frame) {
        g_exit_tid = hs_self.tid;
        g_exit_frame = (uintptr_t)frame;
    }
}

static void scan_own_stack(scan_t *s)
{
    uintptr_t lo = hs_self.stack.lo, hi = hs_self.stack.hi;
    int32_t tid = hs_self.tid;
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    uint64_t from = sp;
    if (g_exit_frame && g_exit_tid == tid)
        from = g_exit_frame;
    else if (!g_exit_frame && tid == (int32_t)getpid() && __libc_stack_end)
        from = (uint64_t)(uintptr_t)__libc_stack_end;
    if (from < sp || from >= hi)
        from = sp; /* not on this stack after all: all of it */
    scan_range(s, from > lo ? from : lo, hi);
}

/* Another thread: its stack from where its live frames start (all of it
 * if it did not stop), its registers. Through process_vm_readv: one that
 * did not stop may be unmapping its stack as it ends. */
static void scan_other_stack(const hs_thread_stack *t, void *arg)
{
    scan_t *s = arg;
    for (int i = 0; i < t->nregs; i++)
        mark_word(s, t->regs[i]);
    scan_range_safe(s, t->live_lo, t->hi);
}

/* glibc's own blocks that look leaked but are kept for reuse: the DTV
 * (thread-local storage vector) of a thread allocated by _dl_allocate_tls
 * lives on in glibc's cache of thread stacks after the thread is joined,
 * pointed at only from that cache's memory, which is no root. valgrind's
 * default suppressions hide the same. [lo, hi) of each such function. */
static int glibc_keeps(addr_range *out, int max)
{
    static const char *const fns[] = {"_dl_allocate_tls", "_dl_allocate_tls_init"};
    int n = 0;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0] && n < max; i++) {
        void *f = dlsym(RTLD_DEFAULT, fns[i]);
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size)
            out[n++] = (addr_range){(uint64_t)(uintptr_t)f, (uint64_t)(uintptr_t)f + sym->st_size};
    }
    return n;
}

/* Was the block of stack entry e allocated inside one of r[0..n)? */
static bool allocated_in(uint32_t entry, const addr_range *r, int n)
{
    if (!n || entry >= H.tab.cap)
        return false;
    const hs_stack_entry *e = &H.tab.entries[entry];
    const uint64_t *pcs = H.tab.pool + e->frames;
    for (uint32_t k = 0; k < e->depth; k++)
        for (int j = 0; j < n; j++)
            if (pcs[k] >= r[j].lo && pcs[k] < r[j].hi)
                return true;
    return false;
}

/* The live blocks, sorted by address, into s->b (mmap'd). */
/* Has the page at addr never been written, i.e. is it neither present nor
 * swapped (/proc/self/pagemap bits 63 and 62; readable without privilege)?
 * Such a page of the live table reads as zeros: empty slots. ent caches
 * PM_BATCH entries from *base on. 0 when unknown. */
#define PM_BATCH 512
static int page_untouched(int fd, uintptr_t addr, uint64_t *ent, uintptr_t *base)
{
    uintptr_t page = addr / 4096;
    if (fd < 0)
        return 0;
    if (*base == 0 || page < *base || page >= *base + PM_BATCH) {
        *base = page;
        ssize_t got = pread(fd, ent, PM_BATCH * sizeof *ent, (off_t)(page * sizeof *ent));
        if (got <= 0) {
            *base = 0;
            return 0;
        }
        for (size_t i = (size_t)got / sizeof *ent; i < PM_BATCH; i++)
            ent[i] = 1ull << 63; /* not read: as if present */
    }
    return !(ent[page - *base] >> 62);
}

/* The blocks of the live table, sorted. Pages of the table never written
 * are skipped instead of read (faulting in the whole table, 128 MB in exact
 * mode, was most of a leak scan's time when few blocks are live). */
static uint64_t g_pages_skipped; /* by the last snapshot (HOTSPUR_STATS) */

static int snapshot_blocks(scan_t *s, size_t *cap)
{
    g_pages_skipped = 0;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    uint64_t ent[PM_BATCH];
    uintptr_t base = 0;
    const uint64_t per_page = 4096 / sizeof(live_slot);
    for (uint64_t i = 0; i < H.live_cap; i++) {
        if (i % per_page == 0 && page_untouched(fd, (uintptr_t)&H.live[i], ent, &base)) {
            i += per_page - 1;
            g_pages_skipped++;
            continue;
        }
        uint64_t k = atomic_load(&H.live[i].key);
        if (k == KEY_EMPTY || k == KEY_DELETED)
            continue;
        if (s->n == *cap && grow((void **)&s->b, cap, sizeof *s->b) != 0) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
        uint64_t d = H.live[i].data;
        s->b[s->n++] = (block){k, d & SIZE_MASK, (uint32_t)(d >> SIZE_BITS), 0};
    }
    if (fd >= 0)
        close(fd);
    sort_blocks(s->b, s->n);
    return 0;
}

long hs_heap_scan_leaks(uint64_t *leaked_bytes)
{
    *leaked_bytes = 0;
    if (H.rate > 1 || !H.live)
        return -1;
    scan_t s = {0};
    size_t capb = 0;
    addr_range keep[4];
    int n_keep = glibc_keeps(keep, 4);
    dl_iterate_phdr(module_roots, &s);
    /* The other threads stop; from here until they go, no lock. */
    int64_t t0 = hs_now_ns(CLOCK_MONOTONIC);
    int late = hs_sampler_stop_others(200);
    if (!s.failed && snapshot_blocks(&s, &capb) != 0)
        s.failed = 1;
    for (size_t i = 0; i < s.nroots && !s.failed; i++)
        scan_range_safe(&s, s.roots[i].lo, s.roots[i].hi);
    if (!s.failed && hs_self.stack.hi)
        scan_own_stack(&s);
    if (!s.failed)
        hs_sampler_each_other_stack(scan_other_stack, &s);
    /* Transitively: blocks reachable from marked blocks. */
    while (s.nwork && !s.failed) {
        block *b = &s.b[s.work[--s.nwork]];
        if (b->size < 65536) /* small blocks live in arenas that stay mapped */
            scan_range(&s, b->addr, b->addr + b->size);
        else /* a large one may be munmap()ed by a thread still running */
            scan_range_safe(&s, b->addr, b->addr + b->size);
    }
    hs_sampler_resume_others();
    if (hs_g.cfg.stats) {
        uint64_t pages = (H.live_cap * sizeof(live_slot) + 4095) / 4096;
        fprintf(stderr, "hotspur: leak scan: %d thread(s) did not stop in time, %llu of %llu live-table pages "
                "read, the others stopped %.1f ms\n", late, (unsigned long long)(pages - g_pages_skipped),
                (unsigned long long)pages, (double)(hs_now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
    }
    long leaked = -1;
    if (!s.failed) {
        H.leak = map_zeroed((size_t)H.tab.cap * 2 * sizeof(int64_t));
        if (H.leak) {
            leaked = 0;
            for (size_t i = 0; i < s.n; i++) {
                if (s.b[i].marked || s.b[i].entry >= H.tab.cap || allocated_in(s.b[i].entry, keep, n_keep))
                    continue;
                H.leak[2 * s.b[i].entry] += 1;
                H.leak[2 * s.b[i].entry + 1] += (int64_t)s.b[i].size;
                *leaked_bytes += s.b[i].size;
                leaked++;
            }
        }
    }
    unmap(s.work, s.capwork * sizeof *s.work);
    unmap(s.b, capb * sizeof *s.b);
    unmap(s.roots, s.caproots * sizeof *s.roots);
    return leaked;
}

/* ---- C++ operator new and delete ----
 *
 * libstdc++'s operators call malloc and free, which the agent sees anyway:
 * then these only pass the call on (the agent's frame in between is
 * dropped from the recorded stack, as every agent frame). tcmalloc and
 * jemalloc define the operators themselves and never reach malloc: then
 * the allocation is recorded here, after the real operator returns (which
 * runs as the agent's, so an allocation it makes through the malloc family
 * is not counted twice; a CPU sample landing inside it is not taken). */

typedef struct {
    const char **names;
    size_t n, cap;
} object_names;

static int add_object_name(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    object_names *o = data;
    if (!info->dlpi_name[0]) /* the executable: in the global scope anyway */
        return 0;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        const char **nn = realloc(o->names, cap * sizeof *nn);
        if (!nn)
            return 1;
        o->names = nn;
        o->cap = cap;
    }
    o->names[o->n++] = info->dlpi_name;
    return 0;
}

/* A definition of sym that the global scope lacks: in a library loaded
 * with RTLD_LOCAL, as libstdc++ is when a C program dlopens a C++ plugin
 * (ar's LTO plugin) or when the agent loads its symbolizer. NULL if none. */
static void *local_definition(const char *sym)
{
    object_names o = {0};
    dl_iterate_phdr(add_object_name, &o);
    void *f = NULL;
    for (size_t i = 0; i < o.n && !f; i++) {
        void *h = dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        f = dlsym(h, sym);
        if (f && hs_agent_owns_pc((uint64_t)(uintptr_t)f))
            f = NULL;
        dlclose(h);
    }
    free(o.names);
    return f;
}

/* The next definition of sym; *own = 1 when it is not libstdc++'s (then
 * the allocation is recorded here). */
static void *cxx_resolve(const char *sym, int *own)
{
    hs_self.in_agent++;
    void *f = dlsym(RTLD_NEXT, sym);
    if (!f)
        f = local_definition(sym);
    if (!f) {
        fprintf(stderr, "hotspur: no definition of %s in the process but the agent's\n", sym);
        abort();
    }
    Dl_info di;
    *own = f && dladdr(f, &di) && di.dli_fname && !strstr(di.dli_fname, "libstdc++");
    hs_self.in_agent--;
    return f;
}

/* Each operator jumps through cname##_to: at first to cname##_first, which
 * resolves the next definition, then straight to libstdc++'s, or to
 * cname##_own, which records around tcmalloc's or jemalloc's. */
#define CXX_NEW(cname, sym, params, args, size)                            \
    static void *cname##_first params;                                     \
    static void *(*_Atomic cname##_to) params = cname##_first;             \
    static void *(*cname##_next) params;                                   \
    static void *cname##_own params                                        \
    {                                                                      \
        hs_self.in_agent++; /* jemalloc's may call aligned_alloc: once */  \
        void *p = cname##_next args;                                       \
        hs_self.in_agent--;                                                \
        after_alloc(p, size);                                              \
        return p;                                                          \
    }                                                                      \
    static void *cname##_first params                                      \
    {                                                                      \
        int own;                                                           \
        cname##_next = (void *(*)params)cxx_resolve(sym, &own);            \
        atomic_store(&cname##_to, own ? cname##_own : cname##_next);       \
        return atomic_load(&cname##_to) args;                              \
    }                                                                      \
    HS_EXPORT void *cname params __asm__(sym);                             \
    HS_EXPORT void *cname params                                          \
    {                                                                      \
        return atomic_load_explicit(&cname##_to, memory_order_relaxed) args; \
    }

#define CXX_DELETE(cname, sym, params, args, ptr)                          \
    static void cname##_first params;                                      \
    static void (*_Atomic cname##_to) params = cname##_first;              \
    static void (*cname##_next) params;                                    \
    static void cname##_own params                                         \
    {                                                                      \
        uint32_t entry;                                                    \
        uint64_t sz;                                                       \
        if (ptr)                                                           \
            before_free(ptr, &entry, &sz);                                 \
        cname##_next args;                                                 \
    }                                                                      \
    static void cname##_first params                                       \
    {                                                                      \
        int own;                                                           \
        cname##_next = (void (*)params)cxx_resolve(sym, &own);             \
        atomic_store(&cname##_to, own ? cname##_own : cname##_next);       \
        atomic_load(&cname##_to) args;                                     \
    }                                                                      \
    HS_EXPORT void cname params __asm__(sym);                              \
    HS_EXPORT void cname params                                           \
    {                                                                      \
        atomic_load_explicit(&cname##_to, memory_order_relaxed) args;      \
    }

typedef struct hs_nothrow hs_nothrow; /* std::nothrow_t, passed by reference */

CXX_NEW(hs_new, "_Znwm", (size_t s), (s), s)
CXX_NEW(hs_new_arr, "_Znam", (size_t s), (s), s)
CXX_NEW(hs_new_nt, "_ZnwmRKSt9nothrow_t", (size_t s, const hs_nothrow *t), (s, t), s)
CXX_NEW(hs_new_arr_nt, "_ZnamRKSt9nothrow_t", (size_t s, const hs_nothrow *t), (s, t), s)
CXX_NEW(hs_new_al, "_ZnwmSt11align_val_t", (size_t s, size_t a), (s, a), s)
CXX_NEW(hs_new_arr_al, "_ZnamSt11align_val_t", (size_t s, size_t a), (s, a), s)
CXX_NEW(hs_new_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t s, size_t a, const hs_nothrow *t),
        (s, a, t), s)
CXX_NEW(hs_new_arr_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t", (size_t s, size_t a, const hs_nothrow *t),
        (s, a, t), s)
CXX_DELETE(hs_del, "_ZdlPv", (void *p), (p), p)
CXX_DELETE(hs_del_arr, "_ZdaPv", (void *p), (p), p)
CXX_DELETE(hs_del_sz, "_ZdlPvm", (void *p, size_t s), (p, s), p)
CXX_DELETE(hs_del_arr_sz, "_ZdaPvm", (void *p, size_t s), (p, s), p)
CXX_DELETE(hs_del_al, "_ZdlPvSt11align_val_t", (void *p, size_t a), (p, a), p)
CXX_DELETE(hs_del_arr_al, "_ZdaPvSt11align_val_t", (void *p, size_t a), (p, a), p)
CXX_DELETE(hs_del_sz_al, "_ZdlPvmSt11align_val_t", (void *p, size_t s, size_t a), (p, s, a), p)
CXX_DELETE(hs_del_arr_sz_al, "_ZdaPvmSt11align_val_t", (void *p, size_t s, size_t a), (p, s, a), p)
CXX_DELETE(hs_del_nt, "_ZdlPvRKSt9nothrow_t", (void *p, const hs_nothrow *t), (p, t), p)
CXX_DELETE(hs_del_arr_nt, "_ZdaPvRKSt9nothrow_t", (void *p, const hs_nothrow *t), (p, t), p)
CXX_DELETE(hs_del_al_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t a, const hs_nothrow *t),
           (p, a, t), p)
CXX_DELETE(hs_del_arr_al_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t a, const hs_nothrow *t),
           (p, a, t), p)
