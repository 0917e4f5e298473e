/* bench_harness_cases.c — benchmarks with known behaviour for the harness's
 * tests (tests/integration/bench_harness_*.sh): a cost proportional to a
 * parameter, exactly known allocations, a crash, a failure, and a loop that
 * must be all a --profile run sees. BENCH_SCALE (environment) multiplies
 * the work of madd: a slowdown without changing the benchmark's name. */
#include <hotspur/bench.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* n dependent multiply-adds: each waits for the previous one. */
static __attribute__((noinline)) uint64_t madd_chain(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

HS_BENCH_WITH(madd, .params = "n=100..800*2")
{
    long n = hs_bench_arg(b, "n");
    const char *scale = getenv("BENCH_SCALE");
    if (scale)
        n *= atol(scale);
    uint64_t x = 1;
    while (hs_bench_loop(b)) {
        x = madd_chain(x, n);
        hs_do_not_optimize(x);
    }
}

/* Exactly 3 allocations of 100 bytes per operation. */
static __attribute__((noinline)) void three_allocs(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = malloc(100);
        hs_do_not_optimize(p[i]);
    }
    for (int i = 0; i < 3; i++)
        free(p[i]);
}

HS_BENCH(allocs3)
{
    void *setup = malloc(4096); /* setup allocations are not counted */
    hs_do_not_optimize(setup);
    while (hs_bench_loop(b))
        three_allocs();
    free(setup);
}

HS_BENCH_WITH(allocs3_threads, .threads = 2)
{
    while (hs_bench_loop(b))
        three_allocs();
}

/* Per-iteration setup under hs_bench_pause: its allocation is not counted. */
HS_BENCH(allocs_paused)
{
    while (hs_bench_loop(b)) {
        hs_bench_pause(b);
        void *p = malloc(1000);
        hs_do_not_optimize(p);
        hs_bench_resume(b);
        free(p);
        void *q = calloc(2, 25);
        hs_do_not_optimize(q);
        free(q);
    }
}

HS_BENCH(crash)
{
    while (hs_bench_loop(b))
        raise(SIGSEGV);
}

HS_BENCH(fails)
{
    int fd_ok = 0;
    if (!fd_ok)
        hs_bench_fail(b, "the fixture could not be set up (on purpose)");
    while (hs_bench_loop(b))
        hs_clobber_memory();
}

/* --profile: the setup burns CPU (~60 ms) and allocates in its own functions; the
 * profile of the loop must not contain them. */
static volatile uint64_t sink;

static __attribute__((noinline)) void setup_burn(void)
{
    uint64_t x = 1;
    for (long i = 0; i < 60000000; i++)
        x = x * 3 + (uint64_t)i;
    sink = x;
}

static __attribute__((noinline)) void *setup_alloc(void)
{
    return malloc(1 << 20);
}

static __attribute__((noinline)) void loop_work(void)
{
    sink = madd_chain(sink, 2000);
    void *p = malloc(64);
    hs_do_not_optimize(p);
    free(p);
}

HS_BENCH(profiled)
{
    setup_burn();
    void *big = setup_alloc();
    hs_do_not_optimize(big);
    while (hs_bench_loop(b))
        loop_work();
    free(big);
}
