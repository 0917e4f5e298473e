# services_threads.sh — the wall profile with hundreds of threads: 300
# threads wait 2 s each in idle_thread_wait. The agent visits a bounded
# number of threads per tick (HOTSPUR_WALL_THREADS), so its CPU cost must
# stay small (under 20% of one core, where visiting every thread at every
# tick would cost several times that) while the wall time of all threads is
# still counted: within 1% below and 5% above the sum of the threads'
# lifetimes as they measure them, at the waiting call site; and the same
# for 300 threads that live 20 ms each.
#
# Each sample counts for the time its thread lived since its previous
# sample, and a thread that ends adds the rest of its life to its last one,
# so the expected total is the true total: the agent's figure runs from the
# thread's registration (before its start routine's first line) to its end
# (after the last), so it may only be larger, by the scheduling delays
# there (5% is 100 ms per thread). Before (issue 13, this test failed now and
# then, more often under load) a tick credited threads x elapsed / visited
# at once, and the threads that ended between two ticks lost that time;
# a thread found running and asleep before its sample was taken lost it too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

n=300
"$PROGS/idlers" "$n" 2 >plain.out || fail "idlers failed"
"$HOTSPUR" record --wall -o th.pb.gz -- "$PROGS/idlers" "$n" 2 >prof.out 2>prof.err || fail "record failed: $(cat prof.err)"
line='s/^cpu_ms=\([0-9]*\) wall_ms=\([0-9]*\) thread_ms=\([0-9]*\)$/\1 \2 \3/p'
read -r cpu0 _ _ < <(sed -n "$line" plain.out)
read -r cpu1 wall1 threads1 < <(sed -n "$line" prof.out)
[ -n "${cpu0:-}" ] && [ -n "${cpu1:-}" ] || fail "idlers printed: $(cat plain.out prof.out)"
echo "process CPU: ${cpu0} ms without the agent, ${cpu1} ms with the wall profile at 100 Hz, over ${wall1} ms"
awk -v a="$cpu1" -v b="$cpu0" -v w="$wall1" 'BEGIN { exit !(a - b <= 0.2 * w) }' ||
    fail "the agent used $((cpu1 - cpu0)) ms of CPU in ${wall1} ms with $n threads"

idle=(--sample-index wall --tagfocus 'thread_name=^idle$')
all=$(total th.pb.gz "${idle[@]}")
at=$(through th.pb.gz idle_thread_wait "${idle[@]}")
echo "wall of the idle threads: ${all} ns, $(pct "$all" "${threads1}000000")% of their lifetimes' sum (${threads1} ms); $(pct "$at" "$all")% in idle_thread_wait"
ratio_ok "$all" "${threads1}000000" 0.99 1.05 || fail "the idle threads' wall time is ${all} ns, not 99-105% of ${threads1} ms"
ratio_ok "$at" "$all" 0.95 1 || fail "the idle threads' samples are not at idle_thread_wait"

# Short lives: 300 threads of 20 ms, about two ticks each, so most of each
# life is at its edges (a200564 lost 4-50% of it here).
"$HOTSPUR" record --wall -o short.pb.gz -- "$PROGS/idlers" "$n" 0.02 >short.out 2>short.err ||
    fail "record failed: $(cat short.err)"
read -r _ _ threads2 < <(sed -n "$line" short.out)
all2=$(total short.pb.gz "${idle[@]}")
echo "$n threads of 20 ms: ${all2} ns, $(pct "$all2" "${threads2}000000")% of their lifetimes' sum (${threads2} ms)"
# Under ASan the agent's span of a thread also holds ASan's own per-thread
# set-up and teardown (milliseconds each with 300 threads on 2 cores, 8-70%
# of a 20 ms life in our runs): there only the lower bound, the one the old
# accounting broke, is asserted.
hi=1.05
[ -n "$asan_rt" ] && hi=100
ratio_ok "$all2" "${threads2}000000" 0.99 "$hi" || fail "short threads: ${all2} ns, not 99-$(awk -v h="$hi" 'BEGIN { print h * 100 }')% of ${threads2} ms"
pass "$n threads: wall time counted, agent cost $((cpu1 - cpu0)) ms of CPU in ${wall1} ms"
