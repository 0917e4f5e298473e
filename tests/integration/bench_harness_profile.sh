#!/usr/bin/env bash
# bench_harness_profile: --profile cpu|heap writes a hotspur profile of the
# measured loop only: `hotspur top` on it shows the loop's function and not
# the setup's, which burns ~60 ms of CPU and allocates 1 MiB before the loop.
source "$(dirname "$0")/lib.sh"

HOTSPUR_LIB=$HOTSPUR_LIB "$PROGS/bench_harness_cases" --filter '^profiled$' --forks 1 --warmup 0 \
    --iterations 1 --time 20ms --profile cpu --profile-time 0.5s --profile-out p >table.txt 2>err.txt ||
    { cat table.txt err.txt >&2; fail "the profiled run failed"; }
grep -q 'Profile of profiled: p.profiled.cpu.pb.gz' table.txt || fail "the table does not name the profile"
[ -s p.profiled.cpu.pb.gz ] || fail "no CPU profile written"
ls hotspur.*.pb.gz 2>/dev/null && fail "the agent wrote a profile of its own at exit"
"$HOTSPUR" top p.profiled.cpu.pb.gz >top.txt || fail "hotspur top cannot read the profile"
cat top.txt
grep -Eq 'madd_chain|loop_work' top.txt || fail "the loop's functions are not in the CPU profile"
if grep -q setup_burn top.txt; then fail "the setup is in the CPU profile"; fi
"$HOTSPUR" flame -o flame.html p.profiled.cpu.pb.gz >/dev/null || fail "hotspur flame cannot read the profile"

needs_malloc_interposition
"$PROGS/bench_harness_cases" --filter '^profiled$' --forks 1 --warmup 0 --iterations 1 --time 20ms \
    --profile heap --profile-time 0.3s --profile-out p >/dev/null 2>err.txt || { cat err.txt >&2; fail "heap run failed"; }
"$HOTSPUR" top --sample-index alloc_space --cum p.profiled.heap.pb.gz >heap.txt || fail "hotspur top cannot read the heap profile"
cat heap.txt
grep -q loop_work heap.txt || fail "the loop's allocations are not in the heap profile"
if grep -q setup_alloc heap.txt; then fail "the setup's allocation is in the heap profile"; fi
pass "--profile cpu and heap hold the measured loop and not the setup"
