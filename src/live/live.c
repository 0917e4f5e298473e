/* live.c — `record -p/-a`: perf_event_open sampling of running processes.
 *
 * One software clock event per thread of each -p process (inherit=1, so
 * threads and children created later are covered; all redirected into one
 * ring buffer) or per CPU for -a. Each sample carries the kernel callchain
 * (user part excluded), the user registers and a copy of the top of the user
 * stack; the user part is unwound with libdwfl over that copy (what
 * `perf record --call-graph dwarf` does), so code without frame pointers
 * (Debian's libc) unwinds right. Kernel frames are named from /proc/kallsyms
 * at the end of each window (the core kernel's from a per-boot cache),
 * user frames by src/symbolize from each process's mappings at the end.
 * Each process image's mappings are built from the kernel's records (exec,
 * fork, mmap2, exit), the CPUs' ring buffers merged in time order, so a
 * sample is unwound and named against the image it was taken in.
 *
 * This file: the session (events opened, windows, closing); the other
 * files of src/live and what each does: live_int.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live/live_int.h"

static long perf_open(struct perf_event_attr *a, int pid, int cpu, int group, unsigned long flags)
{
    return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

/* The message of a failed perf_event_open (errno) on `on` `id` ("CPU 3",
 * "thread 42"): 1. */
static int open_error(char *err, size_t errlen, const char *on, long id)
{
    int e = errno;
    if (e != EACCES && e != EPERM) {
        snprintf(err, errlen, "perf_event_open on %s %ld: %s", on, id, strerror(e));
        return 1;
    }
    char para[32] = "?";
    lv_read_small("/proc/sys/kernel/perf_event_paranoid", para, sizeof para);
    snprintf(err, errlen,
             "perf_event_open: %s: not allowed with kernel.perf_event_paranoid=%s; run as root or "
             "with CAP_PERFMON (or lower kernel.perf_event_paranoid: <= 1 for -p on your own "
             "processes, <= 0 for -a)",
             strerror(e), para);
    return 1;
}

static void perf_ioctl(int *fds, size_t n, unsigned long req)
{
    for (size_t i = 0; i < n; i++)
        ioctl(fds[i], req, 0);
}

void hs_live_close(hs_live *L)
{
    if (!L)
        return;
    for (size_t i = 0; i < L->n_rings; i++)
        if (L->rings[i].pg)
            munmap(L->rings[i].pg, L->rings[i].len);
    for (size_t i = 0; i < L->n_track; i++)
        close(L->track_fds[i]);
    for (size_t i = 0; i < L->n_fds; i++)
        close(L->fds[i]);
    free(L->track_fds);
    free(L->fds);
    free(L->rings);
    free(L->pids);
    free(L->tmp);
    free(L->mapsbuf);
    for (size_t i = 0; i < L->n_procs; i++)
        lv_free_proc(L->procs[i]);
    free(L->procs);
    hs_hmap_free(&L->pid_ix);
    hs_hmap_free(&L->tid_name);
    hs_hmap_free(&L->kloc);
    free(L->map_space);
    free(L->map_root);
    for (size_t i = 0; i < L->n_ev; i++)
        free(L->ev[i].ids);
    free(L->ev);
    for (size_t i = 0; i < L->n_parked; i++)
        free(L->parked[i].e.ids);
    free(L->parked);
    lv_sleeping_regs_end(L);
    hs_ksyms_free(L->own_ks);
    hs_profile_free(L->p);
    lv_forget_elfs(L);
    if (L->vdso_elf)
        elf_end(L->vdso_elf);
    free(L->vdso);
    free(L->elfs);
    hs_hmap_free(&L->elf_ix);
    free(L);
}

/* Whether any sampling event has not hung up: one of its threads, or of
 * the threads they made since, runs on. */
static int events_alive(live *L)
{
    for (size_t i = 0; i < L->n_fds; i += 256) {
        struct pollfd pf[256];
        size_t n = L->n_fds - i < 256 ? L->n_fds - i : 256;
        for (size_t j = 0; j < n; j++)
            pf[j] = (struct pollfd){.fd = L->fds[i + j], .events = 0};
        if (poll(pf, n, 0) < 0)
            return 1;
        for (size_t j = 0; j < n; j++)
            if (!(pf[j].revents & POLLHUP))
                return 1;
    }
    return 0;
}

static int add_fd(int **fds, size_t *n, int fd)
{
    int *nf = realloc(*fds, (*n + 1) * sizeof *nf);
    if (!nf) {
        close(fd);
        return -1;
    }
    *fds = nf;
    nf[(*n)++] = fd;
    return 0;
}

/* A sampling event's fd kept in L->fds: 0, or 1 with the message. */
static int keep_fd(live *L, long fd, char *err, size_t errlen)
{
    if (add_fd(&L->fds, &L->n_fds, (int)fd) == 0)
        return 0;
    snprintf(err, errlen, "out of memory");
    return 1;
}

hs_live *hs_live_open(const hs_live_options *o, char *err, size_t errlen)
{
#ifdef HS_LIVE_UNSUPPORTED
    (void)o;
    snprintf(err, errlen, "profiling running processes (-p/-a) is supported on x86_64 and aarch64 only");
    return NULL;
#endif
    live *L = calloc(1, sizeof *L);
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    L->self = getpid();
    L->all = o->all;
    L->off_cpu = o->off_cpu;
    L->track = o->all && !o->off_cpu;
    L->leave_names = o->leave_names;
    L->want = o->want;
    L->want_arg = o->want_arg;
    L->skip_inprocess = o->skip_inprocess;
    int hz = o->hz > 0 ? o->hz : 100;
    int stack_bytes = o->stack_bytes > 0 ? o->stack_bytes : 16384;
    L->stack_bytes = stack_bytes;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct perf_event_attr a = {0};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = o->all ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000000ULL / (unsigned)hz;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                    PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                    PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = REGS_MASK;
    a.sample_stack_user = (uint32_t)(stack_bytes & ~7);
    a.exclude_callchain_user = 1;
    a.disabled = 1;
    /* Execs (comm_exec tells one from a rename: the image changed), exits
     * (a pid seen again later is another process) and code mapped (mmap2):
     * on the sampling events, or for -a on a dummy event per CPU that stays
     * enabled between windows, so what is known of a process stays true. */
    a.comm = a.comm_exec = a.task = a.mmap = a.mmap2 = !L->track;
    a.inherit = o->all ? 0 : 1;
    a.sample_id_all = 1; /* every record's time: the rings are merged in time order (drain) */
    L->period = (int64_t)a.sample_period;
    if (o->off_cpu) {
        int id = lv_sched_switch_id();
        if (id < 0) {
            snprintf(err, errlen, "--off-cpu: cannot read the sched:sched_switch tracepoint id "
                                  "(/sys/kernel/tracing not mounted or not readable; needs root)");
            free(L);
            return NULL;
        }
        a.type = PERF_TYPE_TRACEPOINT;
        a.config = (uint64_t)id;
        a.sample_period = 1;
        a.context_switch = 1; /* switch-in records: when the thread runs again */
        a.sample_id_all = 1;
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
    }
    struct perf_event_attr t = {0};
    t.size = sizeof t;
    t.type = PERF_TYPE_SOFTWARE;
    t.config = PERF_COUNT_SW_DUMMY;
    t.comm = t.comm_exec = t.task = t.mmap = t.mmap2 = 1;
    t.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU; /* the sampling event's sample_id */
    t.sample_id_all = 1;

    int fail = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    L->rings = calloc((size_t)ncpu * 2, sizeof *L->rings);
    if (!L->rings) {
        snprintf(err, errlen, "out of memory");
        fail = 1;
    }
    if (o->all) {
        for (long c = 0; !fail && c < ncpu; c++) {
            long fd = perf_open(&a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) {
                if (errno == ENODEV || errno == EINVAL)
                    continue; /* offline CPU */
                fail = open_error(err, errlen, "CPU", c);
                break;
            }
            if ((fail = keep_fd(L, fd, err, errlen)))
                break;
            if (lv_open_ring(&L->rings[L->n_rings++], (int)fd, page, RING_PAGES) != 0) {
                snprintf(err, errlen, "mmap of the perf ring buffer: %s", strerror(errno));
                fail = 1;
                break;
            }
            if (!L->track)
                continue;
            long tfd = perf_open(&t, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
            /* a ring of its own: a flood of samples the profiler cannot keep
             * up with loses samples, not the records that say which image
             * each sample belongs to (drain merges the rings in time order) */
            if (tfd < 0 || add_fd(&L->track_fds, &L->n_track, (int)tfd) != 0 ||
                lv_open_ring(&L->rings[L->n_rings], (int)tfd, page, TRACK_PAGES) != 0) {
                snprintf(err, errlen, "perf_event_open (dummy event on CPU %ld): %s", c, strerror(errno));
                fail = 1;
            }
            L->rings[L->n_rings++].track = 1;
        }
    } else {
        /* Inherited per-task events cannot be mmapped with cpu -1: one event per
         * (thread, CPU), each CPU's events writing into one ring buffer. */
        int *leader = calloc((size_t)ncpu, sizeof *leader);
        L->pids = calloc(o->n_pids + 1, sizeof *L->pids);
        if (!leader || !L->pids) {
            snprintf(err, errlen, "out of memory");
            fail = 1;
        }
        for (long c = 0; leader && c < ncpu; c++)
            leader[c] = -1;
        for (size_t i = 0; !fail && i < o->n_pids; i++) {
            int pid = o->pids[i], opened = 0;
            L->pids[L->n_pids++] = pid;
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/task", pid);
            DIR *d = opendir(path);
            if (!d) {
                snprintf(err, errlen, "no process %d", pid);
                fail = 1;
                break;
            }
            unsigned long long st0 = lv_start_time(pid);
            struct dirent *de;
            while ((de = readdir(d)) && !fail) {
                int tid = atoi(de->d_name);
                if (tid <= 0)
                    continue;
                for (long c = 0; c < ncpu && !fail; c++) {
                    long fd = perf_open(&a, tid, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
                    if (fd < 0) {
                        if (errno == ESRCH)
                            break; /* the thread ended meanwhile */
                        if (errno == ENODEV)
                            continue; /* offline CPU */
                        fail = open_error(err, errlen, "thread", tid);
                        break;
                    }
                    if ((fail = keep_fd(L, fd, err, errlen)))
                        break;
                    opened = 1;
                    if (leader[c] < 0) {
                        leader[c] = (int)fd;
                        if (lv_open_ring(&L->rings[L->n_rings++], (int)fd, page, RING_PAGES) != 0) {
                            snprintf(err, errlen, "mmap of the perf ring buffer: %s", strerror(errno));
                            fail = 1;
                        }
                    } else if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, leader[c]) != 0) {
                        snprintf(err, errlen, "PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
                        fail = 1;
                    }
                }
            }
            closedir(d);
            if (!fail && !opened) {
                snprintf(err, errlen, "no process %d", pid);
                fail = 1;
            }
            if (!fail && st0 && lv_start_time(pid) != st0) {
                snprintf(err, errlen, "process %d ended while attaching", pid);
                fail = 1;
            }
        }
        free(leader);
    }
    if (fail) {
        hs_live_close(L);
        return NULL;
    }
    if (!o->ksyms) { /* read when a kernel frame is first named (ksyms.c) */
        char cache[4096];
        L->own_ks = hs_ksyms_lazy(NULL, hs_ksyms_cache_path(cache, sizeof cache), NULL);
    }
    L->ks = o->ksyms ? o->ksyms : L->own_ks;
    for (size_t i = 0; i < L->n_pids; i++)
        lv_get_proc(L, L->pids[i], 0); /* maps and names now, in case it exits early */
    if (L->all) {
        /* What every process maps now, before the first window: its samples
         * may be taken in before its later execs' records are (the
         * processes that start later are known from their records). */
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            int pid = atoi(de->d_name);
            proc *pr = pid > 0 && pid != L->self && !lv_find_proc(L, pid, 0) ? lv_new_proc(L, pid, 0) : NULL;
            if (pr)
                lv_read_maps(L, pr);
        }
        if (d)
            closedir(d);
    }
    return L;
}

void hs_live_idle(hs_live *L)
{
    if (!L || L->p)
        return;
    lv_drain(L);
    lv_forget_procs(L);
}

hs_profile *hs_live_window(hs_live *L, double duration, volatile sig_atomic_t *stop, hs_symbolizer *symbolizer,
                           hs_live_stats *stats, char *err, size_t errlen)
{
    hs_live_idle(L); /* what happened since the last window */
    L->window++;
    memset(&L->st, 0, sizeof L->st);
    hs_hmap_clear(&L->tid_name);
    hs_hmap_clear(&L->kloc);
    L->kmapping = 0;
    if (L->map_space)
        memset(L->map_space, 0, L->cap_map_space * sizeof *L->map_space);
    if (L->map_root)
        memset(L->map_root, 0, L->cap_map_space * sizeof *L->map_root);
    for (size_t i = 0; i < L->n_procs; i++) {
        proc *pr = L->procs[i];
        hs_hmap_clear(&pr->locs);
        for (size_t j = 0; j < pr->n_maps; j++)
            pr->maps[j].mapping_id = 0;
    }
    L->p = hs_profile_new();
    if (!L->p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (L->off_cpu) {
        hs_profile_add_sample_type(L->p, "switches", "count");
        hs_profile_add_sample_type(L->p, "off_cpu", "nanoseconds");
    } else {
        hs_profile_add_sample_type(L->p, "samples", "count");
        hs_profile_add_sample_type(L->p, "cpu", "nanoseconds");
        hs_profile_set_period(L->p, "cpu", "nanoseconds", L->period);
    }
    L->k_pid = hs_profile_str(L->p, "pid");
    L->k_tid = hs_profile_str(L->p, "tid");
    L->k_process = hs_profile_str(L->p, "process");
    L->k_thread = hs_profile_str(L->p, "thread");
    L->k_cgroup = hs_profile_str(L->p, "cgroup");
    for (size_t i = 0; i < L->n_pids; i++) { /* the attached program names the profile */
        uint64_t ix;
        if (hs_hmap_get(&L->pid_ix, (uint64_t)L->pids[i], &ix) && L->procs[ix - 1]->n_maps)
            lv_user_mapping(L, L->procs[ix - 1], &L->procs[ix - 1]->maps[0]);
    }

    if (L->off_cpu)
        lv_park_threads(L);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    perf_ioctl(L->fds, L->n_fds, PERF_EVENT_IOC_ENABLE);
    struct pollfd *pfd = calloc(L->n_rings ? L->n_rings : 1, sizeof *pfd);
    for (;;) {
        if (stop && *stop)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (duration > 0 && el >= duration)
            break;
        int alive = 0;
        for (size_t i = 0; pfd && i < L->n_rings; i++) {
            pfd[i].fd = L->rings[i].hup ? -1 : L->rings[i].fd; /* a hung-up ring would wake us at once */
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }
        /* The ring buffers wake us when half full; otherwise once a second
         * (-p: 100 ms, to see the attached processes end) or at the end.
         * A stop signal interrupts the poll. */
        int ms = L->all ? 1000 : 100;
        if (duration > 0 && (duration - el) * 1000 < ms)
            ms = (int)((duration - el) * 1000) + 1;
        if (pfd)
            poll(pfd, L->n_rings, ms);
        lv_drain(L);
        for (size_t i = 0; pfd && i < L->n_rings; i++)
            if (pfd[i].revents & POLLHUP)
                L->rings[i].hup = 1;
        for (size_t i = 0; i < L->n_rings; i++)
            if (!pfd || !L->rings[i].hup)
                alive = 1;
        /* A ring hangs up when the thread whose event owns it ended (and the
         * threads it made): other threads' events may still write into it
         * (a main thread that left while the others run on). */
        if (!L->all && !alive && !events_alive(L))
            break; /* every attached process ended */
    }
    perf_ioctl(L->fds, L->n_fds, PERF_EVENT_IOC_DISABLE);
    lv_drain(L);
    free(pfd);
    clock_gettime(CLOCK_MONOTONIC, &now);
    L->p->time_nanos = (int64_t)time(NULL) * 1000000000LL;
    L->p->duration_nanos = (now.tv_sec - t0.tv_sec) * 1000000000LL + (now.tv_nsec - t0.tv_nsec);
    if (L->off_cpu)
        lv_off_cpu_samples(L, (uint64_t)t0.tv_sec * 1000000000ULL + (uint64_t)t0.tv_nsec,
                        (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec);
    lv_name_kernel(L);
    lv_symbolize(L, symbolizer);
    hs_profile *out = L->p;
    L->p = NULL;
    if (stats)
        *stats = L->st;
    lv_forget_procs(L);
    return out;
}

hs_profile *hs_live_record(const hs_live_options *o, hs_live_stats *stats, char *err, size_t errlen)
{
    hs_live *L = hs_live_open(o, err, errlen);
    if (!L)
        return NULL;
    hs_profile *p = hs_live_window(L, o->duration, o->stop, o->symbolizer, stats, err, errlen);
    hs_live_close(L);
    return p;
}
