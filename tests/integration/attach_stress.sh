# attach_stress.sh — an attach in the middle of a hostile host (issue 32):
# `stress` (waves of threads, some blocking every signal, forks, an exec, its
# own SIGPROF timer, a SIGUSR1 storm, every real-time signal grabbed) started
# without the agent gets `attach --exact --lock` while it runs, a detach, a
# sampled attach and a detach again. Its output and exit status equal a plain
# run's, the profiles are valid and the heap one has the allocations made
# while attached. Under an ASan build (ASan's runtime owns malloc there: a
# heap attach is refused) both attaches are --lock: the sanitized hotspur
# injects, starts and stops the agent in the same hostile host.
source "$(dirname "$0")/lib.sh"
first=(--exact --lock) second=()
files="st.heap.pb.gz st.heap.peak.pb.gz st.lock.pb.gz st2.pb.gz"
if [ -n "$asan_rt" ]; then first=(--lock) second=(--lock) files="st.pb.gz st2.pb.gz"; fi

"$PROGS/stress" 120 16 >plain.out
"$PROGS/stress" 120 16 >att.out 2>att.err &
spid=$!
trap 'kill -9 "$spid" 2>/dev/null || true' EXIT
sleep 0.4
"$HOTSPUR" attach "$spid" "${first[@]}" -o "$TMP/st.pb.gz" >a1.out 2>&1 || fail "attach failed: $(cat a1.out)"
sleep 0.6
"$HOTSPUR" attach "$spid" --detach >d1.out 2>&1 || fail "detach failed: $(cat d1.out)"
"$HOTSPUR" attach "$spid" "${second[@]}" -o "$TMP/st2.pb.gz" >a2.out 2>&1 || fail "attach again failed: $(cat a2.out)"
sleep 0.3
"$HOTSPUR" attach "$spid" --detach >d2.out 2>&1 || fail "detach again failed: $(cat d2.out)"
cat a1.out d1.out a2.out d2.out
wait "$spid" || fail "stress exited $? after the attaches: $(cat att.err)"
cmp -s plain.out att.out || fail "output differs: $(cat plain.out) vs $(cat att.out)"
for f in $files; do
    "$HOTSPUR" top "$f" >/dev/null 2>&1 || fail "$f is missing or not a valid profile: $(ls)"
done
if [ -n "$asan_rt" ]; then
    pass "stress with two --lock attaches in the middle (ASan build): output and status as a plain run"
    exit 0
fi
bytes=$("$HOTSPUR" convert --to collapsed --sample-index alloc_space st.heap.pb.gz | awk '{ s += $NF } END { print s + 0 }')
[ "$bytes" -gt 0 ] || fail "no allocation in the exact heap profile of the attach"
pass "stress with attaches in the middle: output and status as a plain run, $bytes bytes allocated while attached"
