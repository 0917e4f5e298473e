/* heap_pairs.c — a tight loop of malloc/free pairs, the workload behind the
 * heap fast-path figures (bench/heap_fastpath.sh, tests/integration/
 * heap_fastpath.sh).
 *
 *   heap_pairs PAIRS THREADS [calloc|realloc]
 *
 * Each of THREADS threads keeps 64 blocks; each of its PAIRS steps frees one
 * of them (chosen at random) and mallocs a block of 16..527 bytes (random)
 * in its place, writing its first and last byte. With "calloc" the blocks
 * come from calloc(1, n); with "realloc" a step reallocs the block to the
 * new size instead of freeing it and allocating another. The 64 first mallocs and
 * the 64 last frees make 64 more pairs per thread. The random sequence is
 * fixed per thread, so the work (and the checksum printed) is the same in
 * every run, under any allocator or profiler.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64

typedef struct {
    uint64_t rng;
    long pairs;
    uint64_t sum;
} worker;

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int g_mode; /* 0 malloc, 1 calloc, 2 realloc */

static unsigned char *check(unsigned char *p, size_t n, uint64_t r)
{
    if (!p) {
        fprintf(stderr, "heap_pairs: out of memory\n");
        exit(1);
    }
    p[0] = (unsigned char)r;
    p[n - 1] = (unsigned char)(r >> 8);
    return p;
}

#define SIZE_OF(r) (16 + (size_t)((r) % 512))
#define GET_MALLOC(r, old) check(malloc(SIZE_OF(r)), SIZE_OF(r), r)
#define GET_CALLOC(r, old) check(calloc(1, SIZE_OF(r)), SIZE_OF(r), r)
#define GET_REALLOC(r, old) check(realloc(old, SIZE_OF(r)), SIZE_OF(r), r)

/* One thread's loop, allocating with GET; with FREE_OLD the old block is
 * freed first (malloc, calloc), else GET reallocs it. The malloc loop is
 * the same code as before the other modes were added (its instruction
 * count per pair is the figure docs/BENCHMARKS.md compares commits by). */
#define LOOP(name, GET, FREE_OLD)                                      \
    static inline __attribute__((always_inline)) void name(worker *w) \
    {                                                                  \
        unsigned char *slot[SLOTS];                                    \
        for (int i = 0; i < SLOTS; i++) {                              \
            uint64_t r0 = next(&w->rng);                               \
            slot[i] = GET(r0, NULL);                                   \
        }                                                              \
        for (long k = 0; k < w->pairs; k++) {                          \
            uint64_t r = next(&w->rng);                                \
            unsigned i = (unsigned)(r >> 58); /* 0..63 */              \
            w->sum += slot[i][0];                                      \
            if (FREE_OLD)                                              \
                free(slot[i]);                                         \
            slot[i] = GET(r, slot[i]);                                 \
        }                                                              \
        for (int i = 0; i < SLOTS; i++) {                              \
            w->sum += slot[i][0];                                      \
            free(slot[i]);                                             \
        }                                                              \
    }
LOOP(loop_malloc, GET_MALLOC, 1)
LOOP(loop_calloc, GET_CALLOC, 1)
LOOP(loop_realloc, GET_REALLOC, 0)

static void *run(void *arg)
{
    if (g_mode == 2)
        loop_realloc(arg);
    else if (g_mode == 1)
        loop_calloc(arg);
    else
        loop_malloc(arg);
    return NULL;
}

int main(int argc, char **argv)
{
    long pairs = argc == 3 || argc == 4 ? atol(argv[1]) : 0;
    int threads = argc == 3 || argc == 4 ? atoi(argv[2]) : 0;
    if (argc == 4)
        g_mode = !strcmp(argv[3], "calloc") ? 1 : !strcmp(argv[3], "realloc") ? 2 : -1;
    if (pairs < 0 || threads < 1 || threads > 64 || g_mode < 0) {
        fprintf(stderr, "usage: heap_pairs PAIRS THREADS (1..64) [calloc|realloc]\n");
        return 2;
    }
    worker w[64];
    pthread_t tid[64];
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){.rng = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1), .pairs = pairs};
        if (pthread_create(&tid[t], NULL, run, &w[t]) != 0) {
            fprintf(stderr, "heap_pairs: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t sum = 0;
    for (int t = 0; t < threads; t++) {
        if (pthread_join(tid[t], NULL) != 0) {
            fprintf(stderr, "heap_pairs: pthread_join failed\n");
            return 1;
        }
        sum += w[t].sum;
    }
    printf("pairs %ld checksum %llu\n", (pairs + SLOTS) * threads, (unsigned long long)sum);
    return 0;
}
