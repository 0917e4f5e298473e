# continuous_delta.sh — each upload is a delta: a program computes 4 s in
# phase_a, then 4 s in phase_b; with 1 s windows every 2 s, a window that
# ends before the switch holds (nearly) only phase_a, one that starts after
# it only phase_b, and each holds at most about 1 s of CPU (not everything
# since the start). Between windows the CPU sampler does not record.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=2s HOTSPUR_DURATION=1s HOTSPUR_STATS=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 4000 4000 >out 2>err || fail "phases failed: $(cat err)"
sleep 0.3
fake_summary | awk -F'\t' '$4 == "cpu"' >cpu
cat cpu
[ "$(wc -l <cpu)" -ge 4 ] || fail "$(wc -l <cpu) cpu windows in 8 s with 2 s periods"
a_windows=0 b_windows=0
while IFS=$'\t' read -r k _ _ _ _ _ _ _ _ _ _ _ start dur _; do
    f="$FAKE_DIR/req.$k.body"
    all=$(total "$f")
    a=$(through "$f" phase_a)
    b=$(through "$f" phase_b)
    from=$(awk -v s="$start" -v t0="$t0" 'BEGIN { printf "%.2f", s / 1e9 - t0 }')
    to=$(awk -v s="$start" -v d="$dur" -v t0="$t0" 'BEGIN { printf "%.2f", (s + d) / 1e9 - t0 }')
    echo "window ${from}..${to} s: ${all} ns CPU, phase_a ${a}, phase_b ${b}"
    if [ "$(awk -v d="$dur" 'BEGIN { print (d >= 0.95e9) }')" = 1 ]; then
        # A full 1 s window of one busy thread: some CPU, at most about
        # 1 s (how much less depends on the machine's load: the program
        # burns wall time), never what accumulated since the start.
        awk -v c="$all" 'BEGIN { exit !(c > 0 && c <= 1.3e9) }' || fail "window at ${from} s: ${all} ns of CPU, want some, <= ~1 s"
    fi
    if awk -v t="$to" 'BEGIN { exit !(t <= 3.95) }'; then
        awk -v a="$a" -v c="$all" 'BEGIN { exit !(a >= 0.9 * c) }' || fail "window ${from}..${to} s: phase_a is ${a} of ${all}"
        a_windows=$((a_windows + 1))
    elif awk -v f="$from" 'BEGIN { exit !(f >= 4.15) }'; then
        awk -v b="$b" -v c="$all" 'BEGIN { exit !(b >= 0.9 * c) }' || fail "window ${from}..${to} s: phase_b is ${b} of ${all}"
        b_windows=$((b_windows + 1))
    fi
done <cpu
[ "$a_windows" -ge 1 ] && [ "$b_windows" -ge 1 ] || fail "$a_windows phase_a and $b_windows phase_b windows checked"
# The CPU sampler records only inside windows: the samples it took
# (HOTSPUR_STATS) are the ones uploaded, not twice as many (1 s of 2).
taken=$(sed -n 's/^hotspur: \([0-9]*\) samples, .*/\1/p' err)
uploaded=$(while IFS=$'\t' read -r k _; do total "$FAKE_DIR/req.$k.body"; done <cpu | awk '{ s += $1 } END { print int(s / 1e7) }')
echo "samples taken $taken, uploaded $uploaded"
[ -n "$taken" ] && awk -v t="$taken" -v u="$uploaded" 'BEGIN { exit !(t <= 1.15 * u + 10) }' ||
    fail "$taken CPU samples taken, $uploaded uploaded: sampling outside the windows"
pass "$a_windows windows of phase_a, then $b_windows of phase_b, each at most ~1 s"
