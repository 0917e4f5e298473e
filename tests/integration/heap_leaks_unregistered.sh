#!/usr/bin/env bash
# heap_leaks_unregistered.sh — `record --leaks` stops and scans the threads
# the agent did not see start (issue 30): in leak_timer_thread, a
# SIGEV_THREAD timer's function runs on a thread the C library starts
# itself, holds 3000 bytes in its live frame and blocks; main loses 1000
# bytes and exits. Lost: the 1000 bytes only, in each of 3 runs (the scan
# did not know that thread: its stack was no root, and the 3000 bytes were
# reported too); valgrind agrees.
#
# `spin`: the timer's thread blocks every signal with a raw system call and
# spins in user space: it neither stops in the agent's handler nor blocks
# in the kernel (/proc/self/task/TID/syscall: "running"). A tracer process
# holds it (ptrace) and gives its registers: same answer (before: its
# stack unknown, not scanned, 2 blocks, 4000 bytes).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

leaks_vg_lost="1,000 bytes in 1 blocks" leaks_three_runs block "1 blocks, 1000 B," \
    leak_timer_thread_lose leak_timer_thread_hold "timer thread blocked" -- "$PROGS/leak_timer_thread" block
leaks_vg_lost="1,000 bytes in 1 blocks" leaks_three_runs spin "1 blocks, 1000 B," \
    leak_timer_thread_lose leak_timer_thread_hold "timer thread spinning" -- "$PROGS/leak_timer_thread" spin
pass "a block held by a thread the C library started (not through the interposed pthread_create) is not a leak, whether that thread blocks or spins with every signal blocked"
