/* lock.c — lock contention profiling. pthread_mutex_lock,
 * pthread_mutex_timedlock and the rwlock read/write locks (plain and timed)
 * are interposed. The uncontended path costs one try-lock: only when the
 * try fails is the wait timed (CLOCK_MONOTONIC around the real call) and
 * recorded at the stack of the waiting call, as contentions/count and
 * delay/nanoseconds. When lock profiling is off the calls go straight
 * through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "agent/core.h"

#define HS_EXPORT __attribute__((visibility("default")))

typedef int (*lock_fn)(void *);
typedef int (*timed_fn)(void *, const struct timespec *);

static lock_fn r_mutex_lock, r_mutex_trylock, r_rd, r_tryrd, r_wr, r_trywr;
static timed_fn r_mutex_timed, r_timedrd, r_timedwr;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve_once(void)
{
    r_mutex_trylock = (lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    r_rd = (lock_fn)dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
    r_tryrd = (lock_fn)dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock");
    r_wr = (lock_fn)dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
    r_trywr = (lock_fn)dlsym(RTLD_NEXT, "pthread_rwlock_trywrlock");
    r_mutex_timed = (timed_fn)dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
    r_timedrd = (timed_fn)dlsym(RTLD_NEXT, "pthread_rwlock_timedrdlock");
    r_timedwr = (timed_fn)dlsym(RTLD_NEXT, "pthread_rwlock_timedwrlock");
    r_mutex_lock = (lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
}

static inline void resolve(void)
{
    if (!r_mutex_lock)
        pthread_once(&g_once, resolve_once);
}

static inline int profiling(void)
{
    return atomic_load_explicit(&hs_g.lock_on, memory_order_relaxed) && hs_self.in_agent == 0;
}

static void record(int64_t delay)
{
    hs_self.in_agent++;
    hs_stack_entry *e = hs_agent_intern_here(&hs_g.lock);
    if (e) {
        atomic_fetch_add_explicit(&e->values[0], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&e->values[1], delay, memory_order_relaxed);
    }
    hs_self.in_agent--;
}

/* Try first; time the real call (fn, or timed with abs) only when the try
 * says the lock is taken. */
static int contended(lock_fn try_fn, lock_fn fn, timed_fn timed, void *lock, const struct timespec *abs)
{
    int rc = try_fn(lock);
    if (rc != EBUSY)
        return rc;
    int64_t t0 = hs_now_ns(CLOCK_MONOTONIC);
    rc = timed ? timed(lock, abs) : fn(lock);
    record(hs_now_ns(CLOCK_MONOTONIC) - t0);
    return rc;
}

HS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    resolve();
    return profiling() ? contended(r_mutex_trylock, r_mutex_lock, NULL, m, NULL) : r_mutex_lock(m);
}

HS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
    resolve();
    return profiling() ? contended(r_mutex_trylock, NULL, r_mutex_timed, m, abs) : r_mutex_timed(m, abs);
}

HS_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    resolve();
    return profiling() ? contended(r_tryrd, r_rd, NULL, l, NULL) : r_rd(l);
}

HS_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    resolve();
    return profiling() ? contended(r_trywr, r_wr, NULL, l, NULL) : r_wr(l);
}

HS_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    resolve();
    return profiling() ? contended(r_tryrd, NULL, r_timedrd, l, abs) : r_timedrd(l, abs);
}

HS_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    resolve();
    return profiling() ? contended(r_trywr, NULL, r_timedwr, l, abs) : r_timedwr(l, abs);
}
