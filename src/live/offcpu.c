/* offcpu.c — `record --off-cpu`: each switch-out's stack paired with the
 * thread's next switch-in, and the threads asleep when a window begins
 * (blocked all along, never switching) with stacks read from /proc. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "base/vec.h"
#include "live/live_int.h"

offev *lv_push_ev(live *L)
{
    if (HS_VEC_RESERVE(L->ev, L->cap_ev, L->n_ev + 1) < 0)
        return NULL;
    offev *e = &L->ev[L->n_ev++];
    memset(e, 0, sizeof *e);
    return e;
}

static int cmp_ev(const void *a, const void *b)
{
    const offev *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->in - y->in; /* out before in at the same time */
}

static int read_schedstat(int pid, int tid, unsigned long long *run, unsigned long long *slices)
{
    char path[96], buf[128];
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
    unsigned long long wait;
    if (lv_read_small(path, buf, sizeof buf) != 0 || sscanf(buf, "%llu %llu %llu", run, &wait, slices) != 3)
        return -1;
    return 0;
}

/* The stack of thread tid of pr, asleep: kernel frames from its
 * /proc/PID/task/TID/stack (names), user frames unwound over its stack read
 * from /proc/PID/mem from the registers it entered the kernel with: every
 * one where BPF can read them (sleepregs.c), else the stack pointer and pc
 * of /proc/PID/task/TID/syscall. No ptrace stop: a sleeping thread's stack
 * does not change until it runs. The frame count, 0 if nothing could be
 * read. */
static size_t sleeping_stack(live *L, proc *pr, int tid, uint64_t *ids, size_t max)
{
    char path[96], *buf = NULL;
    size_t cap = 0, n = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/stack", pr->pid, tid);
    if (lv_slurp(path, &buf, &cap) > 0) {
        for (char *line = buf, *next; line && *line && n < max / 2; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = 0;
            char *fn = strstr(line, "] ");
            if (!fn)
                continue;
            fn += 2;
            fn[strcspn(fn, "+ ")] = 0;
            if (*fn)
                ids[n++] = lv_kernel_location_named(L, fn);
        }
    }
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pr->pid, tid);
    uint64_t sp = 0, pc = 0;
    if (lv_slurp(path, &buf, &cap) > 0 && strncmp(buf, "running", 7) != 0) {
        /* "NR a1..a6 SP PC", or "-1 SP PC" outside a system call */
        unsigned long long v[9];
        int k = sscanf(buf, "%lli %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5], &v[6], &v[7], &v[8]);
        if (k == 9)
            sp = v[7], pc = v[8];
        else if (k == 3 && v[0] == (unsigned long long)-1)
            sp = v[1], pc = v[2];
    }
    free(buf);
    if (!pc || n >= max)
        return n;
    unsigned char *mem = malloc((size_t)L->stack_bytes);
    snprintf(path, sizeof path, "/proc/%d/mem", pr->pid);
    int fd = mem ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t got = fd >= 0 ? pread(fd, mem, (size_t)L->stack_bytes, (off_t)sp) : -1;
    if (fd >= 0)
        close(fd);
    /* every register it entered the kernel with, if BPF can read them (the
     * same sp and pc: it did not run in between); else only sp and pc */
    L->st.parked_user++;
    if (lv_sleeping_regs(L, tid, pr->regs) != 0 || pr->regs[PR_SP] != sp || pr->regs[PR_IP] != pc) {
        memset(pr->regs, 0, sizeof pr->regs);
        pr->regs[PR_SP] = sp;
        pr->regs[PR_IP] = pc;
    } else {
        L->st.parked_full_regs++;
    }
    pr->sp = sp;
    pr->stack = mem;
    pr->stack_size = got > 0 ? (uint64_t)got : 0;
    pr->tid = tid;
    uint64_t pcs[MAX_FRAMES];
    frames f = {pcs, 0, MAX_FRAMES};
    lv_unwind_user(L, pr, &f);
    for (int i = 0; i < f.n && n < max; i++)
        ids[n++] = lv_user_location(L, pr, pcs[i]);
    pr->stack = NULL;
    free(mem);
    return n;
}

/* Off-CPU: the threads of the processes recorded that are asleep as the
 * window begins, with their stacks (sleeping_stack), so that a thread
 * blocked all along, which never switches, is counted too. */
void lv_park_threads(live *L)
{
    int *pids = NULL;
    size_t n_pids = 0;
    if (L->all) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            int pid = atoi(de->d_name);
            int *np = pid > 0 && pid != L->self ? realloc(pids, (n_pids + 1) * sizeof *np) : NULL;
            if (np)
                (pids = np)[n_pids++] = pid;
        }
        if (d)
            closedir(d);
    }
    for (size_t i = 0; i < (L->all ? n_pids : L->n_pids); i++) {
        int pid = L->all ? pids[i] : L->pids[i];
        char path[96];
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *d = opendir(path);
        proc *pr = d ? lv_get_proc(L, pid, 0) : NULL;
        if (pr && pr->info_pending)
            lv_proc_info(pr);
        if (pr && pr->skip < 0)
            pr->skip = !lv_wanted(L, pr);
        struct dirent *de;
        while (pr && !pr->skip && (de = readdir(d))) {
            int tid = atoi(de->d_name);
            char st[512];
            snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
            if (tid <= 0 || lv_read_small(path, st, sizeof st) != 0)
                continue;
            char *c = strrchr(st, ')');
            if (!c || (c[2] != 'S' && c[2] != 'D'))
                continue; /* running or runnable: its switches will tell */
            parked *np = realloc(L->parked, (L->n_parked + 1) * sizeof *np);
            if (!np)
                break;
            L->parked = np;
            parked *pk = &L->parked[L->n_parked];
            memset(pk, 0, sizeof *pk);
            pk->pid = pid;
            pk->e.tid = (uint32_t)tid;
            if (read_schedstat(pid, tid, &pk->run, &pk->slices) != 0)
                continue;
            uint64_t ids[MAX_FRAMES * 2];
            size_t n = sleeping_stack(L, pr, tid, ids, MAX_FRAMES * 2);
            if (!n || !(pk->e.ids = malloc(n * sizeof *ids)))
                continue;
            memcpy(pk->e.ids, ids, n * sizeof *ids);
            pk->e.n_ids = n;
            hs_label lb[5] = {
                {L->k_pid, 0, pid, 0},
                {L->k_tid, 0, tid, 0},
                {L->k_process, hs_profile_str(L->p, pr->comm), 0, 0},
                {L->k_thread, lv_thread_name(L, pid, tid), 0, 0},
                {L->k_cgroup, hs_profile_str(L->p, pr->cgroup), 0, 0},
            };
            memcpy(pk->e.lb, lb, sizeof lb);
            pk->e.n_lb = pr->cgroup[0] ? 5 : 4;
            L->n_parked++;
            L->st.parked++;
            if (pr->seen != L->window) {
                pr->seen = L->window;
                L->st.processes++;
            }
        }
        if (d)
            closedir(d);
    }
    free(pids);
}

/* Pair each switch-out with the thread's next switch-in (or t_end). A
 * thread asleep when the window began (t_start) is charged, under the stack
 * it slept in, the time until its first switch-in, or the whole window if
 * it never ran (the same CPU time and timeslices at the end). */
void lv_off_cpu_samples(live *L, uint64_t t_start, uint64_t t_end)
{
    if (L->n_ev) /* (no events: ev may be NULL, which qsort must not get) */
        qsort(L->ev, L->n_ev, sizeof *L->ev, cmp_ev);
    for (size_t i = 0; i < L->n_parked; i++) {
        parked *pk = &L->parked[i];
        size_t lo = 0, hi = L->n_ev; /* its first event */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (L->ev[mid].tid < pk->e.tid)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint64_t until = 0;
        unsigned long long run, slices;
        if (lo < L->n_ev && L->ev[lo].tid == pk->e.tid) {
            if (L->ev[lo].in)
                until = L->ev[lo].time; /* woke up then */
        } else if (read_schedstat(pk->pid, (int)pk->e.tid, &run, &slices) == 0 && run == pk->run &&
                   slices == pk->slices) {
            until = t_end; /* never ran */
        }
        if (until > t_start && pk->e.n_ids) {
            int64_t vals[2] = {1, (int64_t)(until - t_start)};
            hs_profile_add_sample(L->p, pk->e.ids, pk->e.n_ids, vals, pk->e.lb, pk->e.n_lb);
            L->st.samples++;
        }
        free(pk->e.ids);
    }
    free(L->parked);
    L->parked = NULL;
    L->n_parked = 0;
    for (size_t i = 0; i < L->n_ev; i++) {
        offev *e = &L->ev[i];
        if (e->in || !e->n_ids)
            continue;
        uint64_t until = t_end;
        if (i + 1 < L->n_ev && L->ev[i + 1].tid == e->tid)
            until = L->ev[i + 1].time;
        if (until <= e->time)
            continue;
        int64_t vals[2] = {1, (int64_t)(until - e->time)};
        hs_profile_add_sample(L->p, e->ids, e->n_ids, vals, e->lb, e->n_lb);
        L->st.samples++;
    }
    for (size_t i = 0; i < L->n_ev; i++)
        free(L->ev[i].ids);
    free(L->ev);
    L->ev = NULL;
    L->n_ev = L->cap_ev = 0; /* (a capacity left over: the next window wrote to NULL) */
}

int lv_sched_switch_id(void)
{
    char buf[32];
    const char *path = "/sys/kernel/tracing/events/sched/sched_switch/id";
    if (lv_read_small(path, buf, sizeof buf) != 0) {
        mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL); /* as perf would need */
        if (lv_read_small(path, buf, sizeof buf) != 0)
            return -1;
    }
    return atoi(buf);
}
