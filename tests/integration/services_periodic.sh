# services_periodic.sh — periodic profiles of a daemon: with
# HOTSPUR_PERIOD=2s and HOTSPUR_DURATION=500ms every enabled type is
# collected for 0.5 s at the start of each 2 s period and written as its own
# file, so 5.5 s after the agent started there are exactly 3 files per type
# (written at about 0.5, 2.5 and 4.5 s; the 4th is due at 6.5 s). Each holds
# about 0.5 s of the daemon's busy main thread, not a whole period. A
# template without %n gets ".N" before .pb.gz.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

echo 1 >phase
echo 0 >idle # the second daemon idles: less load on a shared machine
start=$(date +%s)
HOTSPUR_PERIOD=2s HOTSPUR_DURATION=500ms HOTSPUR_WALL_HZ=100 HOTSPUR_OUTPUT="$TMP/per.%p.%t.%n.pb.gz" \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/daemon" "$TMP/phase" >a.out 2>a.err &
a=$!
bg_track "$a"
HOTSPUR_PERIOD=1s HOTSPUR_DURATION=300ms HOTSPUR_OUTPUT="$TMP/q.pb.gz" \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/daemon" "$TMP/idle" >b.out 2>b.err &
b=$!
bg_track "$b"
wait_until 10 test -S "$HOTSPUR_RUNTIME_DIR/$a.sock" || fail "agent of $a did not start: $(cat a.err)"
t0=$(date +%s.%N)
wait_until 10 test -S "$HOTSPUR_RUNTIME_DIR/$b.sock" || fail "agent of $b did not start: $(cat b.err)"
t0b=$(date +%s.%N)

# 5.5 s after the first agent started: 3 files per type, none due for 1 s.
sleep "$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { d = t0 + 5.5 - now; print (d > 0 ? d : 0) }')"
ls per.* >a.files
ls q.* >b.files
elapsed_b=$(awk -v t0="$t0b" -v now="$(date +%s.%N)" 'BEGIN { print now - t0 }')
for t in cpu wall; do
    n=$(grep -c "^per\.$a\.[0-9]*\.[0-9]*\.$t\.pb\.gz$" a.files || true)
    [ "$n" = 3 ] || fail "$n $t files after 5.5 s, expected 3: $(tr '\n' ' ' <a.files)"
done
[ "$(wc -l <a.files)" = 6 ] || fail "unexpected files: $(tr '\n' ' ' <a.files)"
# %p, %t (start time, within the test's run) and %n (1, 2, 3).
tstamp=$(sed -n "s/^per\.$a\.\([0-9]*\)\..*/\1/p" a.files | sort -u)
[ "$(echo "$tstamp" | wc -l)" = 1 ] && [ "$tstamp" -ge "$start" ] && [ "$tstamp" -le "$(date +%s)" ] ||
    fail "%t is not the start time: $tstamp"
for n in 1 2 3; do
    for t in cpu wall; do
        f="per.$a.$tstamp.$n.$t.pb.gz"
        [ -s "$f" ] || fail "missing $f: $(tr '\n' ' ' <a.files)"
    done
    f="per.$a.$tstamp.$n.cpu.pb.gz"
    cpu=$(total "$f")
    busy=$(through "$f" phase_one_work)
    wall=$(total "per.$a.$tstamp.$n.wall.pb.gz" --sample-index wall --tagfocus 'thread_name=^daemon$')
    echo "period $n: CPU ${cpu} ns (${busy} ns in phase_one_work); main thread wall ${wall} ns"
    # One busy thread for 0.5 s: at most ~0.5 s of CPU (some margin for the
    # sampling period), at least a little even on a loaded machine.
    awk -v c="$busy" 'BEGIN { exit !(c >= 50e6 && c <= 700e6) }' || fail "period $n: ${busy} ns of CPU for a 0.5 s window"
    ratio_ok "$wall" 500000000 0.6 1.4 || fail "period $n: main thread wall ${wall} ns for a 0.5 s window"
done

# The template without %n: q.1.pb.gz, q.2.pb.gz, ...: one per 1 s period,
# written 0.3 s into it; +-1 for the time the two ls calls took.
want=$(awk -v e="$elapsed_b" 'BEGIN { print int(e - 0.3) + 1 }')
got=$(wc -l <b.files)
echo "q: ${got} files ${elapsed_b} s after start, ${want} expected"
within "$got" "$want" 1 || fail "${got} periodic files, expected ${want}: $(tr '\n' ' ' <b.files)"
for ((n = 1; n <= got; n++)); do
    [ -s "q.$n.pb.gz" ] || fail "missing q.$n.pb.gz: $(tr '\n' ' ' <b.files)"
done
kill -TERM "$a" "$b"
wait "$a" || fail "daemon $a exited with $?"
wait "$b" || fail "daemon $b exited with $?"
echo "after exit: $(ls per.* | wc -l) per.* files, $(ls q.* | wc -l) q.* files"
pass "periodic profiles: 3 per type after 5.5 s, each covering its 0.5 s window"
