# live_pid_reuse.sh — `record -p` of a process whose child exits and whose
# next child gets the same pid (clone3 with set_tid): the second child's
# samples are another process's, never charged to the first one's name or
# files. The two children are non-PIE twins (live_twin_a/b: twin_spin_a and
# twin_spin_b at the same address), the first pinned to CPU 1, the second to
# CPU 0, and the recorder is stopped (SIGSTOP) while they run, so that it
# takes in both from the two CPUs' ring buffers at once: taken in ring after
# ring (not in time order), the second child's samples came before the
# first one's exit and were charged to it.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (perf events, clone3 with set_tid)"
[ "$(nproc)" -ge 2 ] || fail "needs 2 CPUs (one child pinned to each)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
unset LD_PRELOAD
A_NAME=twa$$
B_NAME=twb$$
cp "$PROGS/live_twin_a" "$A_NAME"
cp "$PROGS/live_twin_b" "$B_NAME"
"$PROGS/live_respawn" "./$A_NAME" "./$B_NAME" 1 >spawn.out & S=$!
PIDS+=($S)
for ((i = 0; i < 100; i++)); do grep -q ready spawn.out 2>/dev/null && break; sleep 0.05; done
"$HOTSPUR" record -p "$S" -F 49 --stack-size 4096 --duration 30 -o r.pb.gz 2>rec.err & REC=$!
PIDS+=($REC)
# recording: its perf events open and the recorder waiting in poll()
rec_on=0
for ((i = 0; i < 300; i++)); do
    if [ "$(ls -l /proc/$REC/fd 2>/dev/null | grep -c perf_event)" -gt 0 ] && grep -q poll /proc/$REC/wchan; then
        rec_on=1
        break
    fi
    sleep 0.05
done
[ $rec_on = 1 ] || fail "record -p did not start recording in 15 s: $(cat rec.err)"
kill -STOP $REC
kill -USR1 $S
wait $S || fail "live_respawn failed: $(cat spawn.out)"
kill -CONT $REC
wait $REC || fail "record -p: $(cat rec.err)"
cat rec.err
a=$(awk '$1 == "A" { print $2 }' spawn.out)
b=$(awk '$1 == "B" { print $2 }' spawn.out)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "the second child did not get the first one's pid: $(cat spawn.out)"
for who in A B; do
    if [ $who = A ]; then name=$A_NAME own=twin_spin_a other=twin_spin_b; else name=$B_NAME own=twin_spin_b other=twin_spin_a; fi
    "$HOTSPUR" top --tagfocus "process=$name" r.pb.gz >top.$who 2>&1 || fail "top $who: $(cat top.$who)"
    # cum % of its own function over the share of the whole its samples hold
    n=$(awk -v f=$own '/^Showing nodes accounting for/ { t = $(NF - 3); sub("%,?", "", t) }
                       $6 == f { c = $5; sub("%", "", c) } END { if (t > 0) printf "%.1f", 100 * c / t }' top.$who)
    echo "child $who (pid $a, $name): $own ${n:-0}% of its samples"
    awk -v n="${n:-0}" 'BEGIN { exit !(n >= 90) }' || fail "child $who's samples not under $own: $(head -20 top.$who)"
    if grep -q " $other\$" top.$who; then fail "child $who's samples named $other, from the other child's file: $(cat top.$who)"; fi
done
pass "a pid reused by the next child under record -p: each child's samples under its own name and file"
