/* sampler.c — per-thread CPU timers and the sampling signal's handler.
 *
 * Each thread gets a POSIX timer on its own CPU-time clock that signals that
 * very thread (SIGEV_THREAD_ID), so every thread is sampled in proportion to
 * the CPU it uses. The first expiry is at a random phase of the period, and
 * a period that expired but was not delivered yet when the thread (or the
 * process) ends is counted then, so the expected CPU total equals the true
 * one even for threads that live less than a period. The handler is async-signal-safe: it unwinds into a
 * stack-allocated array and counts the stack in the lock-free table.
 *
 * The signal is a real-time one (SIGRTMAX-3 unless HOTSPUR_SIGNAL says
 * otherwise), not SIGPROF, which programs such as sort(1) catch to clean up
 * and die. A thread that blocks "all" signals (every real-time one) is
 * still sampled: the masking calls leave ours out of such a set. A program
 * that uses our signal itself — installs a handler for it, blocks it on
 * its own or waits for it (sigwait, sigtimedwait, sigwaitinfo, signalfd) —
 * gets it: the agent moves to another free real-time signal (re-creating
 * every timer) and gives the program's action back; with none left, CPU
 * and wall sampling stop.
 *
 * The handler runs on an alternate signal stack (sigaltstack) that each
 * thread gets when it starts, unless the program gave it one: a thread near
 * the end of its own stack is sampled without overflowing it.
 *
 * The same signal, queued to a thread with a value of ours, stops it for
 * the leak scan at exit: its handler saves the registers and stack pointer
 * of the interrupted code and waits on a futex until the scan is over
 * (hs_sampler_stop_others).
 */
#define _GNU_SOURCE
#include "agent/sampler.h"

#include <dirent.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/threads.h"
#include "agent/wall.h"

/* hs_thread_slot.stop; STOP_TRACED: held by the tracer process below */
enum { STOP_NONE, STOP_ASKED, STOP_PARKED, STOP_TRACED, STOP_UNASKED /* blocks the signal: not asked */ };

static struct sigaction g_prev;      /* the program's action for our signal */
static int g_magic;                  /* si_value of our CPU timers points here */
static int g_stop_magic;             /* and of the signal that stops a thread here */
static _Atomic int g_stop_go;        /* futex word: bumped when stopped threads may go */
static int g_sig;                    /* the sampling signal, 0 before start */
static uint64_t g_taken;             /* bit s: the program uses signal s */
static _Atomic int g_moving;         /* a change of signal is under way */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
static sigaction_fn real_sigaction;
static sigmask_fn real_sigprocmask, real_pthread_sigmask;
static int (*real_sigwait)(const sigset_t *, int *);
static int (*real_sigwaitinfo)(const sigset_t *, siginfo_t *);
static int (*real_sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
static int (*real_signalfd)(int, const sigset_t *, int);
static void on_signal(int sig, siginfo_t *si, void *ucv);
static int arm_timer(hs_thread_slot *s, int32_t tid, clockid_t clk);
static clockid_t thread_cpu_clock(int32_t tid);

static void resolve_real(void)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!real_sigprocmask)
        real_sigprocmask = (sigmask_fn)dlsym(RTLD_NEXT, "sigprocmask");
    if (!real_pthread_sigmask)
        real_pthread_sigmask = (sigmask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
    if (!real_sigtimedwait) {
        *(void **)&real_sigwait = dlsym(RTLD_NEXT, "sigwait");
        *(void **)&real_sigwaitinfo = dlsym(RTLD_NEXT, "sigwaitinfo");
        *(void **)&real_signalfd = dlsym(RTLD_NEXT, "signalfd");
        *(void **)&real_sigtimedwait = dlsym(RTLD_NEXT, "sigtimedwait");
    }
}

/* Whether set holds every real-time signal: "block everything", not a
 * wish for ours in particular. */
static int all_realtime(const sigset_t *set)
{
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        if (!sigismember(set, s))
            return 0;
    return 1;
}

/* A real-time signal nobody uses: default action, not blocked here, not
 * one the program took from us, not in avoid. */
static int signal_unused(int s, const sigset_t *avoid)
{
    struct sigaction cur;
    sigset_t mask;
    if (s == g_sig || (g_taken >> s & 1) || (avoid && sigismember(avoid, s)) ||
        real_sigaction(s, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
        return 0;
    return real_pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 && !sigismember(&mask, s);
}

static int pick_signal(const sigset_t *avoid)
{
    for (int s = SIGRTMAX - 3; s >= SIGRTMIN + 3; s--)
        if (signal_unused(s, avoid))
            return s;
    for (int s = SIGRTMAX - 2; s <= SIGRTMAX; s++)
        if (signal_unused(s, avoid))
            return s;
    return 0;
}

/* The program uses our signal: move to another one (not in avoid), re-arm
 * every timer on it, and give the program its signal back as it set it. */
static void give_up_signal(const sigset_t *avoid)
{
    int idle = 0;
    while (!atomic_compare_exchange_weak(&g_moving, &idle, 1)) {
        idle = 0;
        sched_yield();
    }
    int old = g_sig;
    if (old) {
        g_taken |= 1ull << old;
        int sig = pick_signal(avoid);
        struct sigaction sa, prev;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sig && real_sigaction(sig, &sa, &prev) != 0)
            sig = 0;
        if (sig) {
            sigset_t ours;
            sigemptyset(&ours);
            sigaddset(&ours, sig);
            real_pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
        }
        g_sig = sig; /* threads starting now arm on the new one */
        /* Twice: a thread that armed on the old signal meanwhile is caught. */
        for (int pass = 0; pass < 2; pass++) {
            int n = hs_threads_count();
            for (int i = 0; i < n; i++) {
                hs_thread_slot *s = &hs_threads[i];
                if (atomic_load(&s->used) != HS_SLOT_LIVE || !s->has_timer || s->timer_sig != old)
                    continue;
                timer_delete(s->timer);
                s->has_timer = 0;
                if (sig)
                    arm_timer(s, s->tid, thread_cpu_clock(s->tid));
            }
            for (int i = 0; i < n; i++) {
                hs_thread_slot *s = &hs_threads[i];
                if (atomic_load(&s->used) != HS_SLOT_LIVE || !hs_wall_timer_on(s, old))
                    continue;
                hs_wall_timer_delete(s);
                hs_wall_timer_create(s, s->tid, thread_cpu_clock(s->tid), sig);
            }
        }
        real_sigaction(old, &g_prev, NULL); /* the program's wish, all along */
        if (sig)
            g_prev = prev;
        if (!sig)
            atomic_store(&hs_g.cpu_on, 0);
    }
    atomic_store(&g_moving, 0);
}

int hs_sampler_real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    resolve_real();
    return real_pthread_sigmask ? real_pthread_sigmask(how, set, old) : -1;
}

/* The program asks for signals in set (blocks or waits for them). */
static void program_wants(const sigset_t *set)
{
    if (set && g_sig && sigismember(set, g_sig) && !all_realtime(set))
        give_up_signal(set);
}

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                     struct sigaction *old)
{
    resolve_real();
    /* A handler of its own: the program uses the signal, it's the
     * program's. (SIG_IGN is not a use: ignoring foreign ones is what the
     * agent's handler does anyway.) */
    if (g_sig && sig == g_sig && act &&
        ((act->sa_flags & SA_SIGINFO) || (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN)))
        give_up_signal(NULL);
    if (g_sig && sig == g_sig) { /* ours: keep the program's wish for chaining */
        if (old)
            *old = g_prev;
        if (act)
            g_prev = *act;
        return 0;
    }
    if (!real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigaction(sig, act, old);
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t h)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

static const sigset_t *without_ours(int how, const sigset_t *set, sigset_t *copy)
{
    if (!set || !g_sig || how == SIG_UNBLOCK || !sigismember(set, g_sig))
        return set;
    if (!all_realtime(set)) { /* ours in particular: the program's signal */
        give_up_signal(set);
        return set;
    }
    *copy = *set;
    sigdelset(copy, g_sig);
    return copy;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    resolve_real();
    sigset_t copy;
    return real_sigprocmask(how, without_ours(how, set, &copy), old);
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    resolve_real();
    sigset_t copy;
    return real_pthread_sigmask(how, without_ours(how, set, &copy), old);
}

__attribute__((visibility("default"))) int sigwait(const sigset_t *set, int *sig)
{
    resolve_real();
    program_wants(set);
    return real_sigwait ? real_sigwait(set, sig) : ENOSYS;
}

__attribute__((visibility("default"))) int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
    resolve_real();
    program_wants(set);
    if (!real_sigwaitinfo) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigwaitinfo(set, info);
}

__attribute__((visibility("default"))) int sigtimedwait(const sigset_t *set, siginfo_t *info,
                                                        const struct timespec *timeout)
{
    resolve_real();
    program_wants(set);
    if (!real_sigtimedwait) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigtimedwait(set, info, timeout);
}

__attribute__((visibility("default"))) int signalfd(int fd, const sigset_t *mask, int flags)
{
    resolve_real();
    program_wants(mask);
    if (!real_signalfd) {
        errno = ENOSYS;
        return -1;
    }
    return real_signalfd(fd, mask, flags);
}

static void chain_previous(int sig, siginfo_t *si, void *uc)
{
    if (g_prev.sa_flags & SA_SIGINFO) {
        if (g_prev.sa_sigaction)
            g_prev.sa_sigaction(sig, si, uc);
    } else if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN && g_prev.sa_handler) {
        g_prev.sa_handler(sig);
    }
}

/* Red zone below the stack pointer that leaf code may use (x86-64 ABI). */
#if defined(__x86_64__)
#define STACK_REDZONE 128
#else
#define STACK_REDZONE 0
#endif

/* In the handler: the scan asked this thread to stop. Save the
 * interrupted code's registers and stack pointer, then wait until let go. */
static void stop_here(const ucontext_t *uc)
{
    int32_t slot = hs_self.slot;
    if (!hs_threads)
        return;
    hs_thread_slot *s;
    if (slot >= 0 && slot < HS_MAX_THREADS && hs_self.tid && hs_threads[slot].tid == hs_self.tid)
        s = &hs_threads[slot];
    else if (!(s = hs_threads_find((int32_t)syscall(SYS_gettid)))) /* adopted by the scan */
        return;
    int gen = atomic_load(&g_stop_go);
    int n = 0;
    uintptr_t sp = 0;
#if defined(__x86_64__)
    for (; n < NGREG && n < HS_STOP_REGS; n++)
        s->stop_regs[n] = (uint64_t)uc->uc_mcontext.gregs[n];
    sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    for (; n < 31 && n < HS_STOP_REGS; n++)
        s->stop_regs[n] = uc->uc_mcontext.regs[n];
    sp = (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
#endif
    s->stop_nregs = n;
    s->stop_sp = sp;
    int asked = STOP_ASKED;
    if (!atomic_compare_exchange_strong(&s->stop, &asked, STOP_PARKED))
        return; /* too late: the scan went on without this thread */
    int saved = errno;
    while (atomic_load(&g_stop_go) == gen)
        syscall(SYS_futex, &g_stop_go, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
    atomic_store(&s->stop, STOP_NONE);
    errno = saved;
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
    if (si->si_code == SI_QUEUE && si->si_value.sival_ptr == &g_stop_magic && si->si_pid == hs_g.pid) {
        stop_here((const ucontext_t *)ucv);
        return;
    }
    if (hs_wall_on_timer(si, (const ucontext_t *)ucv))
        return; /* a wall-clock sample */
    if (si->si_code != SI_TIMER || si->si_value.sival_ptr != &g_magic) {
        chain_previous(sig, si, ucv);
        return;
    }
    if (!atomic_load_explicit(&hs_g.cpu_on, memory_order_relaxed) || hs_self.in_agent)
        return; /* off, or the agent's own work (a dump): not the program's */
    int saved_errno = errno;
    int64_t t0 = hs_g.cfg.stats ? hs_now_ns(CLOCK_MONOTONIC) : 0;
    uint64_t pcs[HS_MAX_DEPTH_LIMIT];
    hs_thread *th = &hs_self;
    int32_t tid = th->tid ? th->tid : (int32_t)syscall(SYS_gettid);
    int n = hs_unwind_context((const ucontext_t *)ucv, &th->stack, pcs, hs_g.cfg.max_depth);
    n = hs_agent_hide_frames(pcs, n); /* the time is the program's, in its caller */
    if (n > 0) {
        hs_stack_entry *e = hs_stacktab_intern(&hs_g.cpu, tid, th->labels, pcs, (uint32_t)n);
        /* Overruns: ticks that elapsed while the signal was pending. */
        if (e)
            atomic_fetch_add_explicit(&e->values[0], 1 + (int64_t)si->si_overrun, memory_order_relaxed);
    }
    if (t0) {
        atomic_fetch_add_explicit(&hs_g.handler_ns, (uint64_t)(hs_now_ns(CLOCK_MONOTONIC) - t0), memory_order_relaxed);
        atomic_fetch_add_explicit(&hs_g.handler_calls, 1, memory_order_relaxed);
    }
    errno = saved_errno;
}

/* The alternate stack: the handler's own frames (the pc array is 4 KiB at
 * most), the unwinder's and the kernel's signal frame, with a guard page
 * below. */
#define ALTSTACK_SIZE (64 * 1024)

static void altstack_install(void)
{
    stack_t cur;
    if (hs_self.altstack || sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return; /* ours already, or the program's own */
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, ALTSTACK_SIZE + (size_t)page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return;
    mprotect(p, (size_t)page, PROT_NONE);
    stack_t ss = {.ss_sp = p + page, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, ALTSTACK_SIZE + (size_t)page);
        return;
    }
    hs_self.altstack = p;
}

static void altstack_remove(void)
{
    if (!hs_self.altstack)
        return;
    long page = sysconf(_SC_PAGESIZE);
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == (char *)hs_self.altstack + page) {
        if (cur.ss_flags & SS_ONSTACK)
            return; /* never unmap the stack we run on */
        stack_t off = {.ss_flags = SS_DISABLE};
        if (sigaltstack(&off, NULL) != 0)
            return;
    }
    munmap(hs_self.altstack, ALTSTACK_SIZE + (size_t)page);
    hs_self.altstack = NULL;
}

void hs_sampler_altstack_release(void)
{
    altstack_remove();
}

/* A first expiry uniform in (0, period]: a thread that runs for T then
 * gets T/period samples in expectation, however short T is. */
static long random_phase(long period, int32_t tid)
{
    static _Atomic uint64_t seq;
    uint64_t x = (uint64_t)hs_now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)(uint32_t)tid << 32) ^
                 atomic_fetch_add(&seq, 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64's finalizer */
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return 1 + (long)(x % (uint64_t)period);
}

/* The calling thread ends (or the process does): a period that expired on
 * its clock but was not delivered yet (the kernel checks CPU timers at its
 * tick; timer_gettime then says 1 ns is left) is counted now, at the
 * thread's start routine (else at the stack here). */
static void count_undelivered(hs_thread_slot *s)
{
    struct itimerspec cur;
    if (!s->has_timer || !atomic_load(&hs_g.cpu_on) || timer_gettime(s->timer, &cur) != 0 ||
        cur.it_value.tv_sec != 0 || cur.it_value.tv_nsec != 1)
        return;
    hs_stack_entry *e;
    if (hs_self.start_fn)
        e = hs_stacktab_intern(&hs_g.cpu, hs_self.tid, hs_self.labels, &hs_self.start_fn, 1);
    else
        e = hs_agent_intern_here(&hs_g.cpu);
    if (e)
        atomic_fetch_add_explicit(&e->values[0], 1, memory_order_relaxed);
}

/* Arm a CPU-time timer for thread tid on clock clk. */
static int arm_timer(hs_thread_slot *s, int32_t tid, clockid_t clk)
{
    timer_t t;
    int sig = g_sig;
    if (hs_threads_timer_create(tid, clk, sig, &g_magic, &t) != 0)
        return -1;
    long period = 1000000000L / hs_g.cfg.cpu_hz, first = random_phase(period, tid);
    struct itimerspec its = {{period / 1000000000L, period % 1000000000L},
                             {first / 1000000000L, first % 1000000000L}};
    if (timer_settime(t, 0, &its, NULL) != 0) {
        timer_delete(t);
        return -1;
    }
    if (s) {
        s->timer = t;
        s->timer_sig = sig;
        s->has_timer = 1;
    }
    return 0;
}

/* The CPU clock of another thread of this process (see clock_getcpuclockid). */
static clockid_t thread_cpu_clock(int32_t tid)
{
    return (clockid_t)((~(unsigned)tid << 3) | 6); /* CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED */
}

int hs_sampler_start(void)
{
    if (hs_threads_init() != 0)
        return -1;
    resolve_real();
    if (!real_sigaction)
        return -1;
    int sig = hs_g.cfg.signal ? hs_g.cfg.signal : SIGRTMAX - 3;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(sig, &sa, &g_prev) != 0)
        return -1;
    g_sig = sig;
    /* Unblock it in this thread; later threads inherit the mask. */
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, sig);
    real_pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
    /* Every thread that exists now; later ones come through pthread_create. */
    int32_t self = hs_gettid();
    DIR *d = opendir("/proc/self/task");
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            int32_t tid = (int32_t)atoi(de->d_name);
            if (tid <= 0 || tid == self || hs_threads_find(tid))
                continue;
            hs_thread_slot *ts = hs_threads_new_slot(tid);
            if (ts)
                ts->alive = 1;
            if (hs_g.cfg.cpu)
                arm_timer(ts, tid, thread_cpu_clock(tid));
            if (ts)
                hs_wall_timer_create(ts, tid, thread_cpu_clock(tid), g_sig);
        }
        closedir(d);
    }
    hs_sampler_thread_begin();
    return 0;
}

void hs_sampler_stop(void)
{
    if (hs_threads && hs_self.slot >= 0 && hs_threads[hs_self.slot].tid == hs_self.tid)
        count_undelivered(&hs_threads[hs_self.slot]);
    atomic_store(&hs_g.cpu_on, 0);
    int n = hs_threads_count();
    struct itimerspec zero = {{0, 0}, {0, 0}};
    for (int i = 0; i < n; i++)
        if (atomic_load(&hs_threads[i].used) && hs_threads[i].has_timer)
            timer_settime(hs_threads[i].timer, 0, &zero, NULL);
}

void hs_sampler_thread_begin(void)
{
    hs_thread_identify();
    altstack_install();
    if (hs_threads_init() != 0)
        return;
    /* This thread's slot if it has one already (restart, fork), else a new
     * one: no search, thread creation stays O(1). */
    hs_thread_slot *s = hs_self.slot >= 0 && hs_threads[hs_self.slot].tid == hs_self.tid &&
                             atomic_load(&hs_threads[hs_self.slot].used) == HS_SLOT_LIVE
                         ? &hs_threads[hs_self.slot]
                         : hs_threads_new_slot(hs_self.tid);
    hs_self.slot = s ? (int32_t)(s - hs_threads) : -1;
    if (s) {
        s->stack_lo = hs_self.stack.lo;
        s->stack_hi = hs_self.stack.hi;
        s->alive = 1;
        hs_wall_timer_create(s, hs_self.tid, CLOCK_THREAD_CPUTIME_ID, g_sig);
    }
    if (!g_sig || !hs_g.cfg.cpu || (s && s->has_timer))
        return; /* CPU sampling is off, or this thread is armed already */
    arm_timer(s, hs_self.tid, CLOCK_THREAD_CPUTIME_ID);
}

static int32_t g_scanner; /* the thread that stops the others */

/* Another live registered thread (its stack known or not). */
static int other_thread(const hs_thread_slot *s)
{
    return atomic_load(&s->used) == HS_SLOT_LIVE && s->alive && s->tid != g_scanner;
}

/* ---- threads the registry lacks, for the leak scan ----
 *
 * Threads the agent did not see start: those that ran before it (listed
 * at its start, their stacks unknown) and those the C library starts with
 * its own pthread_create, which the interposed one never sees (the threads
 * of SIGEV_THREAD timers, which run the program's function). The scan gives
 * each a slot, stops it like the others and finds its stack from where it
 * stopped: the mapping of /proc/self/maps that holds its stack pointer.
 * Raw system calls, a buffer on the stack: no malloc, no stdio (threads
 * that are stopped may hold their locks). */

struct hs_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static int32_t parse_int(const char *p)
{
    int32_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return *p ? -1 : v;
}

static void adopt_unknown_threads(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    int32_t self = hs_gettid();
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            const struct hs_dirent64 *d = (const struct hs_dirent64 *)(const void *)(buf + off);
            off += d->reclen;
            int32_t tid = parse_int(d->name);
            if (tid <= 0 || tid == self)
                continue;
            hs_thread_slot *s = hs_threads_find(tid);
            if (s && atomic_load(&s->used) == HS_SLOT_LIVE && s->alive)
                continue;
            if ((s = hs_threads_new_slot(tid)))
                s->alive = 1;
        }
    }
    close(fd);
}

static uint64_t parse_hex(const char **pp)
{
    const char *p = *pp;
    uint64_t v = 0;
    if (p[0] == '0' && p[1] == 'x')
        p += 2;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v << 4 | (uint64_t)d;
    }
    *pp = p;
    return v;
}

/* [*lo, *hi) of the mapping of /proc/self/maps that holds addr. */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    size_t have = 0;
    int found = -1;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof buf - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            const char *p = line;
            uint64_t a = parse_hex(&p), b = *p == '-' ? (p++, parse_hex(&p)) : 0;
            if (addr >= a && addr < b) {
                *lo = (uintptr_t)a;
                *hi = (uintptr_t)b;
                found = 0;
                break;
            }
            line = nl + 1;
        }
        if (found == 0)
            break;
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf)
            have = 0; /* a line longer than the buffer: not a mapping's */
    }
    close(fd);
    return found;
}

/* The stack pointer of thread tid if it is blocked in the kernel
 * (/proc/self/task/TID/syscall: "NR ARGS... SP PC", or "-1 SP PC"); 0 if
 * it runs or the file can't be read. */
static uintptr_t blocked_sp(int32_t tid)
{
    char path[64] = "/proc/self/task/", *q = path + strlen(path), digits[12];
    int nd = 0;
    for (uint32_t v = (uint32_t)tid; v || !nd; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        *q++ = digits[--nd];
    memcpy(q, "/syscall", 9);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[256];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = 0;
    if (!strncmp(buf, "running", 7))
        return 0;
    const char *f[10];
    int nf = 0;
    for (char *p = buf; *p && nf < 10;) { /* the fields; sp is the one before last */
        while (*p == ' ' || *p == '\n')
            p++;
        if (!*p)
            break;
        f[nf++] = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
    }
    if (nf < 3)
        return 0;
    const char *p = f[nf - 2];
    return (uintptr_t)parse_hex(&p);
}

/* Does thread tid block signal sig (/proc/self/task/TID/status, SigBlk)?
 * Such a thread will not stop in the handler: it is not asked (the agent's
 * own threads block every signal; waiting for them cost the leak scan its
 * whole timeout, seconds on a loaded machine). 0 when it can't be read. */
static int blocks_signal(int32_t tid, int sig)
{
    char path[64] = "/proc/self/task/", *q = path + strlen(path), digits[12], buf[2048];
    int nd = 0;
    for (uint32_t v = (uint32_t)tid; v || !nd; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        *q++ = digits[--nd];
    memcpy(q, "/status", 8);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = 0;
    const char *p = strstr(buf, "\nSigBlk:");
    if (!p)
        return 0;
    p += 9;
    while (*p == ' ' || *p == '\t')
        p++;
    return (int)(parse_hex(&p) >> (sig - 1) & 1);
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* ---- threads that neither stop nor block: held by a tracer ----
 *
 * A thread that blocks the agent's signal and runs in user space (a busy
 * loop) does not stop in the handler, and /proc/self/task/TID/syscall says
 * only "running": neither its stack pointer nor its registers are known.
 * As LeakSanitizer does, a process of ours traces it: a child made with a
 * raw clone (no fork handlers: a stopped thread may hold their locks; no
 * SIGCHLD for the program, it is reaped with __WALL) attaches to each such
 * thread (PTRACE_SEIZE, PTRACE_INTERRUPT), writes its registers into a
 * shared page and holds it stopped until the scan is over. Where ptrace is
 * not allowed (a non-dumpable process, a seccomp filter, Yama's scope 2-3)
 * the thread stays as it was: not scanned if its stack is unknown, whole
 * otherwise. */

#define TRACE_MAX 64
#define TRACE_NREGS ((int)(sizeof(struct user_regs_struct) / sizeof(uint64_t)))

typedef struct {
    _Atomic int go;      /* the parent let the tracer attach (PR_SET_PTRACER) */
    _Atomic int ready;   /* the tracer wrote the registers */
    _Atomic int release; /* futex word: the scan is over */
    int n;
    int32_t tid[TRACE_MAX];
    int ok[TRACE_MAX];
    uint64_t regs[TRACE_MAX][TRACE_NREGS];
} trace_page;

static trace_page *g_trace;
static pid_t g_tracer;

static long wait_for(_Atomic int *word, long timeout_us)
{
    long waited = 0;
    while (!atomic_load(word) && waited < timeout_us) {
        sleep_us(200);
        waited += 200;
    }
    return atomic_load(word);
}

/* The tracer process: raw system calls only. */
static __attribute__((noreturn)) void tracer_main(trace_page *tp)
{
    wait_for(&tp->go, 2000000);
    for (int i = 0; i < tp->n; i++) {
        pid_t tid = tp->tid[i];
        int st;
        if (syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0) != 0)
            continue;
        if (syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
            syscall(SYS_wait4, tid, &st, __WALL, NULL) != tid || !WIFSTOPPED(st)) {
            syscall(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
            continue;
        }
        struct user_regs_struct r;
        if (syscall(SYS_ptrace, PTRACE_GETREGS, tid, 0, &r) == 0) {
            memcpy(tp->regs[i], &r, sizeof r);
            tp->ok[i] = 1;
        }
    }
    atomic_store(&tp->ready, 1);
    /* Hold them until the scan is over (a minute at most). */
    for (int k = 0; k < 600 && !atomic_load(&tp->release); k++) {
        struct timespec ts = {0, 100000000};
        syscall(SYS_futex, &tp->release, FUTEX_WAIT, 0, &ts, NULL, 0);
    }
    for (int i = 0; i < tp->n; i++)
        syscall(SYS_ptrace, PTRACE_DETACH, tp->tid[i], 0, 0);
    syscall(SYS_exit, 0);
    __builtin_unreachable();
}

/* Have the threads of slot[0..n) held by a tracer; their slots get
 * the registers and STOP_TRACED. */
static void trace_running(hs_thread_slot **slot, int n)
{
#if defined(__x86_64__)
    if (n <= 0)
        return;
    if (n > TRACE_MAX)
        n = TRACE_MAX;
    trace_page *tp = mmap(NULL, sizeof *tp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (tp == MAP_FAILED)
        return;
    tp->n = n;
    for (int i = 0; i < n; i++)
        tp->tid[i] = slot[i]->tid;
    long pid = syscall(SYS_clone, 0 /* no exit signal */, NULL, NULL, NULL, 0);
    if (pid == 0)
        tracer_main(tp);
    if (pid < 0) {
        munmap(tp, sizeof *tp);
        return;
    }
    prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0); /* Yama's scope 1 (EINVAL without Yama) */
    atomic_store(&tp->go, 1);
    g_trace = tp;
    g_tracer = (pid_t)pid;
    if (!wait_for(&tp->ready, 1000000))
        return; /* hs_sampler_resume_others ends it */
    for (int i = 0; i < n; i++) {
        if (!tp->ok[i])
            continue;
        struct user_regs_struct r;
        memcpy(&r, tp->regs[i], sizeof r);
        int k = TRACE_NREGS < HS_STOP_REGS ? TRACE_NREGS : HS_STOP_REGS;
        memcpy(slot[i]->stop_regs, tp->regs[i], (size_t)k * sizeof(uint64_t));
        slot[i]->stop_nregs = k;
        slot[i]->stop_sp = (uintptr_t)r.rsp;
        atomic_store(&slot[i]->stop, STOP_TRACED);
    }
#else
    (void)slot;
    (void)n;
#endif
}

static void trace_release(void)
{
    if (!g_trace)
        return;
    atomic_store(&g_trace->release, 1);
    syscall(SYS_futex, &g_trace->release, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    int st;
    for (int k = 0; k < 2000 && syscall(SYS_wait4, g_tracer, &st, __WALL | WNOHANG, NULL) == 0; k++)
        sleep_us(500);
    if (syscall(SYS_wait4, g_tracer, &st, __WALL | WNOHANG, NULL) == 0) { /* stuck: end it */
        kill(g_tracer, SIGKILL);
        syscall(SYS_wait4, g_tracer, &st, __WALL, NULL);
    }
    prctl(PR_SET_PTRACER, 0, 0, 0, 0);
    munmap(g_trace, sizeof *g_trace);
    g_trace = NULL;
    g_tracer = 0;
}

int hs_sampler_stop_others(int timeout_ms)
{
    g_scanner = hs_gettid();
    if (hs_threads && g_sig)
        adopt_unknown_threads();
    int n = hs_threads && g_sig ? hs_threads_count() : 0, asked = 0;
    pid_t pid = getpid();
    for (int i = 0; i < n; i++) {
        hs_thread_slot *s = &hs_threads[i];
        if (!other_thread(s))
            continue;
        if (blocks_signal(s->tid, g_sig)) {
            atomic_store(&s->stop, STOP_UNASKED); /* not asked: handled below as one that did not answer */
            continue;
        }
        atomic_store(&s->stop, STOP_ASKED);
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = g_sig;
        si.si_code = SI_QUEUE;
        si.si_pid = pid;
        si.si_uid = getuid();
        si.si_value.sival_ptr = &g_stop_magic;
        if (syscall(SYS_rt_tgsigqueueinfo, pid, s->tid, g_sig, &si) == 0)
            asked++;
        else
            atomic_store(&s->stop, STOP_NONE);
    }
    /* Bounded in time, not in rounds (a 100 us sleep takes ms under load). */
    int64_t deadline = hs_now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
    while (asked && hs_now_ns(CLOCK_MONOTONIC) < deadline) {
        int pending = 0;
        for (int i = 0; i < n && !pending; i++)
            pending = atomic_load(&hs_threads[i].stop) == STOP_ASKED;
        if (!pending)
            break;
        sleep_us(100);
    }
    /* No answer: not stopped. One blocked in the kernel is scanned from
     * where it blocks; one that runs is held by a tracer. */
    hs_thread_slot *running[TRACE_MAX];
    int nrun = 0, late = 0;
    for (int i = 0; i < n; i++) {
        int want = STOP_ASKED, unasked = STOP_UNASKED;
        if (atomic_compare_exchange_strong(&hs_threads[i].stop, &want, STOP_NONE))
            late++;
        else if (!atomic_compare_exchange_strong(&hs_threads[i].stop, &unasked, STOP_NONE))
            continue;
        if (nrun < TRACE_MAX && !blocked_sp(hs_threads[i].tid))
            running[nrun++] = &hs_threads[i];
    }
    trace_running(running, nrun);
    return late;
}

void hs_sampler_each_other_stack(void (*fn)(const hs_thread_stack *t, void *arg), void *arg)
{
    int n = hs_threads ? hs_threads_count() : 0;
    for (int i = 0; i < n; i++) {
        hs_thread_slot *s = &hs_threads[i];
        if (!other_thread(s))
            continue;
        hs_thread_stack t = {s->tid, s->stack_lo, s->stack_lo, s->stack_hi, NULL, 0};
        int stop = atomic_load(&s->stop), parked = stop == STOP_PARKED || stop == STOP_TRACED;
        /* Where its live frames start: where it stopped, else where it
         * blocks in the kernel (one that could not take the signal, e.g.
         * with it blocked); 0 if it runs. */
        uintptr_t sp = parked ? s->stop_sp : blocked_sp(s->tid);
        if (!t.hi && (!sp || mapping_of(sp, &t.lo, &t.hi) != 0))
            continue; /* its stack unknown (it did not stop): not scanned */
        if (parked) {
            t.regs = s->stop_regs;
            t.nregs = s->stop_nregs;
        }
        t.live_lo = t.lo;
        uintptr_t from = sp >= STACK_REDZONE ? sp - STACK_REDZONE : 0;
        if (sp && from >= t.lo && from < t.hi)
            t.live_lo = from; /* else on another stack (a handler's): all of it */
        fn(&t, arg);
    }
}

void hs_sampler_resume_others(void)
{
    trace_release();
    if (!hs_threads)
        return;
    for (int i = 0, n = hs_threads_count(); i < n; i++) {
        int traced = STOP_TRACED;
        atomic_compare_exchange_strong(&hs_threads[i].stop, &traced, STOP_NONE);
    }
    atomic_fetch_add(&g_stop_go, 1);
    syscall(SYS_futex, &g_stop_go, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    int n = hs_threads_count();
    for (int waited = 0; waited < 10000; waited++) { /* until they left the handler (1 s at most) */
        int parked = 0;
        for (int i = 0; i < n && !parked; i++)
            parked = atomic_load(&hs_threads[i].stop) == STOP_PARKED;
        if (!parked)
            return;
        sleep_us(100);
    }
}

void hs_sampler_thread_end(void)
{
    if (!hs_threads || hs_self.slot < 0)
        return;
    hs_thread_slot *s = &hs_threads[hs_self.slot];
    prctl(PR_GET_NAME, s->name, 0, 0, 0);
    s->alive = 0;
    hs_wall_thread_end(s);
    count_undelivered(s);
    if (s->has_timer) {
        timer_delete(s->timer);
        s->has_timer = 0;
    }
    atomic_store(&s->used, HS_SLOT_DEAD); /* its name stays until the slot is reused */
    hs_self.slot = -1;
    altstack_remove();
}

void hs_sampler_after_fork(int profiling)
{
    /* Timers are not inherited; the child has one thread. */
    hs_threads_forget_all();
    hs_self.tid = 0;
    hs_self.slot = -1;
    if (!profiling)
        g_sig = 0; /* the child doesn't sample: its signal is its own again */
    hs_sampler_thread_begin();
}
