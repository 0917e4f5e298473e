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

leaks_vg_lost="3,000 bytes in 1 blocks" leaks_three_runs leak_dead_stack "1 blocks, 2.93 kB," \
    leak_dead_stack_lose leak_dead_stack_keep "both threads blocked" -- "$PROGS/leak_dead_stack"
pass "a block whose pointer is only in a thread's dead frames is lost; one in a live frame of a running thread is not"
