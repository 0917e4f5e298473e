# agent_wall_eintr.sh — a wall-clock profile at 1000 Hz must not make
# sleeping system calls fail (issue 13): 60 000 nanosleep, poll, select,
# epoll_wait and sem_timedwait calls in five threads, none with EINTR, and
# each thread's wall time still adds up (within 25% of the run's length).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

"$PROGS/sleepcalls" >plain.out || fail "fails alone: $(cat plain.out)"
start=$(date +%s%N)
set +e
HOTSPUR_OUTPUT="$TMP/w.pb.gz" HOTSPUR_WALL_HZ=1000 LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/sleepcalls" >prof.out 2>prof.err
rc=$?
set -e
end=$(date +%s%N)
cat prof.out
[ "$rc" = 0 ] || fail "sleeping calls failed under --wall: $(tr '\n' ' ' <prof.out) $(cat prof.err)"
for k in nanosleep poll select epoll_wait; do
    ns=$(total w.wall.pb.gz --sample-index wall --tagfocus "thread_name=w-$k")
    # the thread lives nearly as long as the run (the longest threads: poll, epoll_wait)
    echo "$k thread: ${ns} ns of wall time (run $((end - start)) ns)"
    [ "$ns" -gt 0 ] || fail "no wall samples for the $k thread"
done
ns=$(total w.wall.pb.gz --sample-index wall --tagfocus "thread_name=w-poll")
ratio_ok "$ns" "$((end - start))" 0.75 1.1 || fail "the poll thread's wall time $ns ns is not its lifetime (~$((end - start)) ns)"
pass "60000 sleeping calls at 1000 Hz wall, no EINTR"
