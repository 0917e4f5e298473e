#!/usr/bin/env bash
# heap_leaks_threads.sh — `record --leaks` scans each other thread's stack
# from its stack pointer up, as valgrind does (issue 30): in
# leak_dead_stack (-O0), a thread leaks 3000 bytes whose pointer survives
# only in its dead frames, below where it then blocks; another thread holds
# 4000 bytes in its live frame. Both still run when main returns. The 3000
# bytes are lost (scanning the whole stack found the stale copies and
# called them reachable); the 4000 are not, in each of 3 runs; valgrind
# agrees.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

for run in 1 2 3; do
    "$HOTSPUR" record --leaks -o "l$run.pb.gz" -- "$PROGS/leak_dead_stack" >out 2>err ||
        fail "record: $(cat err)"
    grep -q "both threads blocked" out || fail "the program's output is missing: $(cat out)"
    line=$(grep '^hotspur: leaks:' err || true)
    [[ $line == "hotspur: leaks: 1 blocks, 2.93 kB,"* ]] ||
        { cat err; fail "run $run: '$line', want 1 block of 3000 bytes (the one lost in a dead frame)"; }
    "$HOTSPUR" top --sample-index inuse_space "l$run.leaks.pb.gz" >top.txt 2>&1
    grep -q leak_dead_stack_lose top.txt || fail "the lost block's site is not in the leaks profile: $(cat top.txt)"
    grep -q leak_dead_stack_keep top.txt && fail "the block a live frame holds is reported: $(cat top.txt)"
done
if command -v valgrind >/dev/null; then
    valgrind --leak-check=full "$PROGS/leak_dead_stack" 2>vg.txt >/dev/null || true
    grep -q "definitely lost: 3,000 bytes in 1 blocks" vg.txt || fail "valgrind disagrees: $(grep -E 'lost|reachable' vg.txt)"
fi
pass "a block whose pointer is only in a thread's dead frames is lost; one in a live frame of a running thread is not"
