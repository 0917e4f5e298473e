/* threads.c — the registry of the program's threads (threads.h). */
#define _GNU_SOURCE
#include "agent/threads.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/core.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

hs_thread_slot *hs_threads;
static _Atomic int g_count; /* slots handed out */

int hs_threads_count(void)
{
    return hs_threads ? atomic_load(&g_count) : 0;
}

void hs_threads_forget_all(void)
{
    if (hs_threads) {
        memset(hs_threads, 0, sizeof(hs_thread_slot) * (size_t)atomic_load(&g_count));
        atomic_store(&g_count, 0);
    }
}

hs_thread_slot *hs_threads_find(int32_t tid)
{
    int n = atomic_load(&g_count);
    for (int i = n - 1; i >= 0; i--)
        if (atomic_load(&hs_threads[i].used) && hs_threads[i].tid == tid)
            return &hs_threads[i];
    return NULL;
}

hs_thread_slot *hs_threads_new_slot(int32_t tid)
{
    hs_thread_slot *s = NULL;
    int i = atomic_fetch_add(&g_count, 1);
    if (i < HS_MAX_THREADS) {
        s = &hs_threads[i];
    } else {
        atomic_store(&g_count, HS_MAX_THREADS);
        for (int k = 0; k < HS_MAX_THREADS && !s; k++) {
            int dead = HS_SLOT_DEAD;
            if (atomic_compare_exchange_strong(&hs_threads[k].used, &dead, HS_SLOT_CLAIMED))
                s = &hs_threads[k];
        }
        if (!s)
            return NULL;
    }
    s->tid = tid;
    s->has_timer = 0;
    s->alive = 0;
    atomic_store(&s->wall_state, 0); /* no wall timer (sampler.c's WALL_NONE) */
    atomic_store(&s->wall_since, hs_now_ns(CLOCK_MONOTONIC));
    atomic_store(&s->wall_last, NULL);
    s->stack_lo = s->stack_hi = 0;
    atomic_store(&s->labels, 0);
    s->name[0] = 0;
    atomic_store(&s->used, HS_SLOT_LIVE);
    return s;
}

int hs_threads_init(void)
{
    if (!hs_threads) {
        void *p = mmap(NULL, sizeof(hs_thread_slot) * HS_MAX_THREADS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        hs_threads = p;
    }
    return 0;
}

int hs_threads_list(hs_thread_info *out, int max)
{
    int n = hs_threads ? atomic_load(&g_count) : 0, k = 0;
    for (int i = 0; i < n && k < max; i++) {
        hs_thread_slot *s = &hs_threads[i];
        if (atomic_load(&s->used) && s->alive)
            out[k++] = (hs_thread_info){s->tid, (int32_t)i, atomic_load(&s->labels), s->stack_lo, s->stack_hi};
    }
    return k;
}

void hs_threads_set_labels(uint32_t labels)
{
    if (hs_threads && hs_self.slot >= 0)
        atomic_store(&hs_threads[hs_self.slot].labels, labels);
}

void hs_threads_name(int32_t tid, char name[16])
{
    name[0] = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fgets(name, 16, f))
            name[strcspn(name, "\n")] = 0;
        fclose(f);
        if (name[0])
            return;
    }
    hs_thread_slot *s = hs_threads ? hs_threads_find(tid) : NULL;
    if (s)
        memcpy(name, s->name, 16);
    name[15] = 0;
}

int hs_threads_timer_create(int32_t tid, clockid_t clk, int sig, void *magic, timer_t *out)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_value.sival_ptr = magic;
    sev.sigev_notify_thread_id = tid;
    return timer_create(clk, &sev, out);
}
