# services_signals.sh — the program's own signals are undisturbed by the
# agent (CPU, wall at 1000 Hz and lock profiles, control socket, two dumps):
# the daemon's SIGUSR1 handler sees every signal sent, its sleeper thread's
# sleep(1) calls never return early (a wall sampler that signalled waiting
# threads would cut them short), SIGTERM still ends it normally, and the
# sleeping thread is still in the wall profile, at its sleep.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

echo 1 >phase
HOTSPUR_OUTPUT="$TMP/s.pb.gz" HOTSPUR_WALL_HZ=1000 HOTSPUR_LOCK=1 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/daemon" "$TMP/phase" >daemon.out 2>daemon.err &
pid=$!
bg_track "$pid"
wait_until 10 test -S "$HOTSPUR_RUNTIME_DIR/$pid.sock" || fail "no control socket: $(cat daemon.err)"
wait_until 10 grep -q ready daemon.out || fail "daemon did not start"
sent=0
for i in 1 2 3 4 5 6; do
    sleep 0.4
    kill -USR1 "$pid"
    sent=$((sent + 1))
    [ "$i" = 2 ] && { "$HOTSPUR" ctl "$pid" dump >dump1.txt || fail "dump 1 failed"; }
    [ "$i" = 4 ] && { echo 0 >phase; "$HOTSPUR" ctl "$pid" dump >dump2.txt || fail "dump 2 failed"; }
done
sleep 1.5
kill -TERM "$pid"
wait "$pid" || fail "daemon exited with $? after SIGTERM"
cat daemon.out
read -r usr1 sleeps early min_ms < <(sed -n 's/^usr1=\([0-9]*\) sleeps=\([0-9]*\) early=\([0-9]*\) min_sleep_ms=\([0-9.]*\)$/\1 \2 \3 \4/p' daemon.out)
[ -n "${usr1:-}" ] || fail "daemon printed no summary: $(cat daemon.out daemon.err)"
[ "$usr1" = "$sent" ] || fail "the SIGUSR1 handler ran $usr1 times for $sent signals"
[ "$sleeps" -ge 3 ] || fail "only $sleeps sleep(1) calls completed in ~4 s"
[ "$early" = 0 ] || fail "$early of $sleeps sleep(1) calls returned early (shortest ${min_ms} ms)"

# The waiting thread was sampled all along without being woken: its wall
# samples are in sleep.
for f in $(dump_files dump1.txt) $(dump_files dump2.txt); do
    [ -s "$f" ] || fail "dump file $f missing"
done
wallf=$(dump_files dump1.txt | grep wall) || fail "no wall file in dump 1: $(cat dump1.txt)"
ws=$(total "$wallf" --sample-index wall --tagfocus thread_name=sleeper)
# (glibc's sleep is __sleep; the symbolizer may name either alias)
wsleep=$(( $(through "$wallf" sleep --sample-index wall --tagfocus thread_name=sleeper) +
    $(through "$wallf" __sleep --sample-index wall --tagfocus thread_name=sleeper) ))
echo "dump 1: sleeper thread ${ws} ns of wall time, ${wsleep} ns in sleep"
[ "$ws" -gt 0 ] || fail "the sleeping thread has no wall samples"
ratio_ok "$wsleep" "$ws" 0.95 1 || fail "the sleeping thread's samples are not in sleep"
pass "SIGUSR1 x$sent handled, $sleeps sleep(1) calls none early (shortest ${min_ms} ms), SIGTERM ok"
