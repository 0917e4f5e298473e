#!/usr/bin/env bash
# continuous_first.sh — the first window comes early (issue 28): with the
# default schedule (a 10 s window per 60 s period) the first window opens
# when the program starts, not up to 50 s in, so
#  - a 3 s program (README's quick start: "run ./myprog for a few seconds")
#    uploads one profile from its start to its exit, with its CPU (before,
#    the window opened at a random point of [0, 50 s]: 47 runs of 50 on
#    average uploaded nothing and the query answered 404);
#  - a 14 s program's first profile arrives about 10 s after start, while it
#    runs.
# Later windows keep one per period at a random point (continuous_upload.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_SERVICE=first LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 1500 1500 >out 2>err ||
    fail "phases failed: $(cat err)"
t1=$(now)
sleep 0.3 # the recorder may still be writing
fake_summary >short.sum
cat short.sum
[ "$(wc -l <short.sum)" = 1 ] || fail "a 3 s run uploaded $(wc -l <short.sum) profiles, want 1"
f=$(ls "$FAKE_DIR"/req.1.body)
cpu=$(total "$f")
python3 - "$t0" "$t1" "$cpu" short.sum <<'PY' || fail "the short run's window (above)"
import sys
t0, t1, cpu = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
f = open(sys.argv[4]).read().split("\t")
start, dur = int(f[12]) / 1e9, int(f[13]) / 1e9
print(f"window from {start - t0:+.2f} s after start, {dur:.2f} s long, {cpu / 1e9:.2f} s of CPU; the run took {t1 - t0:.2f} s")
assert start - t0 < 1.0, "the window opened late"
# the run's whole length; its CPU is what a loaded box gave it (1.3-3 s seen)
assert dur > 0.8 * (t1 - t0) - 0.3 and cpu > 0.3e9, "the window does not hold the run"
PY

fake_start
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_SERVICE=first LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/sleeper" 14000 >out 2>err ||
    fail "sleeper failed: $(cat err)"
t1=$(now)
sleep 0.3
fake_summary >long.sum
cat long.sum
python3 - "$t0" "$t1" long.sum <<'PY' || fail "the first upload of a 14 s run (above)"
import sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
rows = [l.split("\t") for l in open(sys.argv[3]) if l.strip()]
assert rows, "nothing uploaded"
got, start = float(rows[0][11]), int(rows[0][12]) / 1e9
print(f"first upload received {got - t0:.2f} s after start (window from {start - t0:+.2f} s); the run took {t1 - t0:.2f} s")
assert start - t0 < 1.0, "the first window opened late"
assert got < t1 - 0.5, "the first profile arrived only at exit"
PY
pass "the first window opens at start: a 3 s run uploads its 3 s, a 14 s run's first profile arrives while it runs"
