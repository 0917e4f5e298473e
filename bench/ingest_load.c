/* ingest_load.c — the load generator of bench/server_ingest.sh: N client
 * threads upload realistic 10 s CPU profiles (bench/store_gen.h, gzipped
 * pprof as an agent sends them) to a running `hotspur serve` over HTTP
 * (libcurl, one keep-alive connection per client), each upload with a new
 * id so every one is stored. Bounded: at most REQUESTS uploads and
 * SECONDS of wall time. Prints "key value" lines: uploads answered 200,
 * failures, wall seconds, uploads/s, latency p50/p90/p99 in ms, mean body,
 * the clients' own CPU per upload in ms.
 *   ingest_load URL CLIENTS REQUESTS SECONDS [POOL]
 * Built by bench/server_ingest.sh against the static profile library. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "store_gen.h"

typedef struct {
    void *data;
    size_t len;
} body;

static const char *base_url;
static body *pool;
static size_t n_pool;
static long n_requests;
static double deadline;
static atomic_long next_request, ok_count, fail_count;
static double *latency; /* ms, per request index */
static char run_tag[32];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* user + system CPU seconds of this process (every client thread) */
static double cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static size_t discard(char *d, size_t s, size_t n, void *arg)
{
    (void)d;
    (void)arg;
    return s * n;
}

static void *client(void *arg)
{
    long me = (long)(intptr_t)arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    h = curl_slist_append(h, "Expect:");
    if (!c || !h) {
        fprintf(stderr, "ingest_load: curl init failed\n");
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    char url[1024];
    for (;;) {
        long i = atomic_fetch_add(&next_request, 1);
        if (i >= n_requests || now_s() > deadline)
            break;
        const body *b = &pool[(size_t)i % n_pool];
        snprintf(url, sizeof url, "%s/api/v1/ingest?service=bench&type=cpu&version=v%ld&label=instance=i%ld&id=%s-%ld",
                 base_url, i % 3, (long)(i % 100), run_tag, i);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
        double t0 = now_s();
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        latency[i] = (now_s() - t0) * 1000.0;
        if (rc == CURLE_OK && code == 200) {
            atomic_fetch_add(&ok_count, 1);
        } else {
            if (atomic_fetch_add(&fail_count, 1) < 3)
                fprintf(stderr, "ingest_load: client %ld: %s, HTTP %ld\n", me, curl_easy_strerror(rc), code);
            latency[i] = -1;
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ingest_load URL CLIENTS REQUESTS SECONDS [POOL]\n");
        return 2;
    }
    base_url = argv[1];
    long clients = atol(argv[2]);
    n_requests = atol(argv[3]);
    double seconds = atof(argv[4]);
    n_pool = argc > 5 ? (size_t)atol(argv[5]) : 64;
    if (clients < 1 || clients > 256 || n_requests < 1 || seconds <= 0 || n_pool < 1) {
        fprintf(stderr, "ingest_load: bad arguments\n");
        return 2;
    }
    snprintf(run_tag, sizeof run_tag, "r%ld-%ld", (long)getpid(), (long)time(NULL) % 100000);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    /* the bodies: generated, gzipped pprof */
    gen_model *m = gen_model_new(7, 2000);
    pool = calloc(n_pool, sizeof *pool);
    latency = calloc((size_t)n_requests, sizeof *latency);
    if (!m || !pool || !latency)
        return 1;
    double bytes = 0;
    char err[256];
    for (size_t i = 0; i < n_pool; i++) {
        hs_profile *p = gen_profile(m, 1000003 * (uint64_t)i + 7, (int)(i % 100), 400, 4);
        if (!p || hs_profile_encode(p, &pool[i].data, &pool[i].len, err, sizeof err) != 0) {
            fprintf(stderr, "ingest_load: %s\n", p ? err : "out of memory");
            return 1;
        }
        bytes += (double)pool[i].len;
        hs_profile_free(p);
    }
    gen_model_free(m);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    double c0 = cpu_s();
    double t0 = now_s();
    deadline = t0 + seconds;
    for (long i = 0; i < clients; i++)
        if (pthread_create(&th[i], NULL, client, (void *)(intptr_t)i) != 0)
            return 1;
    for (long i = 0; i < clients; i++)
        pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    double ccpu = cpu_s() - c0;
    long done = atomic_load(&next_request);
    if (done > n_requests)
        done = n_requests;
    size_t n = 0;
    for (long i = 0; i < done; i++)
        if (latency[i] >= 0)
            latency[n++] = latency[i];
    qsort(latency, n, sizeof *latency, cmp_double);
    long ok = atomic_load(&ok_count);
    printf("clients %ld\n", clients);
    printf("uploads_ok %ld\n", ok);
    printf("uploads_failed %ld\n", atomic_load(&fail_count));
    printf("wall_s %.2f\n", wall);
    printf("per_s %.0f\n", (double)ok / wall);
    printf("p50_ms %.1f\n", n ? latency[n / 2] : 0);
    printf("p90_ms %.1f\n", n ? latency[n * 9 / 10] : 0);
    printf("p99_ms %.1f\n", n ? latency[n * 99 / 100] : 0);
    printf("body_bytes %.0f\n", bytes / (double)n_pool);
    printf("client_cpu_ms %.3f\n", ok ? 1000 * ccpu / (double)ok : 0);
    for (size_t i = 0; i < n_pool; i++)
        free(pool[i].data);
    free(pool);
    free(latency);
    free(th);
    curl_global_cleanup();
    return atomic_load(&fail_count) ? 1 : 0;
}
