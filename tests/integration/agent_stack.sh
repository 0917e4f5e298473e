# agent_stack.sh — a program with about 4 KiB of stack left works alone and
# under the agent (issue 13): the sampling handler runs on an alternate
# signal stack of the agent's, so a thread at the edge of its stack (main
# thread at RLIMIT_STACK, or a thread with a 64 KiB stack) is sampled
# without overflowing it.
source "$(dirname "$0")/lib.sh"
ulimit -s 8192
for mode in main thread; do
    "$PROGS/stack_edge" "$mode" >"plain.$mode" 2>&1 || fail "$mode: fails without the agent: $(cat "plain.$mode")"
    set +e
    HOTSPUR_OUTPUT="$TMP/$mode.pb.gz" HOTSPUR_CPU_HZ=1000 LD_PRELOAD="$AGENT_PRELOAD" \
        "$PROGS/stack_edge" "$mode" >"prof.$mode" 2>&1
    rc=$?
    set -e
    [ "$rc" = 0 ] || fail "$mode: exit status $rc under the agent (plain: $(cat "plain.$mode"))"
    grep -q ok "prof.$mode" || fail "$mode: no result under the agent"
    n=$("$HOTSPUR" convert --to collapsed "$mode.pb.gz" | awk '/bottom_work/ { s += $NF } END { printf "%.0f\n", s }')
    # 300 ms of CPU at the bottom at 1000 Hz
    [ "$n" -ge 150000000 ] || fail "$mode: only $n ns sampled in bottom_work"
    echo "$mode: $(cat "plain.$mode") alone; under the agent $(cat "prof.$mode"), bottom_work $n ns"
done
pass "4 KiB of stack left is enough under the agent"
