/* heap_workload.c — the workload of bench/heap_overhead.sh: malloc-heavy,
 * fixed work, many small malloc/free pairs in 2 threads.
 *
 *   heap_workload MILLION_PAIRS THREADS
 *
 * Each thread makes MILLION_PAIRS million malloc/free pairs: batches of 16
 * blocks of 8..512 bytes (random, a fixed seed per thread), each block
 * written and read, freed in an order that differs from the allocation
 * order, with a few blocks per batch carried over to the next batch so that
 * lifetimes vary. The allocations are made 8 calls deep through four
 * different functions, so stacks are of a realistic depth and several
 * allocation sites exist. Prints a checksum that depends only on the work
 * done (the same under every allocator and profiler). Built -O2 -g without
 * frame pointers, like distribution code.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 16
#define CARRY 3
#define NOINLINE __attribute__((noinline, noclone, no_icf))

struct state {
    uint64_t rng;
    uint64_t sum;
    long pairs;
    unsigned char *carry[CARRY];
    size_t carry_n[CARRY];
};

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static unsigned char *get(size_t n, uint64_t tag)
{
    unsigned char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "heap_workload: out of memory\n");
        exit(1);
    }
    p[0] = (unsigned char)tag;
    p[n - 1] = (unsigned char)(tag >> 8);
    return p;
}

/* Four allocation sites. */
static NOINLINE unsigned char *alloc_node(size_t n, uint64_t t) { return get(n, t ^ 1); }
static NOINLINE unsigned char *alloc_string(size_t n, uint64_t t) { return get(n, t ^ 2); }
static NOINLINE unsigned char *alloc_buffer(size_t n, uint64_t t) { return get(n, t ^ 3); }
static NOINLINE unsigned char *alloc_record(size_t n, uint64_t t) { return get(n, t ^ 4); }

static NOINLINE void batch(struct state *s)
{
    unsigned char *p[BATCH];
    size_t n[BATCH];
    for (int i = 0; i < BATCH; i++) {
        uint64_t r = xorshift(&s->rng);
        n[i] = 8 + (size_t)(r % 505);
        switch ((r >> 20) & 3) {
        case 0: p[i] = alloc_node(n[i], r); break;
        case 1: p[i] = alloc_string(n[i], r); break;
        case 2: p[i] = alloc_buffer(n[i], r); break;
        default: p[i] = alloc_record(n[i], r); break;
        }
    }
    /* swap a few with the blocks carried from the previous batch */
    for (int c = 0; c < CARRY; c++) {
        if (s->carry[c]) {
            int j = (int)(xorshift(&s->rng) % BATCH);
            unsigned char *tp = p[j];
            size_t tn = n[j];
            p[j] = s->carry[c];
            n[j] = s->carry_n[c];
            s->carry[c] = tp;
            s->carry_n[c] = tn;
        } else {
            s->carry[c] = p[c];
            s->carry_n[c] = n[c];
            p[c] = NULL;
        }
    }
    for (int k = 0; k < BATCH; k++) {
        int i = (k * 7 + 3) % BATCH; /* another order than allocation */
        if (!p[i])
            continue;
        s->sum += p[i][0] + ((uint64_t)p[i][n[i] - 1] << 8) + n[i];
        free(p[i]);
        s->pairs++;
    }
}

static NOINLINE void descend(struct state *s, int depth, long batches)
{
    if (depth > 0) {
        descend(s, depth - 1, batches);
        __asm__ volatile("" ::: "memory"); /* no tail call: keep the frames */
        return;
    }
    for (long b = 0; b < batches; b++)
        batch(s);
}

static void *thread_main(void *arg)
{
    struct state *s = arg;
    long batches = s->pairs; /* in: batches to run; out: pairs done */
    s->pairs = 0;
    descend(s, 6, batches);
    for (int c = 0; c < CARRY; c++) {
        if (s->carry[c]) {
            s->sum += s->carry_n[c];
            free(s->carry[c]);
            s->pairs++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atol(argv[1]) < 1 || atoi(argv[2]) < 1 || atoi(argv[2]) > 64) {
        fprintf(stderr, "usage: heap_workload MILLION_PAIRS THREADS\n");
        return 2;
    }
    long batches = atol(argv[1]) * 1000000 / BATCH;
    int nthreads = atoi(argv[2]);
    pthread_t tid[64];
    struct state st[64];
    memset(st, 0, sizeof st);
    for (int t = 0; t < nthreads; t++) {
        st[t].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
        st[t].pairs = batches;
        if (pthread_create(&tid[t], NULL, thread_main, &st[t]) != 0) {
            fprintf(stderr, "heap_workload: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t sum = 0;
    long pairs = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(tid[t], NULL);
        sum += st[t].sum;
        pairs += st[t].pairs;
    }
    printf("pairs %ld checksum %llu\n", pairs, (unsigned long long)sum);
    return 0;
}
