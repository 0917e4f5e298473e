# live_signals.sh — Ctrl-C and SIGTERM end `hotspur record -p` and
# `record -a` (no --duration) with the profile written: exit status 0, the
# one-line summary, a gzipped pprof the report commands read, with samples
# of the process that was burning CPU (issue 27: "--duration D or
# Ctrl-C/SIGTERM to stop, then the profile is written").
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"

NAME=lsig$$ # a name of its own: other live_target processes may run meanwhile
cp "$PROGS/live_target" "$NAME"
"./$NAME" exit 600000 & T=$! # burn_a for 10 min of CPU (killed at the end)
PIDS+=($T)
sleep 0.2
for mode in p a; do
    for sig in INT TERM; do
        out=$mode.$sig.pb.gz
        if [ $mode = p ]; then
            "$HOTSPUR" record -p "$T" -o "$out" 2>"$out.err" & R=$!
        else
            "$HOTSPUR" record -a -o "$out" 2>"$out.err" & R=$!
        fi
        PIDS+=($R)
        # attached and sampling (-a reads every process's maps first), and
        # the target ran 1 s of CPU since (2 s of wall time gave it under
        # 300 ms on a loaded box)
        sampling_wait "$R" || fail "record -$mode not sampling after 60 s"
        cpu_wait "$T" 1000 || fail "the target did not run 1 s of CPU in 60 s"
        kill -"$sig" "$R"
        st=0
        wait "$R" || st=$?
        echo "record -$mode, SIG$sig: exit $st: $(cat "$out.err")"
        [ "$st" = 0 ] || fail "record -$mode ended by SIG$sig exited with status $st: $(cat "$out.err")"
        # (", N lost": events the kernel's buffers dropped, as a loaded
        # machine's system-wide recording can)
        grep -Eq '^hotspur record: [1-9][0-9]* samples from [1-9][0-9]* process(es)?(, [0-9]+ lost)? -> ' "$out.err" ||
            fail "record -$mode, SIG$sig: no summary line with samples"
        gzip -t "$out" || fail "record -$mode, SIG$sig: $out is not gzipped"
        "$HOTSPUR" top --tagfocus pid="$T" "$out" >"$out.top" || fail "top cannot read $out"
        grep -q ' burn_a$' "$out.top" || fail "record -$mode, SIG$sig: burn_a of the target is not in the profile"
        # samples over the time it ran, not one: burn_a (all the target
        # does) has at least 300 ms of them after 1 s of its CPU at 100 Hz
        ms=$(awk '$6 == "burn_a" { v = $4; if (v ~ /ms$/) v += 0; else v *= 1000; print v }' "$out.top")
        echo "  burn_a of the target: $ms ms of samples"
        [ "${ms%.*}" -ge 300 ] || fail "record -$mode, SIG$sig: only $ms ms of burn_a's samples"
    done
done
pass "SIGINT and SIGTERM end record -p and record -a with the profile written"
