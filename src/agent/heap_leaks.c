/* heap_leaks.c — the heap profiler's leak scan at exit (exact mode): which
 * live blocks of the live table (heap_state.h) no root reaches. Split out
 * of heap.c, whose hooks and fast paths it does not touch. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/heap.h"
#include "agent/heap_state.h"
#include "agent/sampler.h"

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
    void *q = *p ? mremap(*p, *cap * size, ncap * size, MREMAP_MAYMOVE) : hs_heap_map_zeroed(ncap * size);
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
    if (!n || entry >= hs_heap.tab.cap)
        return false;
    const hs_stack_entry *e = &hs_heap.tab.entries[entry];
    const uint64_t *pcs = hs_heap.tab.pool + e->frames;
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
    for (uint64_t i = 0; i < hs_heap.live_cap; i++) {
        if (i % per_page == 0 && page_untouched(fd, (uintptr_t)&hs_heap.live[i], ent, &base)) {
            i += per_page - 1;
            g_pages_skipped++;
            continue;
        }
        uint64_t k = atomic_load(&hs_heap.live[i].key);
        if (k == KEY_EMPTY || k == KEY_DELETED)
            continue;
        if (s->n == *cap && grow((void **)&s->b, cap, sizeof *s->b) != 0) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
        uint64_t d = hs_heap.live[i].data;
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
    if (hs_heap.rate > 1 || !hs_heap.live)
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
        uint64_t pages = (hs_heap.live_cap * sizeof(live_slot) + 4095) / 4096;
        fprintf(stderr, "hotspur: leak scan: %d thread(s) did not stop in time, %llu of %llu live-table pages "
                "read, the others stopped %.1f ms\n", late, (unsigned long long)(pages - g_pages_skipped),
                (unsigned long long)pages, (double)(hs_now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
    }
    long leaked = -1;
    if (!s.failed) {
        hs_heap.leak = hs_heap_map_zeroed((size_t)hs_heap.tab.cap * 2 * sizeof(int64_t));
        if (hs_heap.leak) {
            leaked = 0;
            for (size_t i = 0; i < s.n; i++) {
                if (s.b[i].marked || s.b[i].entry >= hs_heap.tab.cap || allocated_in(s.b[i].entry, keep, n_keep))
                    continue;
                hs_heap.leak[2 * s.b[i].entry] += 1;
                hs_heap.leak[2 * s.b[i].entry + 1] += (int64_t)s.b[i].size;
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

