/* live.h — profile processes that are already running, from outside
 * (`hotspur record -p PID` / `-a`): perf_event_open sampling with the
 * kernel's callchain for kernel frames and a copy of the user stack and
 * registers, unwound with elfutils' DWARF unwinder (libdwfl). The target is
 * never stopped and needs no agent. */
#ifndef HS_LIVE_H
#define HS_LIVE_H

#include <signal.h>
#include <stddef.h>

#include "live/ksyms.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"

typedef struct {
    const int *pids; /* processes to attach to (all their threads) */
    size_t n_pids;
    int all;         /* every process on the host, one event per CPU */
    int hz;          /* samples per second of CPU time */
    double duration; /* seconds; <= 0: until *stop */
    volatile sig_atomic_t *stop;
    int stack_bytes; /* user stack copied per sample (default 16384) */
    int off_cpu;     /* time off CPU (sched_switch) instead of CPU time */
    /* For a caller that records again and again (the host agent): kernel
     * symbols loaded once, and a symbolizer whose parsed files and named
     * addresses carry over from one recording to the next. NULL: loaded
     * and freed within the recording. */
    hs_ksyms *ksyms;
    hs_symbolizer *symbolizer;
    /* Leave user frames of files with a build ID unnamed: locations with
     * addresses, mappings with file, offsets and build ID, for `hotspur
     * serve` to name (docs/debuginfo.md); the vDSO and files without a
     * build ID are still named here. */
    int leave_names;
    /* Which processes to sample (NULL: all): asked once per process, with
     * its name and cgroup path, before any of its stacks is unwound; the
     * samples of a process it refuses are dropped. */
    int (*want)(void *arg, int pid, const char *comm, const char *cgroup);
    void *want_arg;
    /* Drop the samples of processes that run the in-process agent
     * (libhotspur.so mapped): their own profiles have more. */
    int skip_inprocess;
} hs_live_options;

typedef struct {
    size_t samples, lost, unwound_short, processes;
    size_t new_processes, unwinders; /* first seen, unwinders built in this window */
    /* off_cpu: threads asleep at the start; those in user code (a user
     * stack); those of them whose every user register was read (BPF) */
    size_t parked, parked_user, parked_full_regs;
} hs_live_stats;

/* With off_cpu, the profile is switches/count, off_cpu/nanoseconds: each
 * time a thread leaves the CPU its stack is taken (sched:sched_switch) and
 * charged the time until it runs again (or the end of the recording).
 * Otherwise: */
/* Sample as opts says and return the profile (samples/count, cpu/nanoseconds;
 * labels pid, process, thread, cgroup; kernel frames named "FN [k]" in the
 * mapping "[kernel.kallsyms]"; user frames symbolized from the processes'
 * mappings). NULL with a one-line message in err on failure (permission:
 * names kernel.perf_event_paranoid and CAP_PERFMON). */
hs_profile *hs_live_record(const hs_live_options *opts, hs_live_stats *stats, char *err, size_t errlen);

/* A session for a caller that records window after window (the host
 * agent): the perf events stay open (sampling only within windows) and
 * what is known of each process (mappings, unwinder, parsed unwind tables)
 * is kept from one window to the next; with -a a dummy event per CPU
 * reports execs, exits and newly mapped code between windows, so that
 * knowledge stays true. hs_live_record is open + one window + close.
 * opts' duration, stop and symbolizer are not used by open. */
typedef struct hs_live hs_live;
hs_live *hs_live_open(const hs_live_options *opts, char *err, size_t errlen);
/* Record for duration seconds (<= 0: until *stop), name the frames (with
 * symbolizer, kept by the caller, or a fresh one if NULL) and return the
 * profile, as hs_live_record. */
hs_profile *hs_live_window(hs_live *l, double duration, volatile sig_atomic_t *stop, hs_symbolizer *symbolizer,
                           hs_live_stats *stats, char *err, size_t errlen);
/* Between windows, now and then (every 100 ms or so): take in the execs,
 * exits and mappings reported since, and forget processes that ended. */
void hs_live_idle(hs_live *l);
void hs_live_close(hs_live *l);

/* The samples of p at indices idx[0..n) as a new profile with p's sample
 * types, period, times and comments and only the locations, functions,
 * mappings and strings those samples use (split.c). NULL out of memory. */
hs_profile *hs_live_subset(const hs_profile *p, const size_t *idx, size_t n);

#endif
