# services_threads.sh — the wall profile with hundreds of threads: 300
# threads wait 2 s each in idle_thread_wait. The agent visits a bounded
# number of threads per tick (HOTSPUR_WALL_THREADS), so its CPU cost must
# stay small (under 20% of one core, where visiting every thread at every
# tick would cost several times that) while the wall time of all threads is
# still estimated: 300 x 2 s within 25%, at the waiting call site.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

n=300
"$PROGS/idlers" "$n" 2 >plain.out || fail "idlers failed"
"$HOTSPUR" record --wall -o th.pb.gz -- "$PROGS/idlers" "$n" 2 >prof.out 2>prof.err || fail "record failed: $(cat prof.err)"
read -r cpu0 _ < <(sed -n 's/^cpu_ms=\([0-9]*\) wall_ms=\([0-9]*\)$/\1 \2/p' plain.out)
read -r cpu1 wall1 < <(sed -n 's/^cpu_ms=\([0-9]*\) wall_ms=\([0-9]*\)$/\1 \2/p' prof.out)
[ -n "${cpu0:-}" ] && [ -n "${cpu1:-}" ] || fail "idlers printed: $(cat plain.out prof.out)"
echo "process CPU: ${cpu0} ms without the agent, ${cpu1} ms with the wall profile at 100 Hz, over ${wall1} ms"
awk -v a="$cpu1" -v b="$cpu0" -v w="$wall1" 'BEGIN { exit !(a - b <= 0.2 * w) }' ||
    fail "the agent used $((cpu1 - cpu0)) ms of CPU in ${wall1} ms with $n threads"

idle=(--sample-index wall --tagfocus 'thread_name=^idle$')
all=$(total th.pb.gz "${idle[@]}")
at=$(through th.pb.gz idle_thread_wait "${idle[@]}")
echo "wall of the idle threads: ${all} ns ($n x 2 s = $((n * 2)) s), $(pct "$at" "$all")% in idle_thread_wait"
ratio_ok "$all" "$((n * 2))000000000" 0.75 1.25 || fail "the idle threads' wall time is ${all} ns, not about $((n * 2)) s"
ratio_ok "$at" "$all" 0.95 1 || fail "the idle threads' samples are not at idle_thread_wait"
pass "$n threads: wall time estimated, agent cost $((cpu1 - cpu0)) ms of CPU in ${wall1} ms"
