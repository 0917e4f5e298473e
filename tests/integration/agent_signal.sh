# agent_signal.sh — a program that uses the agent's default signal
# (SIGRTMAX-3) keeps it (issue 13): blocked and taken with sigtimedwait, it
# receives all 100 it sends itself and none of the agent's timer signals;
# with its own handler, the handler sees the same; and the agent, on
# another real-time signal, still samples the program's busy threads.
source "$(dirname "$0")/lib.sh"

for mode in wait handler; do
    set +e
    timeout 60 env HOTSPUR_OUTPUT="$TMP/$mode.pb.gz" HOTSPUR_CPU_HZ=1000 LD_PRELOAD="$AGENT_PRELOAD" \
        "$PROGS/sigwaiter" "$mode" >"$mode.out" 2>"$mode.err"
    rc=$?
    set -e
    cat "$mode.out" "$mode.err"
    [ "$rc" = 0 ] || fail "$mode: sigwaiter exited $rc under the agent: $(cat "$mode.out" "$mode.err")"
    samples=$("$HOTSPUR" convert --to collapsed "$mode.pb.gz" | awk '/busy_work/ { s += $NF } END { printf "%.0f\n", s }')
    # two busy threads for >= 0.2 s at 1000 Hz: hundreds of milliseconds
    [ "$samples" -gt 100000000 ] || fail "$mode: the agent stopped sampling (busy_work has $samples ns)"
    echo "$mode: $(cat "$mode.out"), busy_work ${samples} ns sampled"
done
pass "the program's SIGRTMAX-3 is its own, and the agent still samples"
