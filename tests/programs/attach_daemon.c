/* attach_daemon.c — a daemon started without the agent, for `hotspur attach`
 * (tests/integration/attach_heap.sh): it answers one request per line on
 * stdin (a FIFO) with one line on stdout, allocating known sizes at known
 * sites, so the heap profile of an attach can be checked to the byte.
 *   round N   N times: site_keep 1000 bytes (kept), site_temp 3000 bytes
 *             (freed at once), site_calloc 10 x 24 bytes (kept)
 *   free      free every kept block (those allocated before an attach too)
 *   dlopen P  dlopen library P and call its site_plugin(N=4): 4 x 777 bytes kept
 *   lock R H  R times: a thread holds a mutex H ms while site_lock_wait waits
 *             for it; answers the wait it measured itself ("lock waited NS")
 *   bench N   N malloc/free pairs (64..319 bytes, malloc and free through the
 *             GOT like any call): answers "bench NS" per pair (bench/attach_*.sh)
 *   leak N    site_leak allocates N bytes and drops the pointer
 *   strdup N  site_strdup keeps strdup() of an N-1 character string (N bytes,
 *             allocated inside libc)
 *   state     what an attach may leave behind on the main thread: "state key K
 *             altstack on|off" (K: the index a new pthread key gets, deleted
 *             at once; altstack: this thread's sigaltstack)
 *   quit      free everything and exit 0
 * Compiled as C++ too (attach_daemon_cxx.cpp): then the sites use new[] and
 * delete[] instead of malloc, calloc and free. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
#define ALLOC(n) (new char[n])
#define ALLOC_ZERO(n, s) (new char[(n) * (s)]())
#define RELEASE(p) (delete[](char *)(p))
#define NOINLINE __attribute__((noinline))
extern "C" {
#else
#define ALLOC(n) malloc(n)
#define ALLOC_ZERO(n, s) calloc(n, s)
#define RELEASE(p) free(p)
#define NOINLINE __attribute__((noinline))
#endif

static void *kept[1 << 16];
static int nkept;

NOINLINE void *site_keep(size_t n)
{
    void *p = ALLOC(n);
    memset(p, 1, n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

NOINLINE void site_temp(size_t n)
{
    char *p = (char *)ALLOC(n);
    memset(p, 2, n);
    __asm__ volatile("" ::"r"(p) : "memory");
    RELEASE(p);
}

NOINLINE void *site_strdup(size_t n)
{
    char s[4096];
    memset(s, 'x', n - 1);
    s[n - 1] = 0;
    char *p = strdup(s);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

NOINLINE void *site_calloc(size_t n, size_t s)
{
    void *p = ALLOC_ZERO(n, s);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ready = PTHREAD_COND_INITIALIZER;
static int g_held, g_hold_ms;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mutex);
    pthread_mutex_lock(&g_ready_lock);
    g_held = 1;
    pthread_cond_signal(&g_ready);
    pthread_mutex_unlock(&g_ready_lock);
    struct timespec ts = {g_hold_ms / 1000, (g_hold_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    pthread_mutex_unlock(&g_mutex);
    return NULL;
}

/* Wait for the mutex the holder has: the wait is what the lock profile sees. */
NOINLINE long long site_lock_wait(void)
{
    long long t0 = now_ns();
    pthread_mutex_lock(&g_mutex);
    long long t1 = now_ns();
    pthread_mutex_unlock(&g_mutex);
    return t1 - t0;
}

static long long contend(int rounds, int hold_ms)
{
    long long waited = 0;
    g_hold_ms = hold_ms;
    for (int i = 0; i < rounds; i++) {
        pthread_t t;
        g_held = 0;
        pthread_create(&t, NULL, holder, NULL);
        pthread_mutex_lock(&g_ready_lock);
        while (!g_held)
            pthread_cond_wait(&g_ready, &g_ready_lock);
        pthread_mutex_unlock(&g_ready_lock);
        waited += site_lock_wait();
        pthread_join(t, NULL);
    }
    return waited;
}

NOINLINE void site_leak(size_t n)
{
    char *p = (char *)ALLOC(n);
    memset(p, 4, n);
    __asm__ volatile("" ::"r"(p) : "memory");
}

static void keep(void *p)
{
    if (nkept < (int)(sizeof kept / sizeof *kept))
        kept[nkept++] = p;
}

static void free_all(void)
{
    for (int i = 0; i < nkept; i++)
        RELEASE(kept[i]);
    nkept = 0;
}

int main(void)
{
    char line[4096];
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        int n;
        if (sscanf(line, "round %d", &n) == 1) {
            for (int i = 0; i < n; i++) {
                keep(site_keep(1000));
                site_temp(3000);
                keep(site_calloc(10, 24));
            }
            printf("round %d kept %d\n", n, nkept);
        } else if (sscanf(line, "lock %d", &n) == 1) {
            int hold = 0;
            sscanf(line, "lock %*d %d", &hold);
            printf("lock waited %lld\n", contend(n, hold));
        } else if (sscanf(line, "bench %d", &n) == 1) {
            long long t0 = now_ns();
            for (int i = 0; i < n; i++) {
                void *p = malloc(64 + (size_t)(i & 255));
                __asm__ volatile("" ::"r"(p) : "memory");
                free(p);
            }
            printf("bench %.2f\n", n > 0 ? (double)(now_ns() - t0) / n : 0.0);
        } else if (sscanf(line, "leak %d", &n) == 1) {
            site_leak((size_t)n);
            printf("leaked %d\n", n);
        } else if (sscanf(line, "strdup %d", &n) == 1 && n >= 1 && n <= 4096) {
            keep(site_strdup((size_t)n));
            printf("strdup kept %d\n", nkept);
        } else if (strcmp(line, "state") == 0) {
            pthread_key_t k;
            stack_t ss;
            int made = pthread_key_create(&k, NULL) == 0;
            printf("state key %ld altstack %s\n", made ? (long)k : -1L,
                   sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) ? "on" : "off");
            if (made)
                pthread_key_delete(k);
        } else if (strcmp(line, "free") == 0) {
            int k = nkept;
            free_all();
            printf("freed %d\n", k);
        } else if (strncmp(line, "dlopen ", 7) == 0) {
            void *h = dlopen(line + 7, RTLD_NOW);
            void *(*plugin)(size_t) = h ? (void *(*)(size_t))dlsym(h, "site_plugin") : NULL;
            if (!plugin) {
                printf("dlopen failed: %s\n", dlerror());
                continue;
            }
            for (int i = 0; i < 4; i++)
                keep(plugin(777));
            printf("plugin kept %d\n", nkept);
        } else if (strcmp(line, "quit") == 0) {
            free_all();
            printf("bye\n");
            return 0;
        } else {
            printf("unknown %s\n", line);
        }
    }
    free_all();
    return 0;
}
#ifdef __cplusplus
}
#endif
