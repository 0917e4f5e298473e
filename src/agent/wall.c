/* wall.c — wall-clock samples, taken without disturbing waiting threads.
 *
 * On each tick (from the agent thread) up to HOTSPUR_WALL_THREADS registered
 * threads are visited, round robin, so the cost per tick is bounded however
 * many threads there are. Each sample counts for the time its thread lived
 * since its previous sample (or its start), and a thread that ends counts
 * the time since its last one with that sample: every interval of every
 * thread's life is counted once, so a thread's samples add up to its
 * lifetime whatever the number of threads or the tick's lateness (an
 * estimate by threads x elapsed / visited, taken at each tick, lost the
 * time of threads that ended between two ticks). A visited thread is
 * classified from /proc/self/task/TID/stat:
 *  - running or runnable (R): a one-shot timer on its own CPU clock is set
 *    to expire at once; the kernel fires it when the thread next runs (at a
 *    tick) and delivers the signal as the thread returns to user mode, so
 *    the thread records its own stack in its handler and a system call is
 *    never interrupted (a signal sent now could land as it starts to sleep
 *    and cut the sleep short with EINTR);
 *  - waiting (S, D, ...): it is NOT signalled, since a signal would cut
 *    short its sleep, poll or timed wait (EINTR). Instead the agent thread
 *    reads the pc and stack pointer where it waits from
 *    /proc/self/task/TID/syscall and unwinds its stack from there. Frames
 *    whose unwind rules need registers other than pc and sp (code using a
 *    frame pointer) end such stacks early.
 * A running thread's sample lands when it next runs, at most one kernel
 * tick later (if it sleeps first, when it runs again; a thread that ends
 * before that adds it to its last sample as it ends). A runnable thread that has used almost no
 * CPU since it was last seen waiting was just woken and waits for a CPU:
 * its sample goes to that wait's stack (its timer would only fire later,
 * in whatever it runs next).
 */
#define _GNU_SOURCE
#include "agent/wall.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/threads.h"
#include "agent/unwind.h"

enum { WALL_NONE, WALL_IDLE, WALL_BUSY, WALL_GONE }; /* hs_thread_slot.wall_state (NONE: 0) */
static int g_wall_magic;          /* si_value of the wall timers points here */
static _Atomic int64_t g_epoch;   /* see hs_wall_epoch */
static int g_was_off;             /* the previous tick found sampling off (agent thread) */
static unsigned g_cursor;         /* round robin position (agent thread only) */
static hs_thread_info *g_threads; /* scratch list (agent thread only) */
#define MAX_LISTED 65536

/* Per registry slot: the last sample taken from outside while the thread
 * waited, and the thread's CPU time then (agent thread only). */
typedef struct {
    int32_t tid;
    hs_stack_entry *e;
    int64_t cpu_ns;
} last_wait;
static last_wait *g_last; /* MAX_LISTED of them */
/* A thread found runnable that has used less CPU than this since it was
 * seen waiting has not run its own code yet: it is still leaving that wait. */
#define STILL_WAKING_NS 200000

/* ---- the registry's wall-clock fields ---- */

/* Ask a running thread for a wall-clock sample worth weight: it takes it
 * in its own signal handler, from a one-shot timer on its CPU clock, i.e.
 * the next time it runs (never inside a system call). Weights asked for
 * before it runs add up. 0, or -1 if the thread has no such timer. */
static int wall_request(const hs_thread_info *t, int64_t weight)
{
    if (!hs_threads || t->slot < 0 || t->slot >= HS_MAX_THREADS)
        return -1;
    hs_thread_slot *s = &hs_threads[t->slot];
    int idle = WALL_IDLE;
    if (!atomic_compare_exchange_strong(&s->wall_state, &idle, WALL_BUSY))
        return -1; /* no timer, or the thread is ending */
    int rc = -1;
    if (s->tid == t->tid && atomic_load(&s->used) == HS_SLOT_LIVE) {
        atomic_fetch_add(&s->wall_pending, weight);
        struct itimerspec now = {{0, 0}, {0, 1}}; /* 1 ns of its CPU time from now */
        rc = timer_settime(s->wall_timer, 0, &now, NULL);
    }
    atomic_store(&s->wall_state, WALL_IDLE);
    return rc;
}

/* Drop the weights asked for and not yet taken (at a mark: that time was
 * before it, and goes to no window). */
static void drop_owed(void)
{
    int n = hs_threads ? hs_threads_count() : 0;
    for (int i = 0; i < n && i < HS_MAX_THREADS; i++)
        atomic_store(&hs_threads[i].wall_pending, 0);
}

/* (slot s is the caller's, or was checked to be t's) */
static int64_t wall_credit(hs_thread_slot *s, int64_t now, int64_t epoch)
{
    int64_t since = atomic_exchange(&s->wall_since, now);
    if (since < epoch)
        since = epoch;
    return now > since ? now - since : 0;
}

/* The wall time thread t lived since its previous credit (or its start),
 * counted from epoch at the earliest, and credit it up to now: each
 * interval of a thread's life is handed out once, to a sample or, at its
 * end, to the thread itself. 0 if t's slot is another thread's now. */
static int64_t thread_credit(const hs_thread_info *t, int64_t now, int64_t epoch)
{
    if (!hs_threads || t->slot < 0 || t->slot >= HS_MAX_THREADS)
        return 0;
    hs_thread_slot *s = &hs_threads[t->slot];
    return s->tid == t->tid && atomic_load(&s->used) == HS_SLOT_LIVE && s->alive ? wall_credit(s, now, epoch) : 0;
}

/* The wall sample last recorded for thread t (NULL if none, or the slot is
 * another's now). */
static hs_stack_entry *last_sample(const hs_thread_info *t)
{
    if (!hs_threads || t->slot < 0 || t->slot >= HS_MAX_THREADS || hs_threads[t->slot].tid != t->tid)
        return NULL;
    return atomic_load(&hs_threads[t->slot].wall_last);
}

/* The wall sample last recorded for thread tid in slot (where a thread's
 * last interval goes when it ends). */
static void note_sample(int32_t slot, int32_t tid, hs_stack_entry *e)
{
    if (hs_threads && e && slot >= 0 && slot < HS_MAX_THREADS && hs_threads[slot].tid == tid)
        atomic_store(&hs_threads[slot].wall_last, e);
}

void hs_wall_timer_create(hs_thread_slot *s, int32_t tid, clockid_t clk, int sig)
{
    if (hs_g.cfg.wall_hz <= 0 || !sig || atomic_load(&s->wall_state) != WALL_NONE)
        return;
    if (hs_threads_timer_create(tid, clk, sig, &g_wall_magic, &s->wall_timer) != 0)
        return;
    s->wall_sig = sig;
    atomic_store(&s->wall_pending, 0);
    atomic_store(&s->wall_state, WALL_IDLE);
}

/* Take the wall timer away from the agent thread, then delete it. */
void hs_wall_timer_delete(hs_thread_slot *s)
{
    for (;;) {
        int idle = WALL_IDLE;
        if (atomic_compare_exchange_weak(&s->wall_state, &idle, WALL_GONE))
            break;
        if (idle == WALL_NONE || idle == WALL_GONE)
            return;
        sched_yield(); /* the agent thread is arming it: one system call */
    }
    timer_delete(s->wall_timer);
    atomic_store(&s->wall_state, WALL_NONE);
}

int hs_wall_timer_on(const hs_thread_slot *s, int sig)
{
    return atomic_load(&s->wall_state) != WALL_NONE && s->wall_sig == sig;
}

int hs_wall_on_timer(const siginfo_t *si, const ucontext_t *uc)
{
    if (si->si_code != SI_TIMER || si->si_value.sival_ptr != &g_wall_magic)
        return 0;
    int32_t slot = hs_self.slot;
    int64_t w = slot >= 0 ? atomic_exchange(&hs_threads[slot].wall_pending, 0) : 0;
    if (w > 0) {
        int saved = errno;
        if (!hs_wall_on_signal(uc, w)) /* a wall-clock sample */
            atomic_fetch_add(&hs_threads[slot].wall_pending, w); /* in the agent: still owed */
        errno = saved;
    }
    return 1;
}

void hs_wall_thread_end(hs_thread_slot *s)
{
    hs_wall_timer_delete(s);
    if (hs_g.cfg.wall_hz > 0) { /* what it was asked for, and its life since its last credit */
        int64_t owed = atomic_exchange(&s->wall_pending, 0) +
                       wall_credit(s, hs_now_ns(CLOCK_MONOTONIC), hs_wall_epoch());
        hs_wall_owed_at_exit(owed, atomic_load(&s->wall_last));
    }
}

/* ---- samples ---- */

static void count(hs_stack_entry *e, int64_t weight)
{
    atomic_fetch_add_explicit(&e->values[0], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->values[1], weight, memory_order_relaxed);
}

static hs_stack_entry *record(int32_t slot, int32_t tid, uint32_t labels, const uint64_t *pcs, int n,
                              int64_t weight)
{
    if (n <= 0)
        return NULL;
    hs_stack_entry *e = hs_stacktab_intern(&hs_g.wall, tid, labels, pcs, (uint32_t)n);
    if (e) {
        count(e, weight);
        note_sample(slot, tid, e);
    }
    return e;
}

int64_t hs_wall_epoch(void)
{
    return atomic_load(&g_epoch);
}

void hs_wall_mark(void)
{
    atomic_store(&g_epoch, hs_now_ns(CLOCK_MONOTONIC));
    /* A running thread asked for a sample before the mark takes it after:
     * its weight is time before the mark (all of a dump's length when the
     * dump held the agent thread up), not the new window's. */
    drop_owed();
}

static int64_t thread_cpu_ns(int32_t tid)
{
    struct timespec ts;
    clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6); /* its CPU clock (clock_getcpuclockid) */
    if (clock_gettime(clk, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A runnable thread that has barely run since it was last seen waiting (it
 * was woken and waits for a CPU): the time is that wait's, at its stack.
 * 1 counted, 0 not. */
static int still_waking(const hs_thread_info *t, int64_t weight)
{
    last_wait *l = g_last && t->slot >= 0 && t->slot < MAX_LISTED ? &g_last[t->slot] : NULL;
    if (!l || l->tid != t->tid || !l->e || atomic_load(&l->e->state) != 2 || l->e->tid != t->tid)
        return 0;
    int64_t c = thread_cpu_ns(t->tid);
    if (c < 0 || c - l->cpu_ns > STILL_WAKING_NS)
        return 0;
    count(l->e, weight);
    note_sample(t->slot, t->tid, l->e);
    return 1;
}

int hs_wall_on_signal(const ucontext_t *uc, int64_t weight)
{
    if (!atomic_load_explicit(&hs_g.wall_on, memory_order_relaxed) || hs_self.in_agent)
        return 0;
    uint64_t pcs[HS_MAX_DEPTH_LIMIT];
    hs_thread *th = &hs_self;
    int n = hs_agent_hide_frames(pcs, hs_unwind_context(uc, &th->stack, pcs, hs_g.cfg.max_depth));
    record(th->slot, th->tid, th->labels, pcs, n, weight);
    return 1;
}

void hs_wall_owed_at_exit(int64_t weight, hs_stack_entry *last)
{
    if (weight <= 0 || !atomic_load(&hs_g.wall_on))
        return;
    hs_thread *th = &hs_self;
    if (last && atomic_load(&last->state) == 2 && last->tid == th->tid) {
        count(last, weight);
        return;
    }
    hs_stack_entry *e = th->start_fn ? hs_stacktab_intern(&hs_g.wall, th->tid, th->labels, &th->start_fn, 1)
                                     : hs_agent_intern_here(&hs_g.wall);
    if (e)
        count(e, weight);
}

/* Read a small /proc file into buf; its length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n >= 0)
        buf[n] = 0;
    return n;
}

/* The scheduler state letter of thread tid, 0 if it is gone. */
static char thread_state(int32_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (read_proc(path, buf, sizeof buf) <= 0)
        return 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parens */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Sample a waiting thread from outside: 1 done, 0 it is running after all. */
static int sample_waiting(const hs_thread_info *t, int64_t weight)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", t->tid);
    if (read_proc(path, buf, sizeof buf) <= 0)
        return 1; /* gone, or not readable: skip */
    if (strncmp(buf, "running", 7) == 0)
        return 0;
    /* "NR arg1 ... arg6 SP PC", or "-1 SP PC" when not in a system call */
    char *tok[9];
    int k = 0;
    for (char *save, *w = strtok_r(buf, " \n", &save); w && k < 9; w = strtok_r(NULL, " \n", &save))
        tok[k++] = w;
    if (k < 3)
        return 1;
    uint64_t sp = strtoull(tok[k - 2], NULL, 16), pc = strtoull(tok[k - 1], NULL, 16);
    if (!pc || !sp)
        return 1;
    hs_stack_bounds b = {t->stack_lo, t->stack_hi};
    uint64_t pcs[HS_MAX_DEPTH_LIMIT];
    int n = hs_agent_hide_frames(pcs, hs_unwind_from(pc, sp, &b, pcs, hs_g.cfg.max_depth));
    hs_stack_entry *e = record(t->slot, t->tid, t->labels, pcs, n, weight);
    if (g_last && t->slot >= 0 && t->slot < MAX_LISTED)
        g_last[t->slot] = (last_wait){t->tid, e, e ? thread_cpu_ns(t->tid) : 0};
    return 1;
}

void hs_wall_tick(void)
{
    int64_t now = hs_now_ns(CLOCK_MONOTONIC);
    if (!atomic_load(&hs_g.wall_on)) {
        g_was_off = 1;
        return;
    }
    if (g_was_off) { /* resumed (or a window opened): the time off is nobody's */
        atomic_store(&g_epoch, now);
        g_was_off = 0;
    }
    if (!g_threads && !(g_threads = malloc(MAX_LISTED * sizeof *g_threads)))
        return;
    if (!g_last)
        g_last = calloc(MAX_LISTED, sizeof *g_last);
    int n = hs_threads_list(g_threads, MAX_LISTED);
    if (n <= 0)
        return;
    int k = n < hs_g.cfg.wall_threads ? n : hs_g.cfg.wall_threads;
    int64_t epoch = atomic_load(&g_epoch);
    for (int i = 0; i < k; i++) {
        const hs_thread_info *t = &g_threads[(g_cursor + (unsigned)i) % (unsigned)n];
        char st = thread_state(t->tid);
        if (!st)
            continue; /* gone: its end counted the rest of its life */
        int64_t weight = thread_credit(t, now, epoch);
        if (weight <= 0)
            continue;
        if ((st == 'R' ? !still_waking(t, weight) : !sample_waiting(t, weight)) &&
            wall_request(t, weight) != 0) { /* it is ending: to its last sample */
            hs_stack_entry *e = last_sample(t);
            if (e && atomic_load(&e->state) == 2 && e->tid == t->tid)
                count(e, weight);
        }
    }
    g_cursor = (g_cursor + (unsigned)k) % (unsigned)n;
}
