/* heap_stress.c — a malloc torture test for the heap profiler
 * (tests/integration/heap_stress.sh): the agent must never break its host.
 *
 *   heap_stress THREADS OPS PHASES FORKS
 *
 * PHASES times, THREADS worker threads each do OPS/PHASES random operations
 * on a table of 128 slots: an empty slot gets a block from malloc, calloc,
 * posix_memalign or realloc(NULL, n), a full one is checked and then freed
 * or realloc'ed to a new size. Sizes are log-uniform from 1 B to 1 MiB.
 * Every block carries a pattern derived from a random tag (its first and
 * last 32 bytes and one byte every 4 KiB) that is verified before it is
 * freed or reallocated (the part realloc must preserve), and calloc'd
 * blocks are verified to be zero: a corrupted heap or a lost realloc copy
 * is detected. Each worker calls the allocator from one noinline function
 * per kind (op_malloc, op_calloc, op_memalign, op_realloc) and counts its
 * calls, so in exact mode the profile's alloc_objects at those functions
 * must equal the counts printed here.
 *
 * With FORKS > 0 the main thread forks FORKS children during each phase
 * (while the workers allocate) and one between phases; a child frees blocks
 * the parent allocated before the fork, does 2000 operations of its own
 * (child_op_*), reports its counts through a pipe and exit()s. All output is
 * deterministic: the random streams are seeded by phase and thread, never
 * by time, and children do fixed work. The pid goes to stderr, so a test
 * can tell the parent's profile (HOTSPUR_OUTPUT with %p) from the children's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone, no_icf)) /* no_icf: identical bodies stay apart */
#define SLOTS 128
#define EDGE 32
#define STRIDE 4096
#define MAX_SIZE (1u << 20)

struct counts {
    long malloc_calls, calloc_calls, memalign_calls, realloc_calls, frees;
    long bytes;          /* requested bytes of all allocations */
    unsigned long check; /* sum of all tags, a fingerprint of the work done */
    long corrupt;
};

struct block {
    unsigned char *p;
    size_t n;
    uint32_t tag;
};

struct worker {
    pthread_t thread;
    uint64_t rng;
    long ops;
    struct counts c;
};

static uint64_t next_rand(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t random_size(uint64_t *s) /* log-uniform in [1, 1 MiB] */
{
    double u = (double)(next_rand(s) >> 11) / 9007199254740992.0;
    size_t n = (size_t)exp(u * log((double)MAX_SIZE + 1.0));
    return n < 1 ? 1 : n > MAX_SIZE ? MAX_SIZE : n;
}

static unsigned char pattern(uint32_t tag, size_t i)
{
    return (unsigned char)((tag ^ (uint32_t)(i * 2654435761u)) >> 7);
}

/* The positions that carry the pattern: [0, EDGE), [n-EDGE, n) and every
 * multiple of STRIDE; next_mark steps from one to the next. */
static size_t next_mark(size_t i, size_t n)
{
    size_t j = i + 1;
    if (n < 2 * EDGE || j < EDGE || j >= n - EDGE)
        return j;
    j = (j + STRIDE - 1) / STRIDE * STRIDE;
    return j < n - EDGE ? j : n - EDGE;
}

#define FOR_EACH_MARK(i, n) for (size_t i = 0; i < (n); i = next_mark(i, (n)))

static void fill(struct block *b)
{
    FOR_EACH_MARK(i, b->n)
    b->p[i] = pattern(b->tag, i);
}

/* Checks the marks below `upto` (realloc keeps only the common prefix). */
static int verify(const struct block *b, size_t upto)
{
    size_t n = b->n < upto ? b->n : upto;
    FOR_EACH_MARK(i, b->n)
    {
        if (i < n && b->p[i] != pattern(b->tag, i))
            return 0;
    }
    return 1;
}

static int verify_zero(const unsigned char *p, size_t n)
{
    FOR_EACH_MARK(i, n)
    {
        if (p[i])
            return 0;
    }
    return 1;
}

static void out_of_memory(void)
{
    fprintf(stderr, "heap_stress: out of memory\n");
    exit(1);
}

static NOINLINE unsigned char *op_malloc(size_t n)
{
    unsigned char *p = malloc(n);
    if (!p)
        out_of_memory();
    return p;
}

static NOINLINE unsigned char *op_calloc(size_t n)
{
    unsigned char *p = calloc(1, n);
    if (!p)
        out_of_memory();
    return p;
}

static NOINLINE unsigned char *op_memalign(size_t align, size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, align, n) != 0)
        out_of_memory();
    return p;
}

static NOINLINE unsigned char *op_realloc(void *old, size_t n)
{
    unsigned char *p = realloc(old, n);
    if (!p)
        out_of_memory();
    return p;
}

/* The children's copies, so their stacks are told apart from the parent's. */
static NOINLINE unsigned char *child_op_malloc(size_t n)
{
    unsigned char *p = malloc(n);
    if (!p)
        out_of_memory();
    return p;
}

static NOINLINE unsigned char *child_op_realloc(void *old, size_t n)
{
    unsigned char *p = realloc(old, n);
    if (!p)
        out_of_memory();
    return p;
}

/* One random operation on one slot. */
static void step(struct block *slots, uint64_t *rng, struct counts *c)
{
    uint64_t r = next_rand(rng);
    struct block *b = &slots[r % SLOTS];
    unsigned kind = (unsigned)((r >> 8) % 100);
    if (!b->p) {
        size_t n = random_size(rng);
        b->tag = (uint32_t)(r >> 32);
        b->n = n;
        if (kind < 50) {
            b->p = op_malloc(n);
            c->malloc_calls++;
        } else if (kind < 70) {
            b->p = op_calloc(n);
            c->calloc_calls++;
            if (!verify_zero(b->p, n))
                c->corrupt++;
        } else if (kind < 85) {
            size_t align = (size_t)16 << ((r >> 16) % 9); /* 16 .. 4096 */
            b->p = op_memalign(align, n);
            c->memalign_calls++;
            if ((uintptr_t)b->p & (align - 1))
                c->corrupt++;
        } else {
            b->p = op_realloc(NULL, n);
            c->realloc_calls++;
        }
        c->bytes += (long)n;
        c->check += b->tag;
        fill(b);
        return;
    }
    if (!verify(b, SIZE_MAX))
        c->corrupt++;
    if (kind < 60) {
        free(b->p);
        c->frees++;
        b->p = NULL;
        return;
    }
    size_t n = random_size(rng);
    b->p = op_realloc(b->p, n);
    c->realloc_calls++;
    c->bytes += (long)n;
    size_t keep = b->n < n ? b->n : n;
    struct block old = *b; /* the new pointer with the old size and tag */
    if (!verify(&old, keep))
        c->corrupt++;
    b->n = n;
    b->tag = (uint32_t)(r >> 40) | 1;
    c->check += b->tag;
    fill(b);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct block slots[SLOTS];
    memset(slots, 0, sizeof slots);
    for (long i = 0; i < w->ops; i++)
        step(slots, &w->rng, &w->c);
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].p) {
            if (!verify(&slots[i], SIZE_MAX))
                w->c.corrupt++;
            free(slots[i].p);
            w->c.frees++;
        }
    }
    return NULL;
}

/* Blocks the main thread holds across forks; a child frees them. */
#define PARENT_BLOCKS 16
static struct block g_parent[PARENT_BLOCKS];

struct child_report {
    long allocs, frees, corrupt;
};

static NOINLINE void child_work(int index, int fd)
{
    struct child_report rep = {0, 0, 0};
    for (int i = 0; i < PARENT_BLOCKS; i++) {
        if (!verify(&g_parent[i], SIZE_MAX))
            rep.corrupt++;
        free(g_parent[i].p);
        rep.frees++;
    }
    uint64_t rng = 0xc0ffee00u + (uint64_t)index;
    struct block slots[16];
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < 2000; i++) {
        uint64_t r = next_rand(&rng);
        struct block *b = &slots[r % 16];
        if (b->p && !verify(b, SIZE_MAX))
            rep.corrupt++;
        size_t n = random_size(&rng) / 16 + 1;
        if (!b->p) {
            b->p = child_op_malloc(n);
        } else if (r & 0x100) {
            free(b->p);
            rep.frees++;
            b->p = NULL;
            continue;
        } else {
            size_t keep = b->n < n ? b->n : n;
            struct block old = *b;
            b->p = child_op_realloc(b->p, n);
            old.p = b->p;
            if (!verify(&old, keep))
                rep.corrupt++;
        }
        rep.allocs++;
        b->n = n;
        b->tag = (uint32_t)(r >> 32);
        fill(b);
    }
    for (int i = 0; i < 16; i++) {
        if (slots[i].p) {
            free(slots[i].p);
            rep.frees++;
        }
    }
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        exit(4);
}

struct children {
    int started, ok;
    long allocs, frees, corrupt;
};

static void parent_blocks_alloc(uint64_t *rng)
{
    for (int i = 0; i < PARENT_BLOCKS; i++) {
        g_parent[i].n = random_size(rng) / 64 + 1;
        g_parent[i].p = malloc(g_parent[i].n);
        if (!g_parent[i].p)
            out_of_memory();
        g_parent[i].tag = (uint32_t)next_rand(rng);
        fill(&g_parent[i]);
    }
}

static void parent_blocks_free(void)
{
    for (int i = 0; i < PARENT_BLOCKS; i++)
        free(g_parent[i].p);
}

static void fork_child(struct children *ch)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("heap_stress: pipe");
        exit(1);
    }
    int index = ch->started++;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("heap_stress: fork");
        exit(1);
    }
    if (pid == 0) {
        close(fds[0]);
        child_work(index, fds[1]);
        exit(0);
    }
    close(fds[1]);
    struct child_report rep;
    ssize_t got;
    do
        got = read(fds[0], &rep, sizeof rep);
    while (got < 0 && errno == EINTR);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("heap_stress: waitpid");
            exit(1);
        }
    }
    if (got == (ssize_t)sizeof rep && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ch->ok++;
        ch->allocs += rep.allocs;
        ch->frees += rep.frees;
        ch->corrupt += rep.corrupt;
    } else {
        fprintf(stderr, "heap_stress: child %d failed (status %#x)\n", index, status);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: heap_stress THREADS OPS PHASES FORKS\n");
        return 2;
    }
    int nthreads = atoi(argv[1]), phases = atoi(argv[3]), forks = atoi(argv[4]);
    long ops = atol(argv[2]);
    if (nthreads < 1 || nthreads > 64 || ops < 1 || phases < 1 || forks < 0) {
        fprintf(stderr, "heap_stress: bad arguments\n");
        return 2;
    }
    fprintf(stderr, "heap_stress: pid %ld\n", (long)getpid());
    struct worker *w = calloc((size_t)nthreads, sizeof *w);
    if (!w)
        out_of_memory();
    struct counts total;
    memset(&total, 0, sizeof total);
    struct children ch;
    memset(&ch, 0, sizeof ch);
    uint64_t main_rng = 42;
    for (int ph = 0; ph < phases; ph++) {
        if (forks)
            parent_blocks_alloc(&main_rng);
        for (int t = 0; t < nthreads; t++) {
            memset(&w[t], 0, sizeof w[t]);
            w[t].rng = ((uint64_t)ph << 32) ^ (uint64_t)(t + 1) * 0x1234567u;
            w[t].ops = ops / phases;
            int err = pthread_create(&w[t].thread, NULL, worker_main, &w[t]);
            if (err) {
                fprintf(stderr, "heap_stress: pthread_create: %s\n", strerror(err));
                return 1;
            }
        }
        /* forks while the workers allocate */
        for (int f = 0; f < forks; f++) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
            fork_child(&ch);
        }
        for (int t = 0; t < nthreads; t++) {
            pthread_join(w[t].thread, NULL);
            total.malloc_calls += w[t].c.malloc_calls;
            total.calloc_calls += w[t].c.calloc_calls;
            total.memalign_calls += w[t].c.memalign_calls;
            total.realloc_calls += w[t].c.realloc_calls;
            total.frees += w[t].c.frees;
            total.bytes += w[t].c.bytes;
            total.check += w[t].c.check;
            total.corrupt += w[t].c.corrupt;
        }
        /* and one between phases, with no other thread running */
        if (forks)
            fork_child(&ch);
        if (forks)
            parent_blocks_free();
    }
    free(w);
    long allocs = total.malloc_calls + total.calloc_calls + total.memalign_calls + total.realloc_calls;
    printf("threads %d ops %ld phases %d\n", nthreads, ops / phases * phases, phases);
    printf("op_malloc %ld\nop_calloc %ld\nop_memalign %ld\nop_realloc %ld\n", total.malloc_calls,
           total.calloc_calls, total.memalign_calls, total.realloc_calls);
    printf("allocations %ld frees %ld bytes %ld check %lu\n", allocs, total.frees, total.bytes,
           total.check);
    printf("children %d ok %d child_allocations %ld child_frees %ld\n", ch.started, ch.ok, ch.allocs,
           ch.frees);
    printf("corrupt %ld\n", total.corrupt + ch.corrupt);
    return total.corrupt + ch.corrupt == 0 && ch.ok == ch.started ? 0 : 1;
}
