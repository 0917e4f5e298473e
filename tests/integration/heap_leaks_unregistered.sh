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

for mode in block spin; do
    for run in 1 2 3; do
        "$HOTSPUR" record --leaks -o "l$run.pb.gz" -- "$PROGS/leak_timer_thread" "$mode" >out 2>err ||
            fail "record ($mode): $(cat err)"
        want="timer thread blocked"
        [ "$mode" = block ] || want="timer thread spinning"
        grep -q "$want" out || fail "the program's output is missing: $(cat out)"
        line=$(grep '^hotspur: leaks:' err || true)
        [[ $line == "hotspur: leaks: 1 blocks, 1000 B,"* ]] ||
            { cat err; fail "$mode, run $run: '$line', want 1 block of 1000 bytes (main's)"; }
        "$HOTSPUR" top --sample-index inuse_space "l$run.leaks.pb.gz" >top.txt 2>&1
        grep -q leak_timer_thread_lose top.txt || fail "$mode: the lost block's site is not in the leaks profile: $(cat top.txt)"
        grep -q leak_timer_thread_hold top.txt && fail "$mode: the block the timer's thread holds is reported: $(cat top.txt)"
    done
    if command -v valgrind >/dev/null; then
        valgrind --leak-check=full "$PROGS/leak_timer_thread" "$mode" 2>vg.txt >/dev/null || true
        grep -q "definitely lost: 1,000 bytes in 1 blocks" vg.txt || fail "$mode: valgrind disagrees: $(grep -E 'lost|reachable' vg.txt)"
    fi
done
pass "a block held by a thread the C library started (not through the interposed pthread_create) is not a leak, whether that thread blocks or spins with every signal blocked"
