/* live.c — `record -p/-a`: perf_event_open sampling of running processes.
 *
 * One software clock event per thread of each -p process (inherit=1, so
 * threads and children created later are covered; all redirected into one
 * ring buffer) or per CPU for -a. Each sample carries the kernel callchain
 * (user part excluded), the user registers and a copy of the top of the user
 * stack; the user part is unwound with libdwfl over that copy (what
 * `perf record --call-graph dwarf` does), so code without frame pointers
 * (Debian's libc) unwinds right. Kernel frames are named from /proc/kallsyms,
 * user frames by src/symbolize from each process's mappings at the end.
 * Each process image's mappings are built from the kernel's records (exec,
 * fork, mmap2, exit), the CPUs' ring buffers merged in time order, so a
 * sample is unwound and named against the image it was taken in. */
#define _GNU_SOURCE
#include "live/live.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "live/ksyms.h"
#include "base/hashmap.h"
#include "base/vec.h"
#include "symbolize/symbolize.h"

#define MAX_FRAMES 256
#define RING_PAGES 128 /* data pages per ring buffer (512 KiB) */
#define TRACK_PAGES 64 /* -a: pages of each CPU's ring of execs, exits and mmaps */
#define MAX_ELFS 1024 /* ELF files kept open for the unwinders (then all are let go) */
#define KEEP_WINDOWS 3 /* a process not sampled in that many windows is forgotten */

#if defined(__x86_64__)
/* perf's x86_64 user register indices (asm/perf_regs.h). */
enum { PR_AX, PR_BX, PR_CX, PR_DX, PR_SI, PR_DI, PR_BP, PR_SP, PR_IP, PR_R8 = 16 };
#define REGS_MASK (((1ULL << 9) - 1) | (0xffULL << 16))
#define N_REGS 17
#elif defined(__aarch64__)
/* perf's arm64 user registers: x0..x30 (x30 = lr), sp, pc. Untested: no
 * aarch64 machine here (docs/live.md). */
enum { PR_SP = 31, PR_IP = 32 };
#define REGS_MASK ((1ULL << 33) - 1)
#define N_REGS 33
#else
#define HS_LIVE_UNSUPPORTED 1
enum { PR_SP, PR_IP };
#define REGS_MASK 0ULL
#define N_REGS 2
#endif

typedef struct {
    uint64_t start, end, off, mapping_id;
    char *path;
    char build_id[41]; /* hex, read once (leave_names); "" none or unknown */
    int build_id_read;
} map_ent;

typedef struct {
    int pid;
    unsigned long long starttime;
    uint64_t exit_time; /* perf time of its exit record; 0 while alive */
    char comm[64], cgroup[256];
    map_ent *maps;
    size_t n_maps;
    time_t maps_read;
    Dwfl *dwfl;
    int dwfl_failed;
    time_t dwfl_reported;
    hs_hmap locs; /* address -> location id (this window's profile) */
    uint64_t seen;  /* the last window it was sampled in */
    uint64_t born;  /* the window it was first known in */
    int maps_stale; /* code was mapped since its unwinder was built */
    /* Its mappings come from the kernel's records (an exec, or a fork of a
     * process whose mappings were known, then each MMAP2) in record order,
     * so each sample is unwound and named against the mappings live when
     * it was taken; /proc/PID/maps is read only for what a process mapped
     * before the recording saw it. */
    int from_records;
    int info_pending; /* start time, name and cgroup not read yet (proc_info) */
    int comm_known;   /* its name came from a COMM record */
    int root; /* 0 unknown, 1 the same root directory as ours, 2 another (a container, a chroot) */
    int skip;       /* not wanted: its samples are dropped; -1: to be decided */
    uint64_t space; /* this image's address space: names come from its mappings only */
    /* the sample being unwound */
    uint64_t regs[N_REGS]; /* perf order, compacted by REGS_MASK */
    uint64_t sp;
    const unsigned char *stack;
    uint64_t stack_size;
    int tid;
} proc;

typedef struct {
    int fd;
    struct perf_event_mmap_page *pg;
    size_t len;
    int track; /* -a: the dummy event's ring (records only, never samples) */
} ring;

/* A recording session: its perf events, and what it knows of the processes
 * it samples (mappings, unwinders), which outlives one window. */
struct hs_live {
    hs_profile *p; /* the window's profile; NULL between windows */
    proc **procs;
    size_t n_procs;
    hs_hmap pid_ix;   /* pid -> index + 1 in procs */
    hs_hmap tid_name; /* tid -> string index of the thread name */
    hs_hmap kloc;     /* kernel address -> location id */
    uint64_t kmapping;
    const hs_ksyms *ks;
    hs_ksyms *own_ks;
    hs_live_stats st;
    int self;
    int64_t k_pid, k_tid, k_process, k_thread, k_cgroup;
    uint64_t n_spaces;
    uint64_t *map_space; /* mapping id -> address space (hs_symbolize_spaces) */
    int *map_root;       /* mapping id -> pid whose root its path is under (0: ours) */
    size_t cap_map_space;
    int off_cpu;
    struct offev *ev; /* off_cpu: switch-outs (with stacks) and switch-ins */
    size_t n_ev, cap_ev;
    struct parked *parked; /* off_cpu: threads asleep when the window began */
    size_t n_parked;
    int stack_bytes;
    /* the session */
    int all, track;
    int leave_names; /* user frames left as addresses with build IDs */
    int (*want)(void *arg, int pid, const char *comm, const char *cgroup);
    void *want_arg;
    int skip_inprocess;
    int *pids;
    size_t n_pids;
    uint64_t window;  /* windows so far */
    int64_t period;   /* ns of CPU time per sample */
    ring *rings;      /* one per CPU (-a) or per CPU's events (-p) */
    size_t n_rings;
    int *fds;         /* the sampling events */
    size_t n_fds;
    int *track_fds;   /* -a: a dummy event per CPU for execs, exits and mmaps */
    size_t n_track;
    unsigned char *tmp;
    size_t tmpcap;
    char *mapsbuf; /* read_maps' */
    size_t mapscap;
    /* ELF files the unwinders read, one handle per file for every process
     * (find_elf): opened, mapped and indexed once, not per process */
    struct elf_ent *elfs;
    size_t n_elfs, cap_elfs;
    hs_hmap elf_ix; /* file key -> index + 1 in elfs */
    unsigned char *vdso; /* own_vdso's copy */
    Elf *vdso_elf;
    int vdso_failed;
};
typedef struct hs_live live;

typedef struct elf_ent {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    Elf *elf; /* the cache's reference; each unwinder gets its own */
} elf_ent;

/* One off-CPU event: a switch-out with its stack, or a switch-in (n_ids 0,
 * ids NULL, in 1). Paired per thread in time order at the end. */
typedef struct offev {
    uint64_t time;
    uint32_t tid;
    int in;
    uint64_t *ids;
    size_t n_ids;
    hs_label lb[5];
    size_t n_lb;
} offev;

/* A thread asleep when an off-CPU window began, its stack read then (it
 * cannot change before the thread runs again) and its CPU time and
 * timeslices (/proc/PID/task/TID/schedstat), to tell at the end whether it
 * ran at all. */
typedef struct parked {
    offev e;
    int pid;
    unsigned long long run, slices;
} parked;

static offev *push_ev(live *L)
{
    if (L->n_ev == L->cap_ev) {
        size_t nc = L->cap_ev ? L->cap_ev * 2 : 4096;
        offev *n = realloc(L->ev, nc * sizeof *n);
        if (!n)
            return NULL;
        L->ev = n;
        L->cap_ev = nc;
    }
    offev *e = &L->ev[L->n_ev++];
    memset(e, 0, sizeof *e);
    return e;
}

static long perf_open(struct perf_event_attr *a, int pid, int cpu, int group, unsigned long flags)
{
    return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

static int read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n'))
        buf[--n] = 0;
    return 0;
}

/* Field 22 of /proc/PID/stat: the start time, which tells a process from a
 * later one that got the same pid. 0 when unknown. */
static unsigned long long start_time(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_small(path, buf, sizeof buf))
        return 0;
    char *s = strrchr(buf, ')');
    if (!s)
        return 0;
    unsigned long long v = 0;
    /* after ") " come fields 3.. ; starttime is field 22 */
    if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
        return 0;
    return v;
}

/* The whole of a /proc file in *buf (NUL-terminated; *cap grows): its
 * length, or -1. */
static ssize_t slurp(const char *path, char **buf, size_t *cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        if (*cap - len < 4096) {
            size_t nc = *cap ? *cap * 2 : 65536;
            char *nb = realloc(*buf, nc);
            if (!nb)
                break;
            *buf = nb;
            *cap = nc;
        }
        ssize_t r = read(fd, *buf + len, *cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (*buf)
        (*buf)[len] = 0;
    return *buf ? (ssize_t)len : -1;
}

static uint64_t hex(char **s)
{
    uint64_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uint64_t)d;
    }
}

/* The executable file mappings of pr (and "[vdso]"), added to those known:
 * one read of /proc/PID/maps, parsed by hand (stdio and sscanf were a
 * tenth of the host agent's CPU). */
static void read_maps(live *L, proc *pr)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pr->pid);
    pr->maps_read = time(NULL);
    if (pr->exit_time || (pr->starttime && start_time(pr->pid) != pr->starttime))
        return; /* it ended (its pid may be another process's now) */
    if (slurp(path, &L->mapsbuf, &L->mapscap) < 0)
        return;
    for (char *line = L->mapsbuf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        /* start-end perms offset dev inode name */
        char *q = line;
        uint64_t s = hex(&q);
        if (*q++ != '-')
            continue;
        uint64_t e = hex(&q);
        if (*q++ != ' ' || strlen(q) < 5 || q[2] != 'x')
            continue;
        q += 5;
        uint64_t off = hex(&q);
        for (int field = 0; field < 2 && *q; field++) { /* dev, inode */
            while (*q == ' ')
                q++;
            while (*q && *q != ' ')
                q++;
        }
        while (*q == ' ')
            q++;
        char *name = q;
        char *del = strstr(name, " (deleted)");
        if (del)
            *del = 0;
        if (name[0] != '/' && strcmp(name, "[vdso]") != 0)
            continue;
        int known = 0;
        for (size_t i = 0; i < pr->n_maps; i++)
            if (pr->maps[i].start == s && pr->maps[i].end == e && strcmp(pr->maps[i].path, name) == 0)
                known = 1;
        if (known)
            continue;
        map_ent *nm = realloc(pr->maps, (pr->n_maps + 1) * sizeof *nm);
        if (!nm)
            break;
        pr->maps = nm;
        pr->maps[pr->n_maps] = (map_ent){.start = s, .end = e, .off = off, .path = strdup(name)};
        if (pr->maps[pr->n_maps].path)
            pr->n_maps++;
    }
}

/* A mapping reported by the kernel (MMAP2): it replaces what it overlaps
 * (unmaps are not reported; a new mapping over a range is). */
static void add_map(proc *pr, uint64_t s, uint64_t e, uint64_t off, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < pr->n_maps; i++) {
        map_ent *m = &pr->maps[i];
        if (m->start < e && s < m->end) {
            free(m->path);
            continue;
        }
        pr->maps[k++] = *m;
    }
    pr->n_maps = k;
    map_ent *nm = realloc(pr->maps, (pr->n_maps + 1) * sizeof *nm);
    if (nm) {
        pr->maps = nm;
        pr->maps[pr->n_maps] = (map_ent){.start = s, .end = e, .off = off, .path = strdup(name)};
        if (pr->maps[pr->n_maps].path)
            pr->n_maps++;
    }
    hs_hmap_clear(&pr->locs); /* addresses may name other code now */
    pr->maps_stale = 1;
}

/* Whether pr is to be sampled: the caller's choice, and not a process
 * that runs the in-process agent. Asked once, before any unwinding. */
static int wanted(live *L, proc *pr)
{
    if (L->want && !L->want(L->want_arg, pr->pid, pr->comm, pr->cgroup))
        return 0;
    if (L->skip_inprocess) {
        if (!pr->maps_read && !pr->from_records)
            read_maps(L, pr);
        for (size_t i = 0; i < pr->n_maps; i++) {
            const char *b = strrchr(pr->maps[i].path, '/');
            if (b && !strncmp(b, "/libhotspur.so", 14))
                return 0;
        }
    }
    return 1;
}

/* The process known as pid at perf time tm (0: now), or NULL: a pid whose
 * exit was seen before tm is another process now. */
static proc *find_proc(live *L, int pid, uint64_t tm)
{
    uint64_t ix;
    if (hs_hmap_get(&L->pid_ix, (uint64_t)pid, &ix)) {
        proc *old = L->procs[ix - 1];
        if (!old->exit_time || tm <= old->exit_time)
            return old;
    }
    return NULL;
}

/* The process pid was at perf time tm (0: now): a fresh entry when it is
 * not known (or a process that ended had that pid). With no_maps, its
 * mappings are left for the caller to fill (from records). */
static proc *new_proc(live *L, int pid, int no_maps);
static void proc_info(proc *pr);
static proc *get_proc(live *L, int pid, uint64_t tm)
{
    proc *old = find_proc(L, pid, tm);
    return old ? old : new_proc(L, pid, 0);
}

static proc *new_proc(live *L, int pid, int no_maps)
{
    proc *pr = calloc(1, sizeof *pr);
    proc **np = pr ? realloc(L->procs, (L->n_procs + 1) * sizeof *np) : NULL;
    if (!np) {
        free(pr);
        return NULL;
    }
    L->procs = np;
    pr->pid = pid;
    pr->space = ++L->n_spaces;
    snprintf(pr->comm, sizeof pr->comm, "%d", pid);
    pr->born = L->window; /* kept KEEP_WINDOWS windows even if never sampled */
    if (no_maps) /* known from records (most never sampled): its /proc files are read at its first sample */
        pr->from_records = 1, pr->maps_read = time(NULL), pr->info_pending = 1;
    else
        proc_info(pr);
    if (!no_maps && !L->all)
        read_maps(L, pr); /* -p: now, in case it exits early; -a: at its first unwinding */
    L->procs[L->n_procs++] = pr; /* a replaced entry stays here, freed at the end */
    pr->skip = -1;
    L->st.new_processes++;
    hs_hmap_put(&L->pid_ix, (uint64_t)pid, L->n_procs);
    return pr;
}

/* Its start time, name (unless a record gave it) and cgroup, from /proc. */
static void proc_info(proc *pr)
{
    int pid = pr->pid;
    pr->info_pending = 0;
    pr->starttime = start_time(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    if (!pr->comm_known && read_small(path, pr->comm, sizeof pr->comm))
        snprintf(pr->comm, sizeof pr->comm, "%d", pid);
    char cg[1024];
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    if (read_small(path, cg, sizeof cg) == 0) {
        /* cgroup v2: "0::/system.slice/x.service"; else the first line's path */
        char *s = strstr(cg, "::");
        if (s) {
            s += 2;
        } else { /* v1: the path of the first line */
            cg[strcspn(cg, "\n")] = 0;
            s = strrchr(cg, ':');
            s = s ? s + 1 : cg;
        }
        s[strcspn(s, "\n")] = 0;
        snprintf(pr->cgroup, sizeof pr->cgroup, "%.255s", s);
    }
}

/* Forget pr's image: its unwinder, mappings and address cache (after an
 * exec; the pid, name and cgroup stay). */
static void drop_image(proc *pr, uint64_t new_space)
{
    pr->space = new_space;
    if (pr->dwfl)
        dwfl_end(pr->dwfl);
    pr->dwfl = NULL;
    pr->dwfl_failed = 0;
    for (size_t i = 0; i < pr->n_maps; i++)
        free(pr->maps[i].path);
    free(pr->maps);
    pr->maps = NULL;
    pr->n_maps = 0;
    pr->maps_read = 0;
    pr->from_records = 0;
    hs_hmap_clear(&pr->locs);
}

static void free_proc(proc *pr)
{
    drop_image(pr, 0);
    hs_hmap_free(&pr->locs);
    free(pr);
}

/* ---- libdwfl callbacks: unwind over the copied stack ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    (void)arg;
    (void)thread_argp;
    return 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl;
    proc *pr = arg;
    *thread_argp = arg;
    return tid == pr->tid;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    proc *pr = arg;
    if (addr < pr->sp || addr + 8 > pr->sp + pr->stack_size || addr + 8 < addr)
        return false;
    memcpy(result, pr->stack + (addr - pr->sp), 8);
    return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    proc *pr = arg;
    const uint64_t *r = pr->regs;
#if defined(__x86_64__)
    /* perf order: ax bx cx dx si di bp sp ip r8..r15; DWARF order: ax dx cx
     * bx si di bp sp r8..r15 ip */
    Dwarf_Word d[17] = {r[0], r[3], r[2], r[1], r[4], r[5], r[6], r[7],
                        r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[8]};
    return dwfl_thread_state_registers(thread, 0, 17, d);
#elif defined(__aarch64__)
    /* DWARF x0..x30, sp are perf's order; the pc apart */
    Dwarf_Word d[32];
    for (int i = 0; i < 32; i++)
        d[i] = r[i];
    if (!dwfl_thread_state_registers(thread, 0, 32, d))
        return false;
    dwfl_thread_state_register_pc(thread, r[PR_IP]);
    return true;
#else
    (void)thread;
    (void)r;
    return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = cb_next_thread,
    .get_thread = cb_get_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

/* The unwinder reads .eh_frame of the files the process maps, and never
 * looks for their separate debug files: libdwfl falls back to .debug_frame
 * wherever .eh_frame ends a stack (at every outermost frame), and loading
 * a debug file for that (libc6-dbg's, compressed) took half the agent's CPU
 * and tens of MB per process per window. .debug_frame in the file itself
 * is still used. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
    (void)mod;
    (void)userdata;
    (void)modname;
    (void)base;
    (void)file_name;
    (void)debuglink_file;
    (void)debuglink_crc;
    *debuginfo_file_name = NULL;
    return -1;
}

/* The session and process whose unwinder libdwfl is working on (it calls
 * find_elf with no context of ours): set around each libdwfl call. */
static live *cur_live;
static proc *cur_proc;

static uint64_t elf_key(const struct stat *st)
{
    return hs_hmap_mix((uint64_t)st->st_dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)st->st_ino) ^
           hs_hmap_mix((uint64_t)st->st_size ^ ((uint64_t)st->st_mtim.tv_sec << 20) ^ (uint64_t)st->st_mtim.tv_nsec);
}

static void forget_elfs(live *L)
{
    for (size_t i = 0; i < L->n_elfs; i++)
        elf_end(L->elfs[i].elf); /* unwinders still using one keep it alive */
    L->n_elfs = 0;
    hs_hmap_clear(&L->elf_ix);
}

/* The ELF file modname of process pid, opened under /proc/PID/root (the
 * file a process in a container sees) and shared by every process that
 * maps the same file (device, inode, size, mtime): the cache's handle, or
 * NULL. */
static Elf *shared_elf(live *L, int pid, const char *modname)
{
    char path[4200];
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, modname);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open(modname, O_RDONLY | O_CLOEXEC); /* the process is gone */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint64_t key = elf_key(&st), ix;
    elf_ent *e = NULL;
    if (hs_hmap_get(&L->elf_ix, key, &ix)) {
        elf_ent *c = &L->elfs[ix - 1];
        if (c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size &&
            c->mtime.tv_sec == st.st_mtim.tv_sec && c->mtime.tv_nsec == st.st_mtim.tv_nsec)
            e = c;
    }
    if (!e && L->n_elfs >= MAX_ELFS)
        forget_elfs(L);
    if (!e && (L->n_elfs < L->cap_elfs || HS_VEC_RESERVE(L->elfs, L->cap_elfs, L->n_elfs + 1) == 0)) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (elf && elf_kind(elf) == ELF_K_ELF && elf_cntl(elf, ELF_C_FDDONE) == 0) {
            e = &L->elfs[L->n_elfs++];
            *e = (elf_ent){st.st_dev, st.st_ino, st.st_size, st.st_mtim, elf};
            hs_hmap_put(&L->elf_ix, key, L->n_elfs);
        } else if (elf) {
            elf_end(elf);
        }
    }
    close(fd);
    return e ? e->elf : NULL;
}

/* The vDSO, for every process's "[vdso]" mapping: a copy of this
 * process's own (one kernel, one vDSO; a process that has exec'd since its
 * sample has lost its own). NULL if not found. */
static Elf *own_vdso(live *L)
{
    if (L->vdso_elf || L->vdso_failed)
        return L->vdso_elf;
    L->vdso_failed = 1;
    char *buf = NULL;
    size_t cap = 0;
    if (slurp("/proc/self/maps", &buf, &cap) < 0) {
        free(buf);
        return NULL;
    }
    char *v = strstr(buf, "[vdso]");
    if (v) {
        while (v > buf && v[-1] != '\n')
            v--;
        char *q = v;
        uint64_t s = hex(&q);
        uint64_t e = *q == '-' ? (q++, hex(&q)) : 0;
        if (e > s && (L->vdso = malloc(e - s))) {
            memcpy(L->vdso, (const void *)(uintptr_t)s, e - s);
            L->vdso_elf = elf_memory((char *)L->vdso, e - s);
        }
    }
    free(buf);
    if (L->vdso_elf)
        L->vdso_failed = 0;
    return L->vdso_elf;
}

/* libdwfl's find_elf: shared_elf, one more reference for the unwinder;
 * what libdwfl cannot get that way (the vDSO, deleted files) its own
 * callback finds. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
                    Elf **elfp)
{
    Elf *elf = cur_live && cur_proc && modname[0] == '/' ? shared_elf(cur_live, cur_proc->pid, modname) : NULL;
    if (!elf && cur_live && !strcmp(modname, "[vdso]"))
        elf = own_vdso(cur_live);
    if (!elf)
        return dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
    *elfp = elf_begin(-1, ELF_C_READ_MMAP, elf); /* one more reference */
    *file_name = strdup(modname);
    return -1;
}

static const Dwfl_Callbacks proc_cbs = {
    .find_elf = find_elf,
    .find_debuginfo = no_debuginfo,
};

/* Where libdwfl is to take the module of m's file to start: the address
 * of its first PT_LOAD, from which it derives the load bias (what
 * dwfl_linux_proc_report takes from the offset-0 mapping, which MMAP2
 * records do not report: only executable mappings are). The bias comes
 * from the PT_LOAD that m maps (its file offset). */
static uint64_t module_low(live *L, proc *pr, const map_ent *m)
{
    uint64_t guess = m->start - m->off, page = (uint64_t)sysconf(_SC_PAGESIZE);
    Elf *elf = m->path[0] == '/' ? shared_elf(L, pr->pid, m->path) : NULL;
    size_t n;
    if (!elf || elf_getphdrnum(elf, &n) != 0)
        return guess;
    uint64_t first = UINT64_MAX, bias = 0;
    int have_bias = 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (first == UINT64_MAX)
            first = ph.p_vaddr & ~(page - 1);
        if (!have_bias && (ph.p_offset & ~(page - 1)) == m->off) {
            bias = m->start - (ph.p_vaddr & ~(page - 1));
            have_bias = 1;
        }
    }
    return have_bias && first != UINT64_MAX ? bias + first : guess;
}

/* The unwinder's modules: the files of pr's mappings as they are known now
 * (from the records, in order), not /proc/PID/maps, which may already show
 * a later image. One module per file and load address. */
static int report_modules(live *L, proc *pr)
{
    pr->dwfl_reported = time(NULL);
    if (!pr->maps_read && !pr->from_records)
        read_maps(L, pr);
    uint64_t *low = calloc(pr->n_maps + 1, sizeof *low);
    if (!low)
        return -1;
    for (size_t i = 0; i < pr->n_maps; i++)
        low[i] = module_low(L, pr, &pr->maps[i]);
    dwfl_report_begin(pr->dwfl);
    int n = 0;
    for (size_t i = 0; i < pr->n_maps; i++) {
        int dup = 0;
        uint64_t high = pr->maps[i].end;
        for (size_t j = 0; j < pr->n_maps; j++) {
            if (low[j] != low[i] || strcmp(pr->maps[j].path, pr->maps[i].path) != 0)
                continue;
            if (j < i)
                dup = 1;
            if (pr->maps[j].end > high)
                high = pr->maps[j].end;
        }
        if (!dup && dwfl_report_module(pr->dwfl, pr->maps[i].path, low[i], high))
            n++;
    }
    dwfl_report_end(pr->dwfl, NULL, NULL);
    free(low);
    return n ? 0 : -1;
}

static Dwfl *proc_dwfl(live *L, proc *pr)
{
    if (pr->dwfl || pr->dwfl_failed)
        return pr->dwfl;
    cur_live = L;
    cur_proc = pr;
    pr->dwfl = dwfl_begin(&proc_cbs);
    L->st.unwinders++;
    if (!pr->dwfl || report_modules(L, pr) != 0 || !dwfl_attach_state(pr->dwfl, NULL, pr->pid, &thread_cbs, pr)) {
        if (pr->dwfl)
            dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        pr->dwfl_failed = 1;
    }
    return pr->dwfl;
}

typedef struct {
    uint64_t *pcs;
    int n, max;
} frames;

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    frames *f = arg;
    Dwarf_Addr pc;
    bool act;
    if (!dwfl_frame_pc(state, &pc, &act))
        return DWARF_CB_ABORT;
    if (pc == 0)
        return DWARF_CB_ABORT;
    f->pcs[f->n++] = act ? pc : pc - 1;
    return f->n < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int unwind_user(live *L, proc *pr, frames *f)
{
    cur_live = L;
    cur_proc = pr;
    Dwfl *d = proc_dwfl(L, pr);
    uint64_t ip = pr->regs[PR_IP];
    if (d && !dwfl_addrmodule(d, ip) && !pr->from_records && time(NULL) != pr->dwfl_reported) {
        /* Code mapped since its mappings were read (dlopen) and not known
         * from a record: read them again, and a new unwinder. Never dwfl_report_* again on an attached Dwfl: libdw's
         * process state borrows the first module's backend (Ebl), which
         * dwfl_report_end frees when that module went away (dlclose,
         * exec): a use after free that crashed the agent. */
        read_maps(L, pr);
        dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        d = proc_dwfl(L, pr);
    }
    if (d)
        dwfl_getthread_frames(d, pr->tid, frame_cb, f);
    if (f->n == 0 && ip)
        f->pcs[f->n++] = ip;
    return f->n;
}

/* ---- locations ---- */

/* The profile's mapping for m of pr (added at its first use), remembered
 * with pr's address space; with leave_names, with its file's build ID. */
static uint64_t user_mapping(live *L, proc *pr, map_ent *m)
{
    if (m->mapping_id)
        return m->mapping_id;
    if (L->leave_names && !m->build_id_read && m->path[0] == '/') {
        m->build_id_read = 1;
        Elf *elf = shared_elf(L, pr->pid, m->path);
        const unsigned char *bits = NULL;
        ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&bits) : -1;
        for (ssize_t i = 0; bits && i < n && i < 20; i++)
            snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
    }
    uint64_t id = hs_profile_add_mapping(L->p, m->start, m->end, m->off, m->path, m->build_id);
    if (!id)
        return 0;
    if (id >= L->cap_map_space) {
        size_t nc = L->cap_map_space ? L->cap_map_space * 2 : 256;
        while (nc <= id)
            nc *= 2;
        uint64_t *ns = realloc(L->map_space, nc * sizeof *ns);
        if (ns)
            L->map_space = ns;
        int *nr = ns ? realloc(L->map_root, nc * sizeof *nr) : NULL;
        if (!nr)
            return id; /* named as unknown */
        L->map_root = nr;
        memset(ns + L->cap_map_space, 0, (nc - L->cap_map_space) * sizeof *ns);
        memset(nr + L->cap_map_space, 0, (nc - L->cap_map_space) * sizeof *nr);
        L->cap_map_space = nc;
    }
    L->map_space[id] = pr->space;
    if (!pr->root) { /* its files are named as it sees them: under /proc/PID/root if its root or mounts are not ours */
        char path[64], ns[64];
        struct stat a, b, c, d;
        snprintf(path, sizeof path, "/proc/%d/root/", pr->pid);
        snprintf(ns, sizeof ns, "/proc/%d/ns/mnt", pr->pid);
        int other_root = stat(path, &a) == 0 && stat("/", &b) == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino);
        int other_ns = stat(ns, &c) == 0 && stat("/proc/self/ns/mnt", &d) == 0 && c.st_ino != d.st_ino;
        pr->root = other_root || other_ns ? 2 : 1;
    }
    L->map_root[id] = pr->root == 2 ? pr->pid : 0;
    return m->mapping_id = id;
}

static uint64_t user_location(live *L, proc *pr, uint64_t addr)
{
    bool ins;
    uint64_t *slot = hs_hmap_slot(&pr->locs, addr, &ins);
    if (!slot)
        return 0;
    if (!ins)
        return *slot;
    map_ent *m = NULL;
    for (int pass = 0; pass < 2 && !m; pass++) {
        for (size_t i = 0; i < pr->n_maps; i++)
            if (addr >= pr->maps[i].start && addr < pr->maps[i].end)
                m = &pr->maps[i];
        if (!m && pass == 0 && !pr->from_records && pr->maps_read != time(NULL))
            read_maps(L, pr);
        else if (!m)
            break;
    }
    uint64_t mid = m ? user_mapping(L, pr, m) : 0;
    uint64_t id = hs_profile_add_location(L->p, mid, addr, NULL, 0);
    slot = hs_hmap_slot(&pr->locs, addr, &ins);
    if (slot)
        *slot = id;
    return id;
}

static uint64_t kernel_location(live *L, uint64_t addr)
{
    uint64_t id;
    if (hs_hmap_get(&L->kloc, addr, &id))
        return id;
    char name[300];
    const char *s = hs_ksyms_lookup(L->ks, addr);
    if (s)
        snprintf(name, sizeof name, "%s [k]", s);
    else
        snprintf(name, sizeof name, "0x%" PRIx64 " [k]", addr);
    if (!L->kmapping) /* after the programs' mappings: the first one names the profile */
        L->kmapping = hs_profile_add_mapping(L->p, 0, 0, 0, "[kernel.kallsyms]", "");
    hs_line ln = {hs_profile_add_function(L->p, name, name, "", 0), 0, 0};
    id = hs_profile_add_location(L->p, L->kmapping, addr, &ln, 1);
    hs_hmap_put(&L->kloc, addr, id);
    return id;
}

static int64_t thread_name(live *L, int pid, int tid)
{
    uint64_t v;
    if (hs_hmap_get(&L->tid_name, (uint64_t)tid, &v))
        return (int64_t)v;
    char path[96], name[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
    if (read_small(path, name, sizeof name))
        snprintf(name, sizeof name, "%d", tid);
    int64_t s = hs_profile_str(L->p, name);
    hs_hmap_put(&L->tid_name, (uint64_t)tid, (uint64_t)s);
    return s;
}

/* ---- ring buffer records ---- */

static void on_comm(live *L, const unsigned char *r, size_t len, uint16_t misc, uint64_t tm)
{
    if (len < 8 + 8 + 1)
        return;
    uint32_t pid, tid;
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 12, 4);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len - 16 < 63 ? len - 16 : 63), (const char *)r + 16);
    if (L->p)
        hs_hmap_put(&L->tid_name, tid, (uint64_t)hs_profile_str(L->p, name));
    else
        hs_hmap_del(&L->tid_name, tid);
    if (pid != tid)
        return;
    int exec = (misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
    proc *pr = find_proc(L, (int)pid, tm);
    if (!pr && exec)
        pr = new_proc(L, (int)pid, 1); /* its new image is built from the records that follow */
    if (!pr)
        return;
    memcpy(pr->comm, name, sizeof name);
    pr->comm_known = 1;
    pr->skip = -1; /* another name, maybe another program: ask again */
    if (exec) { /* a new program: its mappings come from the MMAP2 records that follow */
        drop_image(pr, ++L->n_spaces);
        pr->from_records = 1;
        pr->maps_read = time(NULL);
    }
}

/* PERF_RECORD_FORK: pid, ppid, tid, ptid, time. A new process (not a
 * thread) of a process whose mappings are known starts with a copy of
 * them, not with /proc/PID/maps read later (by then it may have exec'd). */
static void on_fork(live *L, const unsigned char *r, size_t len)
{
    if (len < 8 + 24)
        return;
    uint32_t pid, ppid, tid;
    uint64_t tm;
    memcpy(&pid, r + 8, 4);
    memcpy(&ppid, r + 12, 4);
    memcpy(&tid, r + 16, 4);
    memcpy(&tm, r + 24, 8);
    if (pid != tid || pid == ppid)
        return;
    proc *parent = find_proc(L, (int)ppid, tm);
    if (!parent || (!parent->from_records && !parent->maps_read))
        return; /* unknown: its mappings are read when it is first sampled */
    proc *old = find_proc(L, (int)pid, tm);
    if (old && !old->exit_time)
        old->exit_time = tm; /* its exit went unseen: the pid is the child's now */
    proc *pr = new_proc(L, (int)pid, 1);
    if (!pr)
        return;
    memcpy(pr->comm, parent->comm, sizeof pr->comm); /* a child has its parent's name until it execs */
    pr->comm_known = 1;
    if (!parent->from_records) /* it may have mapped more since its maps were read */
        pr->from_records = 0;
    for (size_t i = 0; i < parent->n_maps; i++)
        add_map(pr, parent->maps[i].start, parent->maps[i].end, parent->maps[i].off, parent->maps[i].path);
}

/* PERF_RECORD_EXIT: pid, ppid, tid, ptid, time. A later sample of this pid
 * is a new process (pid reuse); a later thread with this tid is named anew. */
static void on_exit_rec(live *L, const unsigned char *r, size_t len)
{
    /* pid, ppid, tid, ptid, time */
    if (len < 8 + 24)
        return;
    uint32_t pid, tid;
    uint64_t tm;
    memcpy(&pid, r + 8, 4);
    memcpy(&tid, r + 16, 4);
    memcpy(&tm, r + 24, 8);
    hs_hmap_del(&L->tid_name, tid);
    proc *pr = pid == tid ? find_proc(L, (int)pid, tm) : NULL;
    if (pr)
        pr->exit_time = tm ? tm : 1;
}

/* PERF_RECORD_MMAP2 (executable mappings): pid, tid, addr, len, pgoff,
 * maj, min, ino, ino_generation, prot, flags, filename. A process we know
 * mapped code (exec, dlopen): the mapping joins its list, and it takes a
 * fresh unwinder at its next sample. */
static void on_mmap(live *L, const unsigned char *r, size_t len, uint64_t tm)
{
    if (len < 72 + 2)
        return;
    uint32_t pid;
    uint64_t addr, mlen, pgoff;
    memcpy(&pid, r + 8, 4);
    memcpy(&addr, r + 16, 8);
    memcpy(&mlen, r + 24, 8);
    memcpy(&pgoff, r + 32, 8);
    char name[4096];
    snprintf(name, sizeof name, "%.*s", (int)(len - 72), (const char *)r + 72);
    if (name[0] != '/' && strcmp(name, "[vdso]") != 0)
        return;
    proc *pr = find_proc(L, (int)pid, tm);
    if (!pr)
        return;
    if (!pr->from_records && !pr->maps_read) {
        pr->maps_stale = 1; /* its mappings, when read, will have it */
        return;
    }
    add_map(pr, addr, addr + mlen, pgoff, name);
}

static void on_sample(live *L, const unsigned char *r, size_t len)
{
    const unsigned char *q = r + 8, *end = r + len;
#define TAKE(dst, n)                                                                               \
    do {                                                                                           \
        if ((size_t)(end - q) < (n))                                                               \
            return;                                                                                \
        memcpy((dst), q, (n));                                                                     \
        q += (n);                                                                                  \
    } while (0)
    uint64_t ip, tm, period, nr, abi = 0;
    uint32_t pid, tid, cpu[2];
    TAKE(&ip, 8);
    TAKE(&pid, 4);
    TAKE(&tid, 4);
    TAKE(&tm, 8);
    TAKE(cpu, 8);
    TAKE(&period, 8);
    TAKE(&nr, 8);
    if (nr > 4096 || (size_t)(end - q) < nr * 8)
        return;
    const unsigned char *chain = q;
    q += nr * 8;
    uint64_t regs[N_REGS] = {0};
    TAKE(&abi, 8);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE)
        TAKE(regs, sizeof regs);
    uint64_t size = 0, dyn = 0;
    TAKE(&size, 8);
    const unsigned char *stack = q;
    if (size) {
        if ((uint64_t)(end - q) < size + 8)
            return;
        q += size;
        TAKE(&dyn, 8);
    }
#undef TAKE
    if (pid == 0 || (int)pid == L->self)
        return; /* idle, or ourselves */
    proc *pr = get_proc(L, (int)pid, tm);
    if (!pr)
        return;
    if (pr->info_pending)
        proc_info(pr);
    if (pr->maps_stale && L->skip_inprocess)
        pr->skip = -1; /* the in-process agent may have been loaded (hotspur attach) */
    if (pr->skip < 0) /* decided at its first sample (after an exec: its preloads are mapped by then) */
        pr->skip = !wanted(L, pr);
    if (pr->skip)
        return;
    if (pr->seen != L->window) { /* its first sample in this window */
        pr->seen = L->window;
        L->st.processes++;
    }
    if (pr->maps_stale) { /* its mappings changed (on_mmap) */
        pr->maps_stale = 0;
        if (!pr->from_records && pr->maps_read)
            read_maps(L, pr); /* mapped before we knew it: its maps may lack some */
        if (pr->dwfl) /* never report modules again on an attached Dwfl: a new one */
            dwfl_end(pr->dwfl);
        pr->dwfl = NULL;
        pr->dwfl_failed = 0;
    }
    uint64_t ids[MAX_FRAMES * 2];
    size_t n = 0;
    int in_kernel = 0, first_k = 1;
    for (uint64_t i = 0; i < nr && n < MAX_FRAMES; i++) {
        uint64_t a;
        memcpy(&a, chain + i * 8, 8);
        if (a >= (uint64_t)PERF_CONTEXT_MAX) {
            in_kernel = a == (uint64_t)PERF_CONTEXT_KERNEL;
            continue;
        }
        if (!in_kernel)
            continue;
        ids[n++] = kernel_location(L, first_k ? a : a - 1);
        first_k = 0;
    }
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        memcpy(pr->regs, regs, sizeof regs);
        pr->sp = regs[PR_SP];
        pr->stack = stack;
        pr->stack_size = dyn < size ? dyn : size;
        pr->tid = (int)tid;
        uint64_t pcs[MAX_FRAMES];
        frames f = {pcs, 0, MAX_FRAMES};
        unwind_user(L, pr, &f);
        if (f.n <= 1)
            L->st.unwound_short++;
        for (int i = 0; i < f.n; i++)
            ids[n++] = user_location(L, pr, pcs[i]);
    }
    if (n == 0)
        return;
    int64_t vals[2] = {1, (int64_t)period};
    hs_label lb[5] = {
        {L->k_pid, 0, pid, 0},
        {L->k_tid, 0, tid, 0},
        {L->k_process, hs_profile_str(L->p, pr->comm), 0, 0},
        {L->k_thread, thread_name(L, (int)pid, (int)tid), 0, 0},
        {L->k_cgroup, hs_profile_str(L->p, pr->cgroup), 0, 0},
    };
    size_t n_lb = pr->cgroup[0] ? 5 : 4;
    if (L->off_cpu) {
        offev *e = push_ev(L);
        if (!e || !(e->ids = malloc(n * sizeof *ids)))
            return;
        memcpy(e->ids, ids, n * sizeof *ids);
        e->n_ids = n;
        e->time = tm;
        e->tid = tid;
        memcpy(e->lb, lb, sizeof lb);
        e->n_lb = n_lb;
        return;
    }
    hs_profile_add_sample(L->p, ids, n, vals, lb, n_lb);
    L->st.samples++;
}

/* n bytes of rb's data at position pos (wrapping) into dst. */
static void ring_copy(const ring *rb, uint64_t pos, void *dst, size_t n)
{
    const unsigned char *data = (const unsigned char *)rb->pg + rb->pg->data_offset;
    uint64_t size = rb->pg->data_size, off = pos % size;
    size_t first = off + n <= size ? n : (size_t)(size - off);
    memcpy(dst, data + off, first);
    memcpy((unsigned char *)dst + first, data, n - first);
}

typedef struct {
    uint64_t tail, head, time; /* time of the record at tail; UINT64_MAX: none */
    struct perf_event_header h;
} cursor;

/* The record at c->tail: its header and time (samples: after ip, pid/tid;
 * other records: the sample_id trailer's pid/tid, time, cpu). */
static void cursor_peek(const ring *rb, cursor *c)
{
    c->time = UINT64_MAX;
    if (c->tail + sizeof c->h > c->head)
        return;
    ring_copy(rb, c->tail, &c->h, sizeof c->h);
    if (c->h.size < sizeof c->h || c->tail + c->h.size > c->head)
        return;
    uint64_t t = 0;
    if (c->h.type == PERF_RECORD_SAMPLE && c->h.size >= 32)
        ring_copy(rb, c->tail + 24, &t, 8);
    else if (c->h.type != PERF_RECORD_SAMPLE && c->h.size >= 8 + 24)
        ring_copy(rb, c->tail + c->h.size - 16, &t, 8);
    c->time = t;
}

static void dispatch(live *L, const unsigned char *rec, const struct perf_event_header *h, uint64_t tm,
                     int samples_only)
{
    if (h->type == PERF_RECORD_SAMPLE && L->p)
        on_sample(L, rec, h->size);
    else if (h->type == PERF_RECORD_MMAP2)
        on_mmap(L, rec, h->size, tm);
    else if (h->type == PERF_RECORD_COMM)
        on_comm(L, rec, h->size, h->misc, tm);
    else if (h->type == PERF_RECORD_FORK)
        on_fork(L, rec, h->size);
    else if (h->type == PERF_RECORD_EXIT)
        on_exit_rec(L, rec, h->size);
    else if (h->type == PERF_RECORD_SWITCH && L->off_cpu && !(h->misc & PERF_RECORD_MISC_SWITCH_OUT) &&
             h->size >= 8 + 16) {
        /* sample_id: pid, tid, time */
        offev *e = push_ev(L);
        if (e) {
            memcpy(&e->tid, rec + 12, 4);
            memcpy(&e->time, rec + 16, 8);
            e->in = 1;
        }
    } else if (h->type == PERF_RECORD_LOST && h->size >= 24) {
        uint64_t lost;
        memcpy(&lost, rec + 16, 8);
        if (samples_only || !L->track)
            L->st.lost += lost;
        if (samples_only)
            return; /* -a's sample ring: the records travel in the track rings */
        /* An exec or mmap may be among them: every image is read afresh
         * from /proc/PID/maps, as for a process mapped before the
         * recording (drop_image). */
        for (size_t i = 0; i < L->n_procs; i++)
            drop_image(L->procs[i], ++L->n_spaces);
    }
}

/* Take in what every ring buffer holds, merged in time order: each CPU's
 * ring is in order, but a process that execs, maps or exits on one CPU and
 * is sampled on another must be seen in the order it happened, so each
 * sample is unwound and named against the mappings live when it was taken
 * (and a pid's next process is not charged to the one before). */
static void drain(live *L)
{
    cursor stack_cur[8], *cur = L->n_rings <= 8 ? stack_cur : calloc(L->n_rings, sizeof *cur);
    if (!cur)
        return;
    /* the sample rings' ends first, then the track rings': every record
     * older than a sample taken in is taken in too */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < L->n_rings; i++) {
            if (L->rings[i].track != pass)
                continue;
            cur[i].time = UINT64_MAX;
            if (!L->rings[i].pg)
                continue;
            cur[i].head = __atomic_load_n(&L->rings[i].pg->data_head, __ATOMIC_ACQUIRE);
            cur[i].tail = L->rings[i].pg->data_tail;
            cursor_peek(&L->rings[i], &cur[i]);
        }
    for (;;) {
        size_t best = L->n_rings;
        for (size_t i = 0; i < L->n_rings; i++)
            if (cur[i].time != UINT64_MAX && (best == L->n_rings || cur[i].time < cur[best].time))
                best = i;
        if (best == L->n_rings)
            break;
        ring *rb = &L->rings[best];
        cursor *c = &cur[best];
        const unsigned char *data = (const unsigned char *)rb->pg + rb->pg->data_offset;
        uint64_t off = c->tail % rb->pg->data_size;
        const unsigned char *rec = data + off;
        if (off + c->h.size > rb->pg->data_size) { /* wraps: a copy */
            if (L->tmpcap < c->h.size) {
                unsigned char *nt = realloc(L->tmp, c->h.size);
                if (!nt)
                    break;
                L->tmp = nt;
                L->tmpcap = c->h.size;
            }
            ring_copy(rb, c->tail, L->tmp, c->h.size);
            rec = L->tmp;
        }
        dispatch(L, rec, &c->h, c->time, L->track && !rb->track);
        c->tail += c->h.size;
        __atomic_store_n(&rb->pg->data_tail, c->tail, __ATOMIC_RELEASE);
        cursor_peek(rb, c);
    }
    if (cur != stack_cur)
        free(cur);
}

static void perm_error(char *err, size_t errlen, int e)
{
    char para[32] = "?";
    read_small("/proc/sys/kernel/perf_event_paranoid", para, sizeof para);
    snprintf(err, errlen,
             "perf_event_open: %s: not allowed with kernel.perf_event_paranoid=%s; run as root or "
             "with CAP_PERFMON (or lower kernel.perf_event_paranoid: <= 1 for -p on your own "
             "processes, <= 0 for -a)",
             strerror(e), para);
}

static int open_ring(ring *rb, int fd, size_t page, size_t pages)
{
    rb->fd = fd;
    rb->len = (pages + 1) * page;
    void *m = mmap(NULL, rb->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        rb->pg = NULL;
        return -1;
    }
    rb->pg = m;
    return 0;
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
    if (read_small(path, buf, sizeof buf) != 0 || sscanf(buf, "%llu %llu %llu", run, &wait, slices) != 3)
        return -1;
    return 0;
}

/* A kernel frame known by name only (/proc/PID/task/TID/stack). */
static uint64_t kernel_location_named(live *L, const char *fn)
{
    uint64_t key = hs_hmap_mix(hs_hmap_mix(0x6b6e616d65ULL)), id; /* never a kernel address: top bit clear */
    for (const char *c = fn; *c; c++)
        key = hs_hmap_mix(key ^ (unsigned char)*c);
    key &= ~(1ULL << 63);
    if (hs_hmap_get(&L->kloc, key, &id))
        return id;
    char name[300];
    snprintf(name, sizeof name, "%s [k]", fn);
    if (!L->kmapping)
        L->kmapping = hs_profile_add_mapping(L->p, 0, 0, 0, "[kernel.kallsyms]", "");
    hs_line ln = {hs_profile_add_function(L->p, name, name, "", 0), 0, 0};
    id = hs_profile_add_location(L->p, L->kmapping, 0, &ln, 1);
    hs_hmap_put(&L->kloc, key, id);
    return id;
}

/* The stack of thread tid of pr, asleep: kernel frames from its
 * /proc/PID/task/TID/stack (names), user frames unwound from the stack
 * pointer and pc it entered the kernel with (/proc/PID/task/TID/syscall)
 * over its stack read from /proc/PID/mem. No ptrace stop: a sleeping
 * thread's stack does not change until it runs. The frame count, 0 if
 * nothing could be read. */
static size_t sleeping_stack(live *L, proc *pr, int tid, uint64_t *ids, size_t max)
{
    char path[96], *buf = NULL;
    size_t cap = 0, n = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/stack", pr->pid, tid);
    if (slurp(path, &buf, &cap) > 0) {
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
                ids[n++] = kernel_location_named(L, fn);
        }
    }
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pr->pid, tid);
    uint64_t sp = 0, pc = 0;
    if (slurp(path, &buf, &cap) > 0 && strncmp(buf, "running", 7) != 0) {
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
    memset(pr->regs, 0, sizeof pr->regs); /* only sp and pc are known */
    pr->regs[PR_SP] = sp;
    pr->regs[PR_IP] = pc;
    pr->sp = sp;
    pr->stack = mem;
    pr->stack_size = got > 0 ? (uint64_t)got : 0;
    pr->tid = tid;
    uint64_t pcs[MAX_FRAMES];
    frames f = {pcs, 0, MAX_FRAMES};
    unwind_user(L, pr, &f);
    for (int i = 0; i < f.n && n < max; i++)
        ids[n++] = user_location(L, pr, pcs[i]);
    pr->stack = NULL;
    free(mem);
    return n;
}

/* Off-CPU: the threads of the processes recorded that are asleep as the
 * window begins, with their stacks (sleeping_stack), so that a thread
 * blocked all along, which never switches, is counted too. */
static void park_threads(live *L)
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
        proc *pr = d ? get_proc(L, pid, 0) : NULL;
        if (pr && pr->info_pending)
            proc_info(pr);
        if (pr && pr->skip < 0)
            pr->skip = !wanted(L, pr);
        struct dirent *de;
        while (pr && !pr->skip && (de = readdir(d))) {
            int tid = atoi(de->d_name);
            char st[512];
            snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
            if (tid <= 0 || read_small(path, st, sizeof st) != 0)
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
                {L->k_thread, thread_name(L, pid, tid), 0, 0},
                {L->k_cgroup, hs_profile_str(L->p, pr->cgroup), 0, 0},
            };
            memcpy(pk->e.lb, lb, sizeof lb);
            pk->e.n_lb = pr->cgroup[0] ? 5 : 4;
            L->n_parked++;
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
static void off_cpu_samples(live *L, uint64_t t_start, uint64_t t_end)
{
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
    L->n_ev = 0;
}

/* Name the user frames: each from the mappings of its own process image
 * (hs_symbolize_spaces), never from another process's file at the same
 * address. With leave_names, those of files with a build ID stay
 * addresses for the server to name. */
static void symbolize(live *L, hs_symbolizer *keep)
{
    hs_symbolizer *s = keep ? keep : hs_symbolizer_new();
    uint64_t *space = calloc(L->p->n_mappings + 1, sizeof *space);
    int64_t *host_name = calloc(L->p->n_mappings + 1, sizeof *host_name);
    if (s && space && host_name) {
        for (size_t i = 0; i < L->p->n_mappings; i++) {
            hs_mapping *m = &L->p->mappings[i];
            space[i] = m->id < L->cap_map_space ? L->map_space[m->id] : 0;
            /* left to the server: files with a build ID (the vDSO is not a file) */
            if (L->leave_names && *hs_profile_string(L->p, m->build_id))
                space[i] = 0;
            /* a process under another root (a container): its file as it
             * sees it, while it is still there, not the host's at that path */
            int pid = m->id < L->cap_map_space ? L->map_root[m->id] : 0;
            const char *file = hs_profile_string(L->p, m->filename);
            char alt[4200];
            if (space[i] && pid && file[0] == '/' &&
                snprintf(alt, sizeof alt, "/proc/%d/root%s", pid, file) < (int)sizeof alt &&
                access(alt, R_OK) == 0) {
                host_name[i] = m->filename;
                m->filename = hs_profile_str(L->p, alt);
            }
        }
        hs_symbolize_spaces(s, L->p, space);
        for (size_t i = 0; i < L->p->n_mappings; i++) /* the profile names the path the process mapped */
            if (host_name[i])
                L->p->mappings[i].filename = host_name[i];
    }
    free(host_name);
    free(space);
    if (!keep)
        hs_symbolizer_free(s);
}

static int sched_switch_id(void)
{
    char buf[32];
    const char *path = "/sys/kernel/tracing/events/sched/sched_switch/id";
    if (read_small(path, buf, sizeof buf) != 0) {
        mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL); /* as perf would need */
        if (read_small(path, buf, sizeof buf) != 0)
            return -1;
    }
    return atoi(buf);
}

/* Free the processes that ended, that a newer process with their pid
 * replaced, or that were not sampled in the last KEEP_WINDOWS windows
 * (their unwinders hold memory); between windows only. */
static void forget_procs(live *L)
{
    size_t k = 0;
    for (size_t i = 0; i < L->n_procs; i++) {
        proc *pr = L->procs[i];
        uint64_t ix = 0;
        hs_hmap_get(&L->pid_ix, (uint64_t)pr->pid, &ix);
        if (ix != i + 1 || pr->exit_time || L->window - (pr->seen > pr->born ? pr->seen : pr->born) > KEEP_WINDOWS)
            free_proc(pr);
        else
            L->procs[k++] = pr;
    }
    L->n_procs = k;
    hs_hmap_clear(&L->pid_ix);
    for (size_t i = 0; i < k; i++)
        hs_hmap_put(&L->pid_ix, (uint64_t)L->procs[i]->pid, i + 1);
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
        free_proc(L->procs[i]);
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
    hs_ksyms_free(L->own_ks);
    hs_profile_free(L->p);
    forget_elfs(L);
    if (L->vdso_elf)
        elf_end(L->vdso_elf);
    free(L->vdso);
    free(L->elfs);
    hs_hmap_free(&L->elf_ix);
    free(L);
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
        int id = sched_switch_id();
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
                if (errno == EACCES || errno == EPERM)
                    perm_error(err, errlen, errno);
                else
                    snprintf(err, errlen, "perf_event_open on CPU %ld: %s", c, strerror(errno));
                fail = 1;
                break;
            }
            if (add_fd(&L->fds, &L->n_fds, (int)fd) != 0) {
                snprintf(err, errlen, "out of memory");
                fail = 1;
                break;
            }
            if (open_ring(&L->rings[L->n_rings++], (int)fd, page, RING_PAGES) != 0) {
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
                open_ring(&L->rings[L->n_rings], (int)tfd, page, TRACK_PAGES) != 0) {
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
            unsigned long long st0 = start_time(pid);
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
                        if (errno == EACCES || errno == EPERM)
                            perm_error(err, errlen, errno);
                        else
                            snprintf(err, errlen, "perf_event_open on thread %d: %s", tid, strerror(errno));
                        fail = 1;
                        break;
                    }
                    if (add_fd(&L->fds, &L->n_fds, (int)fd) != 0) {
                        snprintf(err, errlen, "out of memory");
                        fail = 1;
                        break;
                    }
                    opened = 1;
                    if (leader[c] < 0) {
                        leader[c] = (int)fd;
                        if (open_ring(&L->rings[L->n_rings++], (int)fd, page, RING_PAGES) != 0) {
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
            if (!fail && st0 && start_time(pid) != st0) {
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
    L->ks = o->ksyms ? o->ksyms : (L->own_ks = hs_ksyms_load(NULL));
    for (size_t i = 0; i < L->n_pids; i++)
        get_proc(L, L->pids[i], 0); /* maps and names now, in case it exits early */
    if (L->all) {
        /* What every process maps now, before the first window: its samples
         * may be taken in before its later execs' records are (the
         * processes that start later are known from their records). */
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            int pid = atoi(de->d_name);
            proc *pr = pid > 0 && pid != L->self && !find_proc(L, pid, 0) ? new_proc(L, pid, 0) : NULL;
            if (pr)
                read_maps(L, pr);
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
    drain(L);
    forget_procs(L);
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
            user_mapping(L, L->procs[ix - 1], &L->procs[ix - 1]->maps[0]);
    }

    if (L->off_cpu)
        park_threads(L);
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
            pfd[i].fd = L->rings[i].fd;
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
        drain(L);
        for (size_t i = 0; i < L->n_rings; i++)
            if (!pfd || !(pfd[i].revents & POLLHUP))
                alive = 1;
        if (!L->all && !alive)
            break; /* every attached process ended */
    }
    perf_ioctl(L->fds, L->n_fds, PERF_EVENT_IOC_DISABLE);
    drain(L);
    free(pfd);
    clock_gettime(CLOCK_MONOTONIC, &now);
    L->p->time_nanos = (int64_t)time(NULL) * 1000000000LL;
    L->p->duration_nanos = (now.tv_sec - t0.tv_sec) * 1000000000LL + (now.tv_nsec - t0.tv_nsec);
    if (L->off_cpu)
        off_cpu_samples(L, (uint64_t)t0.tv_sec * 1000000000ULL + (uint64_t)t0.tv_nsec,
                        (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec);
    symbolize(L, symbolizer);
    hs_profile *out = L->p;
    L->p = NULL;
    if (stats)
        *stats = L->st;
    forget_procs(L);
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
