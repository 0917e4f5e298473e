/* bench.h — hotspur's microbenchmark harness for C (libhotspur_bench).
 *
 * A benchmark file is all a user writes; main() comes from the library:
 *
 *     #include <hotspur/bench.h>
 *
 *     HS_BENCH(copy_1k) {
 *         char src[1024] = {0}, dst[1024];          // setup: not timed
 *         while (hs_bench_loop(b)) {                // the measured loop
 *             memcpy(dst, src, sizeof dst);
 *             hs_clobber_memory();
 *         }
 *     }                                             // teardown: not timed
 *
 *     HS_BENCH_WITH(sum, .params = "n=64..4096*4;kind=int,double", .threads = 2) {
 *         long n = hs_bench_arg(b, "n");
 *         const char *kind = hs_bench_arg_str(b, "kind");
 *         ...
 *     }
 *
 *     cc -O2 my_bench.c $(pkg-config --cflags --libs hotspur-bench) -o my_bench
 *     ./my_bench --help
 *
 * Parameters (.params): "name=LIST;name=LIST..." where LIST is v1,v2,...
 * (integers or strings), A..B*K (A, A*K, ... up to B) or A..B+K (A, A+K, ...
 * up to B). Every combination is its own case, named "sum/n=64/kind=int".
 * .threads = N runs the function in N threads at once, each with its own
 * hs_bench; their loops start together and the measurement ends when the
 * last one finishes.
 *
 * Every call that can fail reports it through hs_bench_fail(): the case is
 * reported as failed and the other cases still run. docs/bench.md has the
 * full manual. */
#ifndef HOTSPUR_BENCH_H
#define HOTSPUR_BENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The state of one thread of one running case. Only hs_bench_loop() reads
 * the fields; treat them as private. */
typedef struct hs_bench {
    uint64_t hs_left; /* iterations left in the current measurement */
    void *hs_priv;
} hs_bench;

typedef void (*hs_bench_fn)(hs_bench *b);

/* What HS_BENCH_WITH registers. */
typedef struct {
    const char *name;
    hs_bench_fn fn;
    const char *file;
    int line;
    int optimized;      /* the benchmark's file was compiled with optimization */
    const char *params; /* NULL or the grammar above */
    int threads;        /* 0 or 1: single-threaded */
} hs_bench_def;

void hs_bench_register(const hs_bench_def *def);

#ifdef __OPTIMIZE__
#define HS_BENCH_OPTIMIZED_ 1
#else
#define HS_BENCH_OPTIMIZED_ 0
#endif

/* C++ (g++ 8+, clang) takes the designated initializers too, but warns
 * about the members a benchmark leaves out: they are meant to be zero. */
#define HS_BENCH_DIAG_PUSH_                                                                        \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")
#define HS_BENCH_DIAG_POP_ _Pragma("GCC diagnostic pop")

/* HS_BENCH_WITH(name, .params = "...", .threads = N) { body using b } */
#define HS_BENCH_WITH(bname, ...)                                                                  \
    static void hs_bench_fn_##bname(hs_bench *b);                                                  \
    HS_BENCH_DIAG_PUSH_                                                                            \
    static const hs_bench_def hs_bench_def_##bname = {.name = #bname,                             \
                                                      .fn = hs_bench_fn_##bname,                   \
                                                      .file = __FILE__,                            \
                                                      .line = __LINE__,                            \
                                                      .optimized = HS_BENCH_OPTIMIZED_,            \
                                                      __VA_ARGS__};                                \
    HS_BENCH_DIAG_POP_                                                                             \
    __attribute__((constructor)) static void hs_bench_reg_##bname(void)                            \
    {                                                                                              \
        hs_bench_register(&hs_bench_def_##bname);                                                  \
    }                                                                                              \
    static void hs_bench_fn_##bname(hs_bench *b __attribute__((unused)))

#define HS_BENCH(bname) HS_BENCH_WITH(bname, .threads = 1)

/* Start/end of a measurement: called by hs_bench_loop() on the first and
 * the last turn; not to be called directly. */
int hs_bench_loop_edge_(hs_bench *b);

/* while (hs_bench_loop(b)) { one operation } — true once per iteration;
 * the first call starts the clock, the last one stops it. */
static inline int hs_bench_loop(hs_bench *b)
{
    if (__builtin_expect(b->hs_left != 0, 1)) {
        b->hs_left--;
        return 1;
    }
    return hs_bench_loop_edge_(b);
}

/* Iterations of the current measurement (for setup sized by it). */
uint64_t hs_bench_iterations(const hs_bench *b);

/* Stop and restart the clock, the allocation counters and the hardware
 * counters of the calling thread, e.g. around per-iteration setup. Each
 * pause costs two clock reads: only for work much longer than that. */
void hs_bench_pause(hs_bench *b);
void hs_bench_resume(hs_bench *b);

/* Integer / string value of parameter `name` (0 / NULL if there is none:
 * the case fails with a message then). An integer parameter also reads as
 * its string. */
long hs_bench_arg(hs_bench *b, const char *name);
const char *hs_bench_arg_str(hs_bench *b, const char *name);

/* This thread's index (0..threads-1) and the number of threads. */
int hs_bench_thread_index(const hs_bench *b);
int hs_bench_threads(const hs_bench *b);

/* Mark the case failed with a message: the loop ends at its next turn and
 * the case is reported as failed (the other cases still run). */
void hs_bench_fail(hs_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keep the compiler from deleting a computation whose result is unused:
 * the value is treated as read by an opaque instruction. */
#define hs_do_not_optimize(x) __asm__ __volatile__("" : : "r,m"(x) : "memory")

/* Make the compiler assume every memory location may have been read and
 * written here, so stores before it are not dropped. */
#define hs_clobber_memory() __asm__ __volatile__("" : : : "memory")

#ifdef __cplusplus
}
#endif

#endif
