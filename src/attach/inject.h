/* inject.h — load a shared library into a running process from outside:
 * ptrace the process, call the dlopen of its own libc in one of its
 * threads, restore that thread's registers (general, FP/vector) and the
 * memory written, and detach. x86-64 Linux, glibc >= 2.34 (dlopen in
 * libc.so.6). The layer behind `hotspur attach` (docs/attach.md). */
#ifndef HS_ATTACH_INJECT_H
#define HS_ATTACH_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t tid;           /* the thread that made the call */
    int64_t stopped_ns;  /* from the stop of that thread to its release */
    int64_t call_ns;     /* of which in the injected calls */
    int restarted;       /* the thread was in a system call, restarted after */
    int signals_held;    /* signals that arrived during the call, delivered after */
    uint64_t handle;     /* dlopen's handle in the target */
    uint64_t sym;        /* the address of the symbol asked for (0: none asked or absent) */
    uint64_t sym_ret;    /* what that function returned, when called */
} hs_inject_result;

/* Why a process cannot be injected into, before anything is done to it: 0,
 * or -1 with one line in err (the reason and the fix). Checks: the process
 * exists and is ours (or we are root), no other tracer, the ptrace policy
 * (yama), a dynamic libc with dlopen. */
int hs_inject_check(pid_t pid, char *err, size_t errlen);

/* dlopen(path, RTLD_NOW) in process pid; when call_sym is not NULL, then
 * call_sym(call_arg) from the loaded library (a function taking one string
 * argument, returning a long), in the same stop. path must be absolute.
 * 0 on success (result filled), -1 with one line in err; on a failure after
 * the stop the thread is restored all the same.
 *
 * Only the calling thread is stopped; the others run on (dlopen takes the
 * loader's lock itself). The thread is chosen blocked in a system call other
 * than futex when there is one (it then holds no malloc or loader lock in
 * user space); its call is restarted after, as after a signal handler. */
int hs_inject_dlopen(pid_t pid, const char *path, const char *call_sym, const char *call_arg,
                     hs_inject_result *result, char *err, size_t errlen);

#endif
