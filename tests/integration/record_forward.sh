# record_forward.sh — SIGTERM or SIGHUP sent to `hotspur record` itself (a
# service manager stopping it) is passed on to the program, and record waits
# for it as it does for ^C (issue 13): the program writes its profile, dies
# of the signal, record lists the file and exits 128+N.
source "$(dirname "$0")/lib.sh"
trap 'env -u LD_PRELOAD pkill -9 -f "^$PROGS/spin_until_signal" || true' EXIT

for sig in TERM HUP; do
    "$HOTSPUR" record -o "$sig.pb.gz" -- "$PROGS/spin_until_signal" plain >"$sig.out" 2>"$sig.err" &
    rec=$!
    for ((i = 0; i < 100; i++)); do grep -q ready "$sig.out" 2>/dev/null && break; sleep 0.1; done
    grep -q ready "$sig.out" || fail "$sig: program did not start"
    sleep 0.3
    kill "-$sig" "$rec"
    set +e
    wait "$rec"
    status=$?
    set -e
    want=$((128 + $(kill -l "$sig")))
    [ "$status" = "$want" ] || fail "SIG$sig to record: exited $status, want $want: $(cat "$sig.err")"
    grep -q "wrote .*$sig.pb.gz ([1-9][0-9]* samples" "$sig.err" || fail "SIG$sig to record: no profile listed: $(cat "$sig.err")"
    if env -u LD_PRELOAD pgrep -f "^$PROGS/spin_until_signal plain\$" >/dev/null; then
        fail "SIG$sig to record: the program is still running"
    fi
    echo "SIG$sig to record: exit $status, $(grep wrote "$sig.err")"
done
pass "record passes SIGTERM and SIGHUP on and waits"
