/* unwind.h — async-signal-safe stack unwinding for x86_64 (DWARF CFI from
 * .eh_frame, frame-pointer fallback).
 *
 * The unwinder runs inside the CPU sampler's signal handler: it allocates
 * nothing, takes no locks and finds each code object's unwind tables with
 * glibc's _dl_find_object(), which is async-signal-safe (no loader lock).
 * Stack memory is only read inside the thread's known stack bounds, or through
 * process_vm_readv() (which fails cleanly instead of faulting) when the bounds
 * are unknown.
 */
#ifndef HS_AGENT_UNWIND_H
#define HS_AGENT_UNWIND_H

#include <stdint.h>
#include <ucontext.h>

/* Where the thread's stack lives; lo == hi == 0 means unknown. */
typedef struct {
    uintptr_t lo, hi;
} hs_stack_bounds;

/* Unwind the interrupted context uc. Writes at most max addresses to pcs,
 * leaf first: the leaf is the exact interrupted pc, every caller frame is
 * its return address minus one (a call-site address, what symbolizers
 * want), and a frame interrupted by a signal is its exact pc. Returns the
 * number of frames (>= 1 when uc has a pc). */
int hs_unwind_context(const ucontext_t *uc, const hs_stack_bounds *bounds, uint64_t *pcs, int max);

/* Unwind the calling thread from the caller of this function (for use
 * outside signal handlers, e.g. allocation hooks). skip drops that many
 * innermost frames. Same output convention. */
int hs_unwind_here(const hs_stack_bounds *bounds, uint64_t *pcs, int max, int skip);

/* A call site's registers, as the called function finds them at its entry:
 * pc its return address, sp the caller's stack pointer once it returns,
 * and the callee-saved registers (the caller's). */
typedef struct {
    uint64_t pc, sp, rbp, rbx, r12, r13, r14, r15;
} hs_call_regs;
/* Unwind from a call site (e.g. an allocation hook's caller, without
 * stepping through the hook's own frames). The first frame is the call
 * site (pc - 1); same output convention otherwise. */
int hs_unwind_call(const hs_call_regs *c, const hs_stack_bounds *bounds, uint64_t *pcs, int max);
/* Unwind another, stopped thread known only by its pc and stack pointer
 * (e.g. blocked in a system call): frames whose rules need other registers
 * end the stack early. Same output convention. */
int hs_unwind_from(uint64_t pc, uint64_t sp, const hs_stack_bounds *bounds, uint64_t *pcs, int max);

/* The initial (main) thread's stack, if the caller runs on it: the bounds
 * pthread_getattr_np gives, without the /proc/self/maps it reads for that
 * thread (~150 000 instructions, a fifth of a short process's start under
 * the agent). 0, or -1 (another thread's stack, no stack limit, or a layout
 * not understood: ask glibc). */
int hs_unwind_initial_stack(hs_stack_bounds *b);

/* Code is about to be unloaded (dlclose): drop cached unwind rules. */
void hs_unwind_forget_code(void);

#endif
