/* live_int.h — what the files of src/live share (private to src/live; the
 * interface is live.h): the session (struct hs_live), what it knows of each
 * process (proc, map_ent), its ring buffers and off-CPU events, and the
 * functions each file offers the others:
 *   live.c      the session: perf events opened, windows, closing
 *   records.c   the ring buffers read in time order: samples, exec, fork,
 *               exit and mmap records
 *   procs.c     the process table: /proc reading, each image's mappings
 *   unwind.c    user stacks unwound with libdwfl over the copied stack; the
 *               shared ELF files
 *   locations.c the profile's locations and mappings, kernel frames, naming
 *   offcpu.c    --off-cpu: switch events paired, threads parked all along */
#ifndef HS_LIVE_INT_H
#define HS_LIVE_INT_H

#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/hashmap.h"
#include "live/ksyms.h"
#include "live/live.h"
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

typedef struct proc {
    int pid;
    unsigned long long starttime;
    uint64_t exit_time; /* perf time of its exit record; 0 while alive */
    int leader_gone;    /* its main thread ended, other threads run on */
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
    /* The image it had before its last exec (its mappings), until the end
     * of the window: a sample taken inside execve after the kernel put in
     * the new image still carries the old one's user registers (the pc of
     * its execve call), though its stack is gone; that pc is named from
     * here. */
    struct proc *prev;
} proc;

typedef struct {
    int fd;
    struct perf_event_mmap_page *pg;
    size_t len;
    int track; /* -a: the dummy event's ring (records only, never samples) */
    int hup;   /* -p: the event it belongs to hung up (others may still write into it) */
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
    hs_ksyms *ks;
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
    int sleepregs_tried, sleepregs_fd; /* sleepregs.c: its BPF program */
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

typedef struct {
    uint64_t *pcs;
    int n, max;
} frames;

/* procs.c: /proc files */
int lv_read_small(const char *path, char *buf, size_t len); /* one short file, trailing newlines cut; -1 */
unsigned long long lv_start_time(int pid);                  /* field 22 of /proc/PID/stat; 0 unknown */
ssize_t lv_slurp(const char *path, char **buf, size_t *cap);
uint64_t lv_hex(char **s);
/* procs.c: the process table */
void lv_read_maps(live *L, proc *pr);
int lv_threads_left(proc *pr);
void lv_keep_prev(proc *pr);
int lv_maps_cover(const proc *pr, uint64_t addr);
void lv_add_map(proc *pr, uint64_t s, uint64_t e, uint64_t off, const char *name);
int lv_wanted(live *L, proc *pr);
proc *lv_find_proc(live *L, int pid, uint64_t tm);
proc *lv_get_proc(live *L, int pid, uint64_t tm);
proc *lv_new_proc(live *L, int pid, int no_maps);
void lv_proc_info(proc *pr);
/* The cgroup label from the text of /proc/PID/cgroup (v1, v2 or both): at
 * most 255 bytes of the path in out; "" when no line has one. */
void lv_cgroup_path(const char *text, char *out, size_t len);
void lv_drop_image(proc *pr, uint64_t new_space);
void lv_free_proc(proc *pr);
void lv_forget_procs(live *L);

/* unwind.c */
Elf *lv_shared_elf(live *L, int pid, const char *modname);
void lv_forget_elfs(live *L);
int lv_unwind_user(live *L, proc *pr, frames *f);

/* locations.c */
uint64_t lv_user_mapping(live *L, proc *pr, map_ent *m);
uint64_t lv_user_location(live *L, proc *pr, uint64_t addr);
uint64_t lv_kernel_location(live *L, uint64_t addr);
uint64_t lv_kernel_location_named(live *L, const char *fn);
void lv_name_kernel(live *L);
int64_t lv_thread_name(live *L, int pid, int tid);
void lv_symbolize(live *L, hs_symbolizer *keep);

/* records.c */
int lv_open_ring(ring *rb, int fd, size_t page, size_t pages);
void lv_drain(live *L);

/* offcpu.c */
offev *lv_push_ev(live *L);
void lv_park_threads(live *L);
void lv_off_cpu_samples(live *L, uint64_t t_start, uint64_t t_end);
int lv_sched_switch_id(void);

/* sleepregs.c: every user register (N_REGS, perf's order) of thread tid,
 * asleep in the kernel, read without stopping it; 0, or -1 where BPF task
 * iterators are not available (the caller keeps sp + pc from /proc). */
int lv_sleeping_regs(live *L, int tid, uint64_t *regs);
void lv_sleeping_regs_end(live *L);

#endif
