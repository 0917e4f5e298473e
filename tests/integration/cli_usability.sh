#!/usr/bin/env bash
# cli_usability.sh — rough edges a new user met (issue 30): `ctl PID dump`
# prints absolute paths even when the daemon changed its directory;
# `record -o` into a missing directory fails before the program runs;
# `peek` with no match prints only the error; `diff` of profiles with
# different sample types names them and suggests --sample-index, which
# then works when both have the type.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

# ---- ctl dump from a daemon that moved to / ----
LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cd_burn" 6000 >/dev/null 2>burn.err &
pid=$!
bg_track "$pid"
wait_until 10 test -S "$HOTSPUR_RUNTIME_DIR/$pid.sock" || fail "no control socket"
sleep 1
"$HOTSPUR" ctl "$pid" dump >dump.txt 2>dump.err || fail "ctl dump: $(cat dump.err)"
cat dump.txt
f=$(sed -n 's/^file //p' dump.txt | head -n 1)
case $f in /*) ;; *) fail "ctl dump printed a relative path: $(cat dump.txt)" ;; esac
[ -s "$f" ] || fail "$f does not exist"
rm -f "$f"
kill "$pid" 2>/dev/null || true
pass "ctl dump of a daemon that changed directory prints $f"

# ---- record -o into a missing directory: at once, program not run ----
t0=$(date +%s%N)
rc=0
"$HOTSPUR" record -o /nonexistent/dir/x.pb.gz -- sh -c 'touch ran; sleep 5' 2>rec.err || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
cat rec.err
[ "$rc" = 2 ] || fail "record -o /nonexistent/...: exit $rc"
[ ! -e ran ] || fail "the program ran anyway"
[ "$ms" -lt 2000 ] || fail "took $ms ms"
grep -q "/nonexistent/dir: no such directory" rec.err || fail "no cause given: $(cat rec.err)"
mkdir -p adir
rc=0
"$HOTSPUR" record -o adir -- true 2>rec2.err || rc=$?
[ "$rc" = 2 ] && grep -q "is a directory" rec2.err || fail "record -o DIR: exit $rc $(cat rec2.err)"
pass "record -o into a missing directory: exit 2 at once, with the cause, program not run"

# ---- peek with no match ----
"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o f.pb.gz
rc=0
"$HOTSPUR" peek 'no_such_fn_xyz' f.pb.gz >peek.out 2>peek.err || rc=$?
[ "$rc" != 0 ] || fail "peek with no match exited 0"
[ ! -s peek.out ] || fail "peek with no match printed to stdout: $(cat peek.out)"
grep -q "no matches found" peek.err || fail "peek: $(cat peek.err)"
pass "peek with no match: only the error, exit $rc"

# ---- diff of different sample types ----
"$HOTSPUR" convert "$SRC/tests/data/perf-script-busy.txt" --to pprof -o ps.pb.gz
rc=0
"$HOTSPUR" diff f.pb.gz ps.pb.gz >diff.out 2>diff.err || rc=$?
cat diff.err
[ "$rc" != 0 ] || fail "diff of different types exited 0"
grep -q "(samples/count)" diff.err && grep -q "(samples/count, cpu-clock/nanoseconds)" diff.err ||
    fail "the types are not named: $(cat diff.err)"
grep -q -- "--sample-index" diff.err || fail "no hint: $(cat diff.err)"
"$HOTSPUR" diff --sample-index samples f.pb.gz ps.pb.gz >diff2.out 2>diff2.err ||
    fail "diff --sample-index samples: $(cat diff2.err)"
grep -q "compute" diff2.out || fail "diff --sample-index: $(cat diff2.out)"
pass "diff of different sample types names them; --sample-index samples compares what both have"
