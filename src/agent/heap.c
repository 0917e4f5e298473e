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
 * (which cost more time than its one instruction). free reads one byte of
 * the filter below and, nearly always zero, jumps through a pointer: the
 * real allocator's free, but in exact mode, where every block is in the
 * live table. (free jumping first to a function for the state, which read
 * the filter, cost one taken jump more per free: 1.11x against 1.08x with
 * the profile on, the same with it off: docs/agent.md.) calloc counts down
 * like malloc and realloc also reads the filter byte of its block; both
 * jump to the allocator unless one says otherwise.
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
 * In exact mode the leak scan at exit (heap_leaks.c) marks every live block
 * reachable from the loaded modules' writable segments and the thread
 * stacks; the rest leaked. The state both files share is in heap_state.h.
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
#include "agent/heap_state.h"
#include "agent/hotpath.h"
#include "agent/sampler.h"

#define HS_EXPORT __attribute__((visibility("default")))
/* malloc's and free's fast paths (29 and 36 bytes) each within one 64-byte
 * line: at 16-byte alignment free's last jump came to straddle a line when
 * other code moved it, and the same free measured 1.107x against 1.081x
 * with the heap profile off (bench/heap_interleave.c, docs/agent.md). */
#define HS_LINE_ALIGNED __attribute__((aligned(64)))
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

static HS_SAMPLE_PATH void filter_add(const void *p)
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

/* ---- state (heap_state.h) ---- */

hs_heap_state hs_heap = {.peak_lock = PTHREAD_MUTEX_INITIALIZER};

int hs_heap_start(void)
{
    resolve();
    if (load_libm() != 0)
        return -1;
    if (hs_heap.live && !atomic_load(&g_boot_used)) {
        /* Started again (a second `hotspur attach`): what the first run
         * followed is not this one's. Nothing is routed here yet, and no
         * bootstrap block is out: the filter starts empty too. */
        memset(g_filter, 0, sizeof g_filter);
        atomic_store(&hs_heap.inuse_est, 0);
        atomic_store(&hs_heap.untracked, 0);
        hs_heap.peak_est = 0;
        hs_heap.leak = NULL;
    }
    hs_heap.rate = hs_g.cfg.heap_rate;
    hs_heap.exact = hs_heap.rate <= 1;
    uint64_t cap = 1024;
    while (cap < 2ull * hs_g.cfg.heap_max_live)
        cap <<= 1;
    /* Started again (a second `hotspur attach`): the tables of the first
     * run are reused when of the same size, their pages dropped (they read
     * as zeros again, and their memory goes back): a daemon attached to
     * over and over does not grow. They are never unmapped: a thread may
     * still be on its way through a hook it entered before the detach. */
    live_slot *live = NULL;
    if (hs_heap.live && hs_heap.live_cap == cap) {
        madvise(hs_heap.live, cap * sizeof(live_slot), MADV_DONTNEED);
        live = hs_heap.live;
    } else {
        if (hs_heap.live)
            madvise(hs_heap.live, hs_heap.live_cap * sizeof(live_slot), MADV_DONTNEED);
        live = hs_heap_map_zeroed(cap * sizeof(live_slot));
    }
    hs_heap.live_cap = cap;
    uint32_t pool = hs_g.cfg.max_stacks * 32u;
    if (hs_heap.tab.entries && hs_heap.tab.pool_cap == pool && hs_heap.peak) {
        hs_stacktab_clear(&hs_heap.tab);
        madvise(hs_heap.peak, (size_t)hs_heap.tab.cap * 2 * sizeof(int64_t), MADV_DONTNEED);
    } else {
        if (!live || hs_stacktab_init(&hs_heap.tab, hs_g.cfg.max_stacks, pool, 0) != 0)
            return -1;
        hs_heap.peak = hs_heap_map_zeroed((size_t)hs_heap.tab.cap * 2 * sizeof(int64_t));
    }
    if (!live || !hs_heap.peak)
        return -1;
    atomic_store(&hs_heap.next_snapshot, hs_heap.rate > 4096 ? hs_heap.rate : 4096);
    /* A malloc that comes before ours (e.g. AddressSanitizer's runtime,
     * preloaded first) would leave the heap profile silently empty. */
    const char *other = hs_agent_symbol_owner("malloc"); /* (python3's PLT stub is not one) */
    if (other && !hs_g.attached) { /* attached, libc's comes first: its GOT entries are rewritten */
        fprintf(stderr, "hotspur: malloc belongs to %s, which comes before the agent: the heap "
                        "profile will be empty\n", other);
    }
    hs_heap.live = live;
    atomic_store(&hs_heap.on, 1);
    route();
    /* This thread's next malloc draws its first interval; the other threads
     * that already run do when their idle countdown runs out (at most
     * IDLE_COUNTDOWN bytes later), new ones at their first malloc. */
    hs_self.heap_countdown = 0;
    return 0;
}

void hs_heap_stop(void)
{
    atomic_store(&hs_heap.on, 0);
    route();
}

void hs_heap_resume(void)
{
    if (hs_heap.live)
        atomic_store(&hs_heap.on, 1);
    route();
}

void hs_heap_after_fork(int on)
{
    pthread_mutex_init(&hs_heap.peak_lock, NULL); /* its holder may not have come along */
    if (hs_heap.live)
        atomic_store(&hs_heap.on, on);
    route();
}

hs_stacktab *hs_heap_table(void)
{
    return &hs_heap.tab;
}

uint64_t hs_heap_untracked(void)
{
    return atomic_load(&hs_heap.untracked);
}

/* ---- sampling ---- */

static HS_SAMPLE_PATH uint64_t next_random(hs_thread *t)
{
    if (!t->rng) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
    }
    return hs_draw_random(&t->rng);
}

/* Bytes until the next sample: exponential with mean rate. */
static HS_SAMPLE_PATH int64_t next_interval(hs_thread *t)
{
    return hs_draw_interval(next_random(t), (double)hs_heap.rate);
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
static HS_SAMPLE_PATH int crossed(void)
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
static HS_SAMPLE_PATH int64_t weight(uint64_t size)
{
    if (hs_heap.exact || size == 0)
        return (int64_t)size;
    double r = (double)hs_heap.rate, z = (double)size;
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
    if (hs_heap.exact) {
        uint64_t h = key * 0x9e3779b97f4a7c15ull;
        return (h ^ (h >> 29)) & (hs_heap.live_cap - 1);
    }
    uint64_t page = (key >> 12) * 0x9e3779b97f4a7c15ull;
    return ((page >> 32) << 8 | ((key >> 4) & 0xff)) & (hs_heap.live_cap - 1);
}

static HS_SAMPLE_PATH int live_insert(uint64_t key, uint32_t entry, uint64_t size)
{
    uint64_t i = slot_of(key);
    for (int probe = 0; probe < 256; probe++, i = (i + 1) & (hs_heap.live_cap - 1)) {
        uint64_t k = atomic_load_explicit(&hs_heap.live[i].key, memory_order_relaxed);
        if (k != KEY_EMPTY && k != KEY_DELETED)
            continue;
        if (!atomic_compare_exchange_strong(&hs_heap.live[i].key, &k, key))
            continue;
        hs_heap.live[i].data = ((uint64_t)entry << SIZE_BITS) | (size & SIZE_MASK);
        if (!hs_heap.exact)
            filter_add((const void *)(uintptr_t)key);
        return 0;
    }
    return -1;
}

/* Take key out; fills entry and size. 0 if it was there. */
static int live_remove(uint64_t key, uint32_t *entry, uint64_t *size)
{
    uint64_t i = slot_of(key);
    for (int probe = 0; probe < 256; probe++, i = (i + 1) & (hs_heap.live_cap - 1)) {
        uint64_t k = atomic_load_explicit(&hs_heap.live[i].key, memory_order_acquire);
        if (k == KEY_EMPTY)
            return -1;
        if (k != key)
            continue;
        uint64_t d = hs_heap.live[i].data;
        *entry = (uint32_t)(d >> SIZE_BITS);
        *size = d & SIZE_MASK;
        atomic_store_explicit(&hs_heap.live[i].key, KEY_DELETED, memory_order_release);
        if (!hs_heap.exact)
            filter_sub((const void *)(uintptr_t)key);
        return 0;
    }
    return -1;
}

/* ---- recording ---- */

static void snapshot_peak(int64_t now)
{
    if (pthread_mutex_trylock(&hs_heap.peak_lock) != 0)
        return; /* someone else is taking it */
    if (now > hs_heap.peak_est) {
        uint32_t n = atomic_load(&hs_heap.tab.n_used);
        for (uint32_t i = 0; i < n; i++) {
            hs_stack_entry *e = hs_stacktab_nth(&hs_heap.tab, i);
            if (!e)
                continue;
            size_t idx = (size_t)(e - hs_heap.tab.entries);
            hs_heap.peak[2 * idx] = atomic_load(&e->values[0]) - atomic_load(&e->values[2]);
            hs_heap.peak[2 * idx + 1] = atomic_load(&e->values[1]) - atomic_load(&e->values[3]);
        }
        hs_heap.peak_est = now;
        int64_t step = now / 100 > hs_heap.rate ? now / 100 : hs_heap.rate;
        atomic_store(&hs_heap.next_snapshot, now + (step > 4096 ? step : 4096));
    }
    pthread_mutex_unlock(&hs_heap.peak_lock);
}

/* Record block p of size as allocated here (unless the agent allocates).
 * Not cold: exact mode comes here for every allocation. */
static __attribute__((noinline)) HS_SAMPLE_PATH void record_alloc_at(void *p, size_t size, const hs_call_regs *c)
{
    hs_thread *t = &hs_self;
    if (t->in_agent)
        return;
    atomic_thread_fence(memory_order_acquire); /* pairs with route() */
    t->in_agent++;
    hs_stack_entry *e = hs_agent_intern_call(&hs_heap.tab, c);
    if (e) {
        uint32_t idx = (uint32_t)(e - hs_heap.tab.entries);
        atomic_fetch_add_explicit(&e->values[0], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->values[1], (int64_t)size, memory_order_relaxed);
        if (live_insert((uint64_t)(uintptr_t)p, idx, size) == 0) {
            int64_t w = weight(size);
            int64_t now = atomic_fetch_add(&hs_heap.inuse_est, w) + w;
            if (now > atomic_load_explicit(&hs_heap.next_snapshot, memory_order_relaxed))
                snapshot_peak(now);
        } else { /* can't follow its free: count it freed now */
            atomic_fetch_add(&hs_heap.untracked, 1);
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
    if (p && atomic_load_explicit(&hs_heap.on, memory_order_relaxed) && (hs_heap.exact || (counts_down(size) && crossed())))
        record_alloc(p, size);
}

/* Forget p if it was sampled; returns its record for realloc's undo. */
static int before_free(void *p, uint32_t *entry, uint64_t *size)
{
    if (!hs_heap.live || (!hs_heap.exact && !*bucket_of(p)) || live_remove((uint64_t)(uintptr_t)p, entry, size) != 0)
        return -1;
    if (*entry < hs_heap.tab.cap) {
        hs_stack_entry *e = &hs_heap.tab.entries[*entry];
        atomic_fetch_add_explicit(&e->values[2], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->values[3], (int64_t)*size, memory_order_relaxed);
    }
    atomic_fetch_sub(&hs_heap.inuse_est, weight(*size));
    return 0;
}

static void undo_free(void *p, uint32_t entry, uint64_t size)
{
    if (entry < hs_heap.tab.cap && live_insert((uint64_t)(uintptr_t)p, entry, size) == 0) {
        hs_stack_entry *e = &hs_heap.tab.entries[entry];
        atomic_fetch_sub(&e->values[2], 1);
        atomic_fetch_sub(&e->values[3], (int64_t)size);
        atomic_fetch_add(&hs_heap.inuse_est, weight(size));
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
static HS_SAMPLE_PATH int malloc_decides(void)
{
    hs_thread *t = &hs_self;
    int on = atomic_load_explicit(&hs_heap.on, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire); /* the tables and rate of hs_heap_start */
    if (!on) {
        t->heap_countdown = !hs_heap.live ? IDLE_COUNTDOWN : hs_heap.exact ? -1 : next_interval(t);
        return 0;
    }
    if (hs_heap.exact) {
        t->heap_countdown = -1;
        return 1;
    }
    return crossed();
}

/* malloc's countdown crossed zero; c: the registers of malloc's call
 * site, so that a sample's stack starts there instead of stepping through
 * the agent's frames (half of a sample's instructions: 857, were 1678). */
void *hs_heap_malloc_crossed(size_t size, const hs_call_regs *c);
__attribute__((visibility("hidden"), used, noinline, cold)) HS_SAMPLE_PATH void *
hs_heap_malloc_crossed(size_t size, const hs_call_regs *c)
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
__asm__(".pushsection .text.hot.hs_sample, \"ax\", @progbits\n" /* HS_SAMPLE_PATH */
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
        ".size hs_heap_malloc_slow, .-hs_heap_malloc_slow\n"
        ".popsection\n");
#else
static SLOW void *hs_heap_malloc_slow(size_t size)
{
    return hs_heap_malloc_crossed(size, NULL);
}
#endif

/* A free that can't be the real allocator's at once: NULL, a bootstrap
 * block, a sampled block (or one whose filter byte a sampled or bootstrap
 * block shares), any block in exact mode. */
static SLOW void free_special(void *p)
{
    if (!p || is_boot(p))
        return;
    if (UNLIKELY(!r_free)) { /* no block of the allocator's before it is known: cannot happen */
        free_first(p);
        return;
    }
    atomic_thread_fence(memory_order_acquire); /* pairs with route() */
    uint32_t entry;
    uint64_t size;
    before_free(p, &entry, &size);
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

/* Point free at what the state asks once the filter says "none here": the
 * real allocator's function, but in exact mode (every block in the live
 * table). free looks at the filter whatever the state, so sampled blocks
 * are still taken out after the profile is paused. malloc's pointer names
 * the real allocator from the moment it is known (its countdown does the
 * rest). */
static void route(void)
{
    void (*f)(void *) = r_free;
    if (hs_heap.live && hs_heap.exact)
        f = free_special; /* every block is in the live table */
    /* Release: the tables set up before are seen by the slow paths, which
     * take an acquire fence after malloc's and free's relaxed loads. */
    if (r_malloc)
        atomic_store_explicit(&p_malloc, r_malloc, memory_order_release);
    if (r_calloc)
        atomic_store_explicit(&p_calloc, r_calloc, memory_order_release);
    if (r_realloc) /* in exact mode every block is in the live table */
        atomic_store_explicit(&p_realloc, hs_heap.live && hs_heap.exact ? realloc_slow : r_realloc, memory_order_release);
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
HS_EXPORT HS_LINE_ALIGNED void *malloc(size_t size)
{
    if (counts_down(size))
        return hs_heap_malloc_slow(size);
    return atomic_load_explicit(&p_malloc, memory_order_relaxed)(size);
}

/* free: one byte of the filter (sampled and bootstrap blocks; zero for
 * nearly every other block), then one jump, as a tail call. */
HS_EXPORT HS_LINE_ALIGNED void free(void *p)
{
    if (UNLIKELY(*bucket_of(p)))
        free_special(p);
    else
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
    if (hs_heap.rate <= 1 || objs <= 0 || bytes <= 0)
        return 1.0;
    double avg = (double)bytes / (double)objs;
    return 1.0 / (1.0 - m_exp(-avg / (double)hs_heap.rate));
}

int hs_heap_values(const hs_stack_entry *e, hs_heap_view view, const int64_t cur[4],
                   const int64_t base[4], int64_t out[4])
{
    size_t idx = (size_t)(e - hs_heap.tab.entries);
    double s = scale_for(cur[0], cur[1]);
    switch (view) {
    case HS_HEAP_ALL:
        out[0] = (int64_t)((double)(cur[0] - base[0]) * s);
        out[1] = (int64_t)((double)(cur[1] - base[1]) * s);
        out[2] = (int64_t)((double)(cur[0] - cur[2]) * s);
        out[3] = (int64_t)((double)(cur[1] - cur[3]) * s);
        return 4;
    case HS_HEAP_PEAK:
        out[0] = (int64_t)((double)hs_heap.peak[2 * idx] * s);
        out[1] = (int64_t)((double)hs_heap.peak[2 * idx + 1] * s);
        return 2;
    case HS_HEAP_LEAKS:
        out[0] = hs_heap.leak ? hs_heap.leak[2 * idx] : 0;
        out[1] = hs_heap.leak ? hs_heap.leak[2 * idx + 1] : 0;
        return 2;
    }
    return 0;
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
