/* test_unwind.c — the agent's DWARF CFI unwinder, exercised in-process:
 * through our own -fomit-frame-pointer frames, through libc's qsort (Debian's
 * libc has no frame pointers), and from a signal handler's ucontext; and
 * the initial thread's stack bounds against glibc's. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/unwind.h"

#define MAXF 64
static uint64_t g_pcs[MAXF];
static int g_n;

/* True when some captured pc lies inside fn (code within `span` bytes). */
static int has_frame_in(void *fn, size_t span)
{
    uintptr_t lo = (uintptr_t)fn;
    for (int i = 0; i < g_n; i++)
        if (g_pcs[i] >= lo && g_pcs[i] < lo + span)
            return i;
    return -1;
}

__attribute__((unused)) static int has_frame_named(const char *name)
{
    for (int i = 0; i < g_n; i++) {
        Dl_info info;
        if (dladdr((void *)(uintptr_t)g_pcs[i], &info) && info.dli_sname &&
            strcmp(info.dli_sname, name) == 0)
            return i;
    }
    return -1;
}

__attribute__((noinline)) static int leaf(int x)
{
    g_n = hs_unwind_here(NULL, g_pcs, MAXF, 0);
    __asm__ volatile("" ::: "memory");
    return x + 1;
}
__attribute__((noinline)) static int middle(int x)
{
    int r = leaf(x * 3);
    __asm__ volatile("" ::: "memory");
    return r + 2;
}
__attribute__((noinline)) static int outer(int x)
{
    int r = middle(x + 1);
    __asm__ volatile("" ::: "memory");
    return r * 2;
}

static void test_own_frames(void **state)
{
    (void)state;
    assert_true(outer(1) > 0);
    assert_true(g_n >= 4);
    int a = has_frame_in((void *)leaf, 256), b = has_frame_in((void *)middle, 256),
        c = has_frame_in((void *)outer, 256);
    assert_true(a >= 0 && b > a && c > b);
    assert_true(has_frame_in((void *)test_own_frames, 2048) > c);
}

/* qsort's comparator unwinds: the chain must pass through libc. */
static int g_cmp_done;
static int cmp(const void *x, const void *y)
{
    if (!g_cmp_done) {
        g_n = hs_unwind_here(NULL, g_pcs, MAXF, 0);
        g_cmp_done = 1;
    }
    return *(const int *)x - *(const int *)y;
}

__attribute__((noinline)) static void sort_caller(void)
{
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    g_cmp_done = 0;
    qsort(v, 64, sizeof *v, cmp);
    __asm__ volatile("" ::: "memory");
}

static void test_through_libc_qsort(void **state)
{
    (void)state;
    sort_caller();
    int c = has_frame_in((void *)cmp, 256);
    int s = has_frame_in((void *)sort_caller, 1024); /* ASan makes it long */
    assert_true(c == 0);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's runtime brings its own qsort: the frame between is libasan's. */
    int q = c + 1;
#else
    int q = has_frame_named("qsort");
    if (q < 0)
        q = has_frame_named("qsort_r");
#endif
    assert_true(q > c);
    assert_true(s > q);
    assert_true(has_frame_in((void *)test_through_libc_qsort, 2048) > s);
}

/* A signal handler unwinds the interrupted context. */
static volatile sig_atomic_t g_spin;
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    g_n = hs_unwind_context((const ucontext_t *)uc, NULL, g_pcs, MAXF);
}

__attribute__((noinline)) static void raiser(void)
{
    raise(SIGUSR1);
    __asm__ volatile("" ::: "memory");
}

static void test_signal_context(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
    raiser();
    assert_true(g_n >= 3);
    int r = has_frame_in((void *)raiser, 128);
    assert_true(r >= 0);
    assert_true(has_frame_in((void *)test_signal_context, 2048) > r);
}

/* From inside a handler, unwinding "here" crosses the signal frame. */
static void on_signal_here(int sig)
{
    (void)sig;
    g_n = hs_unwind_here(NULL, g_pcs, MAXF, 0);
}

static void test_across_signal_frame(void **state)
{
    (void)state;
    signal(SIGUSR2, on_signal_here);
    raise(SIGUSR2);
    assert_true(has_frame_in((void *)on_signal_here, 128) == 0);
    assert_true(has_frame_in((void *)test_across_signal_frame, 2048) > 0);
}

static void test_bounds_and_max(void **state)
{
    (void)state;
    g_n = hs_unwind_here(NULL, g_pcs, 2, 0);
    assert_int_equal(g_n, 2);
    g_n = hs_unwind_here(NULL, g_pcs, MAXF, 1000);
    assert_int_equal(g_n, 0);
}

/* glibc's bounds of the calling thread (for the initial one it reads
 * /proc/self/maps). */
static void glibc_stack(hs_stack_bounds *b)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
    assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
    pthread_attr_destroy(&attr);
    b->lo = (uintptr_t)addr;
    b->hi = (uintptr_t)addr + size;
}

/* The top is glibc's; so is the bottom (the stack limit below the end of
 * the stack mapping) unless a mapping lies closer (then glibc's is higher). */
static void check_initial_stack(rlim_t limit)
{
    hs_stack_bounds ours = {0, 0}, glibc;
    assert_int_equal(hs_unwind_initial_stack(&ours), 0);
    glibc_stack(&glibc);
    assert_int_equal(ours.hi, glibc.hi);
    assert_true(glibc.lo >= ours.lo);
    assert_true(ours.hi - ours.lo <= (limit & ~(rlim_t)(sysconf(_SC_PAGESIZE) - 1)));
    assert_true(ours.hi - ours.lo > (limit & ~(rlim_t)(sysconf(_SC_PAGESIZE) - 1)) - (1u << 20));
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    assert_true(here >= ours.lo && here < ours.hi);
}

static void test_initial_stack(void **state)
{
    (void)state;
    struct rlimit old, rl;
    assert_int_equal(getrlimit(RLIMIT_STACK, &old), 0);
    if (old.rlim_cur != RLIM_INFINITY)
        check_initial_stack(old.rlim_cur);
    /* Other limits (the stack mapping stays where it is). */
    const rlim_t limits[] = {4u << 20, 16u << 20, (8u << 20) + 1000};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        rl = old;
        rl.rlim_cur = limits[i];
        if (old.rlim_max != RLIM_INFINITY && limits[i] > old.rlim_max)
            continue;
        assert_int_equal(setrlimit(RLIMIT_STACK, &rl), 0);
        check_initial_stack(limits[i]);
    }
    /* No limit: unknown, glibc decides. */
    rl = old;
    rl.rlim_cur = RLIM_INFINITY;
    if (old.rlim_max == RLIM_INFINITY) {
        hs_stack_bounds b = {0, 0};
        assert_int_equal(setrlimit(RLIMIT_STACK, &rl), 0);
        assert_int_equal(hs_unwind_initial_stack(&b), -1);
    }
    assert_int_equal(setrlimit(RLIMIT_STACK, &old), 0);
}

/* On another thread, and in a fork child of it (whose only thread runs on
 * that thread's stack, though its tid is the pid): not the initial stack. */
static void *other_thread(void *arg)
{
    (void)arg;
    hs_stack_bounds b = {0, 0};
    intptr_t bad = hs_unwind_initial_stack(&b) != -1;
    pid_t pid = fork();
    if (pid == 0)
        _exit(hs_unwind_initial_stack(&b) == -1 ? 0 : 1);
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bad |= 2;
    return (void *)bad;
}

static void test_initial_stack_other_thread(void **state)
{
    (void)state;
    pthread_t t;
    void *bad = (void *)-1;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &bad), 0);
    assert_int_equal((intptr_t)bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_frames),
        cmocka_unit_test(test_through_libc_qsort),
        cmocka_unit_test(test_signal_context),
        cmocka_unit_test(test_across_signal_frame),
        cmocka_unit_test(test_bounds_and_max),
        cmocka_unit_test(test_initial_stack),
        cmocka_unit_test(test_initial_stack_other_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
