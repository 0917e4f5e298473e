/* core.h — the agent's core, shared by all its modules: configuration,
 * per-thread data, the process-wide agent record, clocks, the environment,
 * the agent's own frames and threads (core.c). The agent is the only place
 * in hotspur with global state: it lives inside someone else's process. */
#ifndef HS_AGENT_CORE_H
#define HS_AGENT_CORE_H

#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/stacktab.h"
#include "agent/unwind.h"

#define HS_MAX_DEPTH_LIMIT 512 /* frames; bounds the handler's stack use (4 KiB) */

typedef struct {
    char output[PATH_MAX]; /* HOTSPUR_OUTPUT template: %p pid, %% percent */
    int cpu_hz;            /* HOTSPUR_CPU_HZ */
    int max_depth;         /* HOTSPUR_MAX_DEPTH */
    uint32_t max_stacks;   /* HOTSPUR_MAX_STACKS: distinct stacks kept */
    bool stats;            /* HOTSPUR_STATS=1: print agent costs at exit */
    int signal;            /* HOTSPUR_SIGNAL: sampling signal, 0 = SIGRTMAX-3 */
    bool cpu;              /* HOTSPUR_CPU: CPU profile (default on) */
    bool heap;             /* HOTSPUR_HEAP: heap profile (default off) */
    bool leaks;            /* HOTSPUR_LEAKS: leak report (exact heap mode) */
    int64_t heap_rate;     /* HOTSPUR_HEAP_RATE: mean bytes between samples; 1 = all */
    uint32_t heap_max_live; /* HOTSPUR_HEAP_MAX_LIVE: tracked live allocations */
    int wall_hz;           /* HOTSPUR_WALL_HZ: wall-clock samples per second, 0 = off */
    int wall_threads;      /* HOTSPUR_WALL_THREADS: threads sampled per wall tick at most */
    bool lock;             /* HOTSPUR_LOCK: lock contention profile */
    int64_t period_ns;     /* HOTSPUR_PERIOD: periodic profiles every period, 0 = off */
    int64_t duration_ns;   /* HOTSPUR_DURATION: each periodic profile's length */
    bool follow;           /* HOTSPUR_FOLLOW: fork/exec children profile themselves */
    bool control;          /* HOTSPUR_CONTROL: the agent thread and control socket */
    bool defer_symbols;    /* HOTSPUR_DEFER_SYMBOLS: the exit write (and the one
                              before exec) leaves symbolizing to `hotspur record`,
                              outside the program */
    bool symbolize_server; /* HOTSPUR_SYMBOLIZE=server: never symbolize in the process;
                              profiles carry addresses and mappings with build IDs,
                              and the server (or `hotspur symbolize`) names them */
    bool continuous;       /* HOTSPUR_SERVER set: each window is uploaded (upload.c),
                              no file is written but on demand */
} hs_config;

/* Per-thread data; initial-exec TLS so the signal handler can read it. */
typedef struct {
    int32_t tid;
    int32_t slot; /* index in the thread registry, -1 if none */
    hs_stack_bounds stack;
    int32_t in_agent;      /* >0 while agent code runs: allocations are not recorded */
    uint32_t labels;       /* the thread's label set id (labels.h), 0 = none */
    int64_t heap_countdown; /* bytes until the next heap sample */
    uint64_t rng;          /* per-thread random state, 0 = unseeded */
    void *altstack;        /* the agent's alternate signal stack (mmap), or NULL */
    uint64_t start_fn;     /* the thread's start routine (pthread_create), 0 unknown */
} hs_thread;

extern __thread hs_thread hs_self __attribute__((tls_model("initial-exec")));

typedef struct {
    hs_config cfg;
    _Atomic int cpu_on;    /* the CPU sampler records samples */
    bool started;          /* hs_agent_start ran in this process */
    pid_t pid;
    int64_t start_wall_ns; /* CLOCK_REALTIME at start */
    int64_t start_mono_ns; /* CLOCK_MONOTONIC at start */
    hs_stacktab cpu;       /* CPU samples: values[0] = samples */
    hs_stacktab wall;      /* wall samples: values[0] = samples, [1] = nanoseconds */
    hs_stacktab lock;      /* contentions: values[0] = count, [1] = delay ns */
    _Atomic int wall_on, lock_on;
    bool root;             /* the process `hotspur record` started (or no record) */
    int64_t window_wall_ns; /* start of what the next profile covers */
    int64_t write_end_ns;   /* while the files of a dump are written: its end (one for every type) */
    int dumps;             /* dumps so far (the %n of the last one) */
    bool exiting;          /* the exit write is under way */
    bool before_exec;      /* the write before exec is under way */
    bool exit_numbered;    /* a dump took the exit write's name: number it */
    bool attached;         /* started by `hotspur attach` in a running process (attach.c) */
    _Atomic uint64_t handler_ns, handler_calls; /* with cfg.stats */
} hs_agent;

extern hs_agent hs_g;

int64_t hs_now_ns(int clock);
/* Environment settings as read_config reads them: a bad value is reported
 * on stderr and def used. Durations: "500ms", "10s", "2m", "1h", seconds. */
int64_t hs_agent_env_duration(const char *name, int64_t def);
long hs_agent_env_long(const char *name, long def, long lo, long hi);
/* The calling thread's stack (the agent's own frames dropped) interned in
 * t with its tid and labels: the recording step of the allocation and lock
 * hooks. The caller has raised hs_self.in_agent. NULL when t is full. */
hs_stack_entry *hs_agent_intern_here(hs_stacktab *t);
/* The same from a hook's call site (c: the registers at the hook's entry),
 * without unwinding the agent's frames in between; c NULL: from here. */
hs_stack_entry *hs_agent_intern_call(hs_stacktab *t, const hs_call_regs *c);
/* Create a thread of the agent's own (not registered, never profiled). */
int hs_agent_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);
/* Whether addr lies in the agent's own library (code or data). */
int hs_agent_owns_pc(uint64_t addr);

/* The tables of a loaded object's dynamic section (NULL / 0 when absent),
 * found through its PT_DYNAMIC segment: its symbols and their names, its
 * GNU hash table, its PLT and other relocations. */
typedef struct {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const ElfW(Rela) *jmprel, *rela;
    size_t jmprel_size, rela_size;
} hs_dyn_tables;
void hs_agent_dyn_tables(const struct dl_phdr_info *info, hs_dyn_tables *t);
/* Who defines what calls to the function `name` reach: NULL when it is the
 * agent (or no one), else the defining object's path. That is the first
 * object in the global lookup order with a real definition, which
 * dlsym(RTLD_DEFAULT) does not always give: an executable that takes the
 * function's address (python3 does for malloc) makes its PLT stub the
 * function's canonical address, though its calls reach the agent. */
const char *hs_agent_symbol_owner(const char *name);
/* Drop the agent's own frames (its malloc wrappers, ...) from a stack of
 * the program's, in place; the new depth. Async-signal-safe. */
int hs_agent_hide_frames(uint64_t *pcs, int n);
pid_t hs_gettid(void);
/* Learn the calling thread's tid and stack bounds (not in a signal handler). */
void hs_thread_identify(void);

/* The defaults hs_agent_start_config builds on. */
void hs_agent_config_defaults(hs_config *c);
/* Derived settings (leaks -> exact heap, ...); call after every field is set. */
void hs_agent_config_finish(hs_config *c);
/* The configuration from the environment (HOTSPUR_*), finished. */
void hs_agent_read_config(hs_config *c);
/* Whether this process is the one `hotspur record` started; a descendant
 * profiles itself only when children are followed. */
int hs_agent_is_root(void);
/* At load: the agent's own address range, the real pthread_create. */
void hs_agent_core_init(void);
/* At start: new threads are registered with the samplers as they start
 * and leave the registry as they end. 0, or -1. */
int hs_agent_threads_init(void);

#endif
