# agent_hide_frames.sh — the agent's own frames (its malloc/free wrappers and
# heap bookkeeping) never appear in the program's CPU stacks (issue 13): the
# time they take is shown at the program's caller.
source "$(dirname "$0")/lib.sh"
needs_malloc_interposition

HOTSPUR_OUTPUT="$TMP/h.pb.gz" HOTSPUR_HEAP=1 HOTSPUR_CPU_HZ=1000 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/heap_stress" 2 400000 4 0 >out.txt 2>err.txt || fail "heap_stress failed: $(cat err.txt)"
"$HOTSPUR" traces h.cpu.pb.gz >/dev/null || fail "no CPU profile"
n=$("$HOTSPUR" top --addresses -n 100000 --nodefraction 0 h.cpu.pb.gz | grep -c 'src/agent/\|libhotspur' || true)
"$HOTSPUR" top --addresses -n 100000 --nodefraction 0 h.cpu.pb.gz | grep 'src/agent/\|libhotspur' | head -5 || true
[ "$n" = 0 ] || fail "$n of the agent's frames are in the CPU profile"
pass "no agent frames in the CPU profile of a malloc-heavy program"
