# continuous_down.sh — the collector is unreachable, then comes up; or it
# accepts connections and never answers. The program runs unharmed and on
# time (phases computes for a fixed wall time), its exit waits at most the
# 2 s flush, failures are reported once, the bounded queue drops the oldest
# profiles and counts them, and once the collector is up later windows
# arrive.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

# ---- nothing listening for 4 s, then a collector on that port ----
port=$(free_port)
t0=$(now)
HOTSPUR_SERVER=http://127.0.0.1:$port HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_UPLOAD_QUEUE=2 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 7000 0 >out 2>err &
prog=$!
sleep 3.5
# While it fails, `hotspur ctl` shows the counters.
"$HOTSPUR" ctl "$prog" status >status 2>&1 || fail "ctl status: $(cat status)"
cat status
grep -q ' queued=[1-9]' status && grep -q ' failures=[1-9]' status && grep -q ' uploaded=0 ' status ||
    fail "ctl status does not show the failing uploads: $(cat status)"
sleep 0.5
fake_start "$port"
wait "$prog" || fail "phases failed: $(cat err)"
t1=$(now)
cat err
[ "$(cat out)" = done ] || fail "program output: $(cat out)"
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "7 s of work took ${el} s"
awk -v e="$el" 'BEGIN { exit !(e >= 6.9 && e <= 9.5) }' || fail "7 s of work took ${el} s"
[ "$(grep -c 'cannot upload to' err)" = 1 ] || fail "the failure is not reported exactly once"
grep -q 'connect: Connection refused' err || fail "no 'connection refused' in: $(cat err)"
grep -q 'work again' err || fail "the recovery is not reported"
sent=$(sed -n 's/.*: \([0-9]*\) sent, .*/\1/p' err)
dropped=$(sed -n 's/.* \([0-9]*\) dropped (queue full).*/\1/p' err)
[ -n "$dropped" ] && [ "$dropped" -ge 1 ] || fail "no profile counted as dropped with a queue of 2 and 4 s down"
sleep 0.3
fake_summary >sum
cat sum
got=$(wc -l <sum)
[ "$got" = "$sent" ] || fail "the agent says $sent sent, the collector got $got"
[ "$(cut -f7 sum | sort -u | wc -l)" = "$got" ] || fail "a profile was stored twice"
# Windows that started once the collector was up arrived.
late=$(awk -F'\t' -v t0="$t0" '$13 / 1e9 - t0 >= 4.2' sum | wc -l)
[ "$late" -ge 2 ] || fail "$late windows from after the collector came up arrived"
fake_stop

# ---- a collector that never answers: each request times out ----
fake_start
fake_mode hang
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_UPLOAD_TIMEOUT=1s \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 5000 0 >out 2>err || fail "phases failed: $(cat err)"
t1=$(now)
cat err
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "5 s of work took ${el} s"
# 5 s, plus at most the 2 s flush at exit (+ margin for a loaded machine).
awk -v e="$el" 'BEGIN { exit !(e >= 4.9 && e <= 7.8) }' || fail "5 s of work took ${el} s"
grep -q 'no answer in time' err || fail "the timeout is not reported: $(cat err)"
unsent=$(sed -n 's/.* \([0-9]*\) not sent at exit.*/\1/p' err)
[ -n "$unsent" ] && [ "$unsent" -ge 1 ] || fail "no profile counted as not sent"
attempts=$(ls "$FAKE_DIR"/req.*.json 2>/dev/null | wc -l)
echo "$attempts requests reached the silent collector"
[ "$attempts" -ge 2 ] || fail "$attempts requests in 5 s with a 1 s timeout: no retry after a timeout"

# The default timeout (10 s) is longer than the run: the exit still waits
# at most the flush bound.
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 2000 0 >out 2>err || fail "phases failed: $(cat err)"
t1=$(now)
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "2 s of work with a request hanging at exit took ${el} s"
awk -v e="$el" 'BEGIN { exit !(e >= 1.9 && e <= 4.8) }' || fail "2 s of work took ${el} s"
pass "down then up: on time, $dropped dropped, $late late windows arrived; silent collector: exit bounded"
