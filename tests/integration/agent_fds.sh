# agent_fds.sh — a program that closes every inherited fd (close_range(3,
# ~0), as daemons do) and reuses the numbers for a listening socket and a
# self-pipe: the agent must not spin on the closed fds, accept the program's
# connections or read its pipe (issue 13). Run with the control socket and a
# wall profile (the agent thread polls), and the control socket must work
# again afterwards (hotspur ctl status).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

HOTSPUR_OUTPUT="$TMP/f.pb.gz" HOTSPUR_WALL_HZ=100 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/fd_closer" >out.txt 2>err.txt &
pid=$!
bg_track "$pid"
# While it runs (about 1 s), ask the agent for its status.
sleep 0.5
"$HOTSPUR" ctl "$pid" status >status.txt 2>&1 || true
set +e
wait "$pid"
rc=$?
set -e
cat out.txt err.txt
[ "$rc" = 0 ] || fail "fd_closer exited $rc under the agent: $(cat out.txt err.txt)"
read -r served bytes cpu el < <(sed -n 's/^served=\([0-9]*\) bytes=\([0-9]*\) other_cpu_ms=\([0-9]*\) elapsed_ms=\([0-9]*\)$/\1 \2 \3 \4/p' out.txt)
[ "$served" = 20 ] || fail "only $served of 20 connections reached the program"
[ "$bytes" = 20 ] || fail "only $bytes of 20 pipe bytes reached the program"
# The agent thread at 100 Hz wall does a few /proc reads per tick: well
# under 20% of one core; a thread spinning on a closed fd takes ~100%.
ratio_ok "$cpu" "$el" 0 0.2 || fail "the agent's threads used ${cpu} ms of CPU in ${el} ms (spinning?)"
grep -q "^ok pid=$pid" status.txt || fail "hotspur ctl status got no answer after the fds were closed: $(cat status.txt)"
[ -s f.cpu.pb.gz ] || fail "no CPU profile written"
pass "20/20 connections and bytes, agent threads ${cpu} ms CPU in ${el} ms, ctl answers"
