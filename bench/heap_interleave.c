/* heap_interleave.c — the heap hooks' cost in time, measured inside one
 * process (bench/heap_fastpath.sh, "Time, interleaved in one process").
 *
 *   heap_interleave GROUPS PAIRS
 *
 * On a shared machine separate runs spread by tens of per cent in CPU time,
 * more than the few per cent to be measured. Here one thread runs the loop
 * of tests/programs/heap_pairs.c (free one of 64 blocks at random, malloc
 * 16..527 bytes in its place) in slices of PAIRS pairs, alternately through
 * malloc/free (the agent's when it is preloaded) and through glibc's
 * __libc_malloc/__libc_free, which nothing interposes: the path a program
 * without the agent takes (its PLT, then glibc). A group is four slices in
 * the order hooked, plain, plain, hooked, each timed with the thread's CPU
 * clock, with the same random sizes; its ratio is hooked / plain. Prints
 *
 *   groups N pairs P ratio_median R q1 Q1 q3 Q3 plain_ns_per_pair X hooked_ns_per_pair Y
 *
 * Without a preloaded agent both paths are glibc's: the ratio is the
 * method's own bias (1.00 expected).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 64

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static volatile uint64_t g_sink;

/* One slice of the loop, through allocator MALLOC/FREE. */
#define SLICE(name, MALLOC, FREE)                                                   \
    static __attribute__((noinline)) void name(uint64_t seed, long pairs)          \
    {                                                                               \
        unsigned char *slot[SLOTS];                                                 \
        uint64_t rng = seed, sum = 0;                                               \
        for (int i = 0; i < SLOTS; i++) {                                           \
            size_t n = 16 + (size_t)(next(&rng) % 512);                             \
            slot[i] = MALLOC(n);                                                    \
            if (!slot[i])                                                           \
                abort();                                                            \
            slot[i][0] = (unsigned char)n;                                          \
        }                                                                           \
        for (long k = 0; k < pairs; k++) {                                          \
            uint64_t r = next(&rng);                                                \
            unsigned i = (unsigned)(r >> 58);                                       \
            sum += slot[i][0];                                                      \
            FREE(slot[i]);                                                          \
            size_t n = 16 + (size_t)(r % 512);                                      \
            unsigned char *p = MALLOC(n);                                           \
            if (!p)                                                                 \
                abort();                                                            \
            p[0] = (unsigned char)r;                                                \
            p[n - 1] = (unsigned char)(r >> 8);                                     \
            slot[i] = p;                                                            \
        }                                                                           \
        for (int i = 0; i < SLOTS; i++) {                                           \
            sum += slot[i][0];                                                      \
            FREE(slot[i]);                                                          \
        }                                                                           \
        g_sink += sum;                                                              \
    }

SLICE(slice_hooked, malloc, free)
SLICE(slice_plain, __libc_malloc, __libc_free)

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double timed(void (*fn)(uint64_t, long), uint64_t seed, long pairs)
{
    double t0 = cpu_now();
    fn(seed, pairs);
    return cpu_now() - t0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long groups = argc == 3 ? atol(argv[1]) : 0, pairs = argc == 3 ? atol(argv[2]) : 0;
    if (groups < 1 || pairs < 1) {
        fprintf(stderr, "usage: heap_interleave GROUPS PAIRS\n");
        return 2;
    }
    double *ratio = malloc((size_t)groups * sizeof *ratio);
    if (!ratio)
        return 1;
    slice_hooked(1, pairs); /* warm-up: caches, the allocator's arenas */
    slice_plain(1, pairs);
    double plain = 0, hooked = 0;
    for (long g = 0; g < groups; g++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(g + 1);
        double h1 = timed(slice_hooked, seed, pairs);
        double p1 = timed(slice_plain, seed, pairs);
        double p2 = timed(slice_plain, seed ^ 1, pairs);
        double h2 = timed(slice_hooked, seed ^ 1, pairs);
        ratio[g] = (h1 + h2) / (p1 + p2);
        plain += p1 + p2;
        hooked += h1 + h2;
    }
    qsort(ratio, (size_t)groups, sizeof *ratio, by_value);
    double n = 2.0 * (double)groups * (double)(pairs + SLOTS);
    printf("groups %ld pairs %ld ratio_median %.4f q1 %.4f q3 %.4f plain_ns_per_pair %.2f hooked_ns_per_pair %.2f\n",
           groups, pairs, ratio[groups / 2], ratio[groups / 4], ratio[(3 * groups) / 4], plain / n * 1e9,
           hooked / n * 1e9);
    free(ratio);
    return 0;
}
