# record_signals.sh — a program ended by SIGINT or SIGTERM that it leaves to
# the default action still gets its profile (the agent writes it, then the
# signal ends the process as it would have: record exits 128+N); a program
# with its own SIGINT handler keeps it; a child that is not followed and is
# killed never makes its parent write or die.
source "$(dirname "$0")/lib.sh"
trap 'env -u LD_PRELOAD pkill -9 -f "^$PROGS/spin_until_signal" || true' EXIT

# (pkill runs without the ASan preload of SANITIZE builds: with it, it hangs.)
# A background command of a non-interactive shell starts with SIGINT
# ignored (POSIX); a user's program gets it at its default: restore that.
default_sigint() {
    python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# run_and_signal NAME SIGNAL MODE: record spin_until_signal MODE, send
# SIGNAL to it once it runs; sets $status.
run_and_signal() {
    local name=$1 sig=$2 mode=$3
    default_sigint "$HOTSPUR" record -o "$name.pb.gz" -- "$PROGS/spin_until_signal" "$mode" >"$name.out" 2>"$name.err" &
    local rec=$!
    local i
    for ((i = 0; i < 100; i++)); do grep -q ready "$name.out" 2>/dev/null && break; sleep 0.1; done
    grep -q ready "$name.out" || { kill "$rec"; fail "$name: program did not start"; }
    sleep 0.5
    # the program itself (its command line starts with its path), not record
    env -u LD_PRELOAD pkill "-$sig" -f "^$PROGS/spin_until_signal $mode\$" || fail "$name: could not signal the program"
    set +e
    wait "$rec"
    status=$?
    set -e
}

run_and_signal int INT plain
[ "$status" = 130 ] || fail "SIGINT: record exited $status, want 130: $(cat int.err)"
grep -q "wrote .*int.pb.gz ([1-9][0-9]* samples" int.err || fail "SIGINT: no profile: $(cat int.err)"
"$HOTSPUR" top int.pb.gz | grep -q ' spin_for$' || fail "SIGINT: profile lacks spin_for"

run_and_signal term TERM plain
[ "$status" = 143 ] || fail "SIGTERM: record exited $status, want 143: $(cat term.err)"
grep -q "wrote .*term.pb.gz ([1-9][0-9]* samples" term.err || fail "SIGTERM: no profile: $(cat term.err)"

run_and_signal own INT own
[ "$status" = 0 ] || fail "own handler: record exited $status, want 0"
grep -q '^handled$' own.out || fail "the program's own SIGINT handler did not run"

"$HOTSPUR" record --no-follow -o child.pb.gz -- "$PROGS/spin_until_signal" child >child.out 2>child.err ||
    fail "parent of a killed child failed: $(cat child.err)"
grep -q '^child signaled 15$' child.out || fail "the child did not die of SIGTERM: $(cat child.out)"
grep -q "wrote .*child.pb.gz (" child.err || fail "the parent's profile is missing: $(cat child.err)"
pass "profiles survive SIGINT/SIGTERM; programs' own handlers and children unaffected"
