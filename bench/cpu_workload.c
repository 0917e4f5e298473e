/* cpu_workload.c — the CPU-bound workload that bench/cpu_overhead.sh profiles.
 *
 * A fixed amount of work (not a fixed time), split over T threads (default 2),
 * shaped like a real program: several functions a few calls deep, some of the
 * time inside libc (qsort with a strcmp comparator, memcpy, memchr), some in
 * plain arithmetic. Each thread runs ROUNDS batches of:
 *
 *   process_batch -> build_records -> format_key          (string building)
 *                 -> sort_records  -> qsort -> cmp_record -> strcmp
 *                 -> checksum_batch -> mix_block -> memcpy, hash_bytes
 *                 -> simulate -> step -> force            (floating point)
 *
 * Usage: cpu_workload [ROUNDS [THREADS]]   (defaults 900 and 2)
 * Prints one checksum line, identical from run to run, so the work can't be
 * optimised away and a profiler that changed the program's result shows.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREC 8000
#define KEYLEN 24
#define BLOCK 4096
#define NBODY 64

typedef struct {
    char key[KEYLEN];
    uint32_t value;
} record;

typedef struct {
    int id;
    int rounds;
    uint64_t result;
} worker_arg;

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static __attribute__((noinline)) void format_key(char *dst, uint32_t v)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz012345";
    /* A shared prefix makes strcmp do real work before the keys differ. */
    memcpy(dst, "user/session/", 13);
    for (int i = 13; i < KEYLEN - 1; i++) {
        dst[i] = alphabet[v & 31];
        v = v * 2654435761u + (uint32_t)i;
    }
    dst[KEYLEN - 1] = 0;
}

static __attribute__((noinline)) void build_records(record *r, int n, uint32_t *seed)
{
    for (int i = 0; i < n; i++) {
        uint32_t v = next_rand(seed);
        format_key(r[i].key, v);
        r[i].value = v;
    }
}

static int cmp_record(const void *a, const void *b)
{
    const record *x = a, *y = b;
    return strcmp(x->key, y->key);
}

static __attribute__((noinline)) uint32_t sort_records(record *r, int n)
{
    qsort(r, (size_t)n, sizeof *r, cmp_record);
    return r[0].value ^ r[n - 1].value; /* also keeps qsort out of tail position */
}

static __attribute__((noinline)) uint64_t hash_bytes(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull; /* FNV-1a */
    }
    return h;
}

static __attribute__((noinline)) uint64_t mix_block(unsigned char *dst, const unsigned char *src, size_t n,
                                                    uint64_t h)
{
    memcpy(dst, src, n);
    const unsigned char *nl = memchr(dst, '\n', n);
    h += nl ? (uint64_t)(nl - dst) : 0;
    return hash_bytes(dst, n, h);
}

static __attribute__((noinline)) uint64_t checksum_batch(const record *r, int n)
{
    static __thread unsigned char buf[BLOCK];
    const unsigned char *src = (const unsigned char *)r;
    size_t total = (size_t)n * sizeof *r, off = 0;
    uint64_t h = 1469598103934665603ull;
    while (off < total) {
        size_t len = total - off < BLOCK ? total - off : BLOCK;
        h = mix_block(buf, src + off, len, h);
        off += len;
    }
    return h;
}

static __attribute__((noinline)) double force(const double *pos, int i, int n)
{
    double f = 0;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        double d = pos[j] - pos[i];
        f += d / (fabs(d * d * d) + 0.01);
    }
    return f;
}

static __attribute__((noinline)) void step(double *pos, double *vel, int n, double dt)
{
    for (int i = 0; i < n; i++)
        vel[i] += force(pos, i, n) * dt;
    for (int i = 0; i < n; i++)
        pos[i] += vel[i] * dt;
}

static __attribute__((noinline)) uint64_t simulate(uint32_t seed, int steps)
{
    double pos[NBODY], vel[NBODY];
    for (int i = 0; i < NBODY; i++) {
        pos[i] = (double)(next_rand(&seed) % 1000) / 10.0;
        vel[i] = 0;
    }
    for (int s = 0; s < steps; s++)
        step(pos, vel, NBODY, 0.001);
    double sum = 0;
    for (int i = 0; i < NBODY; i++)
        sum += pos[i];
    return (uint64_t)(int64_t)(sum * 1000.0);
}

static __attribute__((noinline)) uint64_t process_batch(record *r, uint32_t seed)
{
    build_records(r, NREC, &seed);
    uint64_t h = sort_records(r, NREC);
    h += checksum_batch(r, NREC);
    return h ^ simulate(seed, 100);
}

static void *worker(void *p)
{
    worker_arg *a = p;
    record *r = malloc(NREC * sizeof *r);
    if (!r) {
        perror("malloc");
        exit(1);
    }
    uint64_t acc = 0;
    for (int i = 0; i < a->rounds; i++)
        acc = acc * 31 + process_batch(r, (uint32_t)(a->id * 100003 + i + 1));
    free(r);
    a->result = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 900;
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    if (rounds < 1 || nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: cpu_workload [ROUNDS [THREADS]]\n");
        return 2;
    }
    pthread_t tids[64];
    worker_arg args[64];
    for (int t = 0; t < nthreads; t++) {
        args[t] = (worker_arg){t, rounds, 0};
        if (pthread_create(&tids[t], NULL, worker, &args[t]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    uint64_t total = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(tids[t], NULL);
        total ^= args[t].result;
    }
    printf("cpu_workload: %d threads x %d rounds, checksum %016llx\n", nthreads, rounds,
           (unsigned long long)total);
    return 0;
}
