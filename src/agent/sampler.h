/* sampler.h — CPU time sampling per thread: one POSIX timer per thread on
 * that thread's CPU clock, delivering the agent's signal to that thread
 * only (SIGEV_THREAD_ID); the signal's handler; the wall-clock timers of
 * running threads; stopping the other threads for the leak scan. The
 * threads are the registry's (threads.h). */
#ifndef HS_AGENT_SAMPLER_H
#define HS_AGENT_SAMPLER_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/stacktab.h"
#include "agent/threads.h"

/* Install the SIGPROF handler and arm a timer on every existing thread.
 * 0 on success, -1 (with a message on stderr) on failure. */
int hs_sampler_start(void);
/* Disarm every timer (samples stop; the handler stays installed). */
void hs_sampler_stop(void);
/* Register the calling thread (stack bounds, name) and, when CPU sampling is
 * on, arm its timer. Call at the start of every new thread. */
void hs_sampler_thread_begin(void);
/* The calling thread is exiting: delete its timer, remember its name. */
void hs_sampler_thread_end(void);
/* Remove this thread's alternate signal stack if the agent installed it
 * (and the thread is not on it): a detach, on the thread it stops, which is
 * usually the one the attach started the agent on. */
void hs_sampler_altstack_release(void);
/* In a fork child: forget the parent's threads; if the child profiles,
 * register this thread (and arm its CPU timer), else give the signal back. */
void hs_sampler_after_fork(int profiling);

/* The leak scan's view of the other threads (at exit, hotspur --leaks).
 * hs_sampler_stop_others registers the threads the agent did not see start
 * (those of /proc/self/task it lacks: started before it, or by the C
 * library itself) and stops every other live thread in the agent's signal
 * handler, where it saves the interrupted code's registers and stack
 * pointer and waits; a thread that has not stopped within timeout_ms is
 * left running. A thread that blocks the signal (the agent's own threads
 * block them all) is not asked, nor waited for. It returns how many threads
 * were asked and did not stop in time. Until
 * hs_sampler_resume_others lets them go, the caller must take no lock a
 * stopped thread may hold: no malloc, no stdio, no dl_iterate_phdr or
 * dlsym. hs_sampler_each_other_stack calls fn for each of those threads:
 * a stopped one's live stack is [live_lo, hi) (from its stack pointer,
 * less the red zone, up: what lies below is dead frames, as valgrind's
 * leak check says) and regs its registers; one that did not stop has no
 * registers, and live_lo = its stack pointer (less the red zone) if it is
 * blocked in the kernel (/proc/self/task/TID/syscall), else lo. A thread
 * whose bounds the agent did not know has for its stack the mapping that
 * holds its stack pointer. One that neither stops nor blocks is held by a
 * tracer process (ptrace) and has its registers and stack pointer as if
 * stopped; where ptrace is refused it is scanned whole if its bounds are
 * known, else left out. */
typedef struct {
    int32_t tid;
    uintptr_t lo, live_lo, hi;
    const uint64_t *regs;
    int nregs;
} hs_thread_stack;
int hs_sampler_stop_others(int timeout_ms);
void hs_sampler_each_other_stack(void (*fn)(const hs_thread_stack *t, void *arg), void *arg);
void hs_sampler_resume_others(void);

/* pthread_sigmask without the agent's filter (its own thread blocks every
 * signal, ours included). */
int hs_sampler_real_sigmask(int how, const sigset_t *set, sigset_t *old);

#endif
