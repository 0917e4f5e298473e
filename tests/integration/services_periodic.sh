# services_periodic.sh — periodic profiles of a daemon: with
# HOTSPUR_PERIOD=2s and HOTSPUR_DURATION=500ms every enabled type is
# collected for 0.5 s at the start of each 2 s period and written as its own
# file: by the windows' own times (the profiles' time_nanos), they start 2 s
# apart and last 0.5 s, and there is never a file of a window not yet begun.
# Each holds about 0.5 s of the daemon's busy main thread (wall), not a
# whole period. A template without %n gets ".N" before .pb.gz.
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
wait_until 60 test -S "$HOTSPUR_RUNTIME_DIR/$a.sock" || fail "agent of $a did not start: $(cat a.err)"
wait_until 60 test -S "$HOTSPUR_RUNTIME_DIR/$b.sock" || fail "agent of $b did not start: $(cat b.err)"

# Three windows of each type. On a loaded machine a dump (written and
# symbolized in the process) can take seconds: wait for the files (the bound
# only says when to give up), and judge the periods by the windows' own
# times (time_nanos, duration_nanos), not by when the test looked.
info() { env -u LD_PRELOAD python3 "$SRC/tests/integration/continuous_server.py" info "$1"; }
three_each() {
    [ "$(ls per.$a.*.cpu.pb.gz 2>/dev/null | wc -l)" -ge 3 ] && [ "$(ls per.$a.*.wall.pb.gz 2>/dev/null | wc -l)" -ge 3 ] &&
        [ "$(ls q.*.pb.gz 2>/dev/null | wc -l)" -ge 3 ]
}
wait_until 60 three_each || fail "not 3 files per type in 60 s: $(ls per.* q.* | tr '\n' ' ')"
ls per.* >a.files
ls q.* >b.files
listed=$(date +%s.%N) # both listings were taken before this
# %p, %t (start time, within the test's run) and %n (1, 2, 3).
tstamp=$(sed -n "s/^per\.$a\.\([0-9]*\)\..*/\1/p" a.files | sort -u)
[ "$(echo "$tstamp" | wc -l)" = 1 ] && [ "$tstamp" -ge "$start" ] && [ "$tstamp" -le "$(date +%s)" ] ||
    fail "%t is not the start time: $tstamp"
read -r first _ < <(info "per.$a.$tstamp.1.cpu.pb.gz")
# A window starts every 2 s, lasts 0.5 s, and no file is written for a
# window not yet begun: at most one per 2 s since the first, per type. A
# window starts late only when the previous dump (written and symbolized in
# the process, cpu then wall) held the agent thread up: then right after
# that dump's last file (its mtime).
most=$(awk -v f="$first" -v l="$listed" 'BEGIN { printf "%d", (l - f / 1e9) / 2 + 1 }')
for t in cpu wall; do
    n=$(grep -c "^per\.$a\.$tstamp\.[0-9]*\.$t\.pb\.gz$" a.files || true)
    echo "$t: $n files, at most $most windows had begun"
    [ "$n" -ge 3 ] && [ "$n" -le "$most" ] || fail "$n $t files, $most windows begun: $(tr '\n' ' ' <a.files)"
    for ((k = 1; k <= n; k++)); do
        [ -s "per.$a.$tstamp.$k.$t.pb.gz" ] || fail "missing per.$a.$tstamp.$k.$t.pb.gz: $(tr '\n' ' ' <a.files)"
    done
done
[ "$(grep -cv "^per\.$a\.$tstamp\.[0-9]*\.\(cpu\|wall\)\.pb\.gz$" a.files)" = 0 ] ||
    fail "unexpected files: $(tr '\n' ' ' <a.files)"
# on_grid N AT FIRST PREV PERIOD PREVFILE: window N (N > 1) starting at AT
# (ns) is on the grid of PERIOD s from FIRST, or was held up by the previous
# window's (at PREV) dump, which ended with PREVFILE.
on_grid() {
    awk -v n="$1" -v a="$2" -v f="$3" -v p="$4" -v per="$5" -v m="$(stat -c %.9Y "$6")" 'BEGIN {
        o = (a - f) / 1e9; s = (p - f) / 1e9 + per; d = m - f / 1e9
        exit !(o >= per * (n - 1) - 0.05 && o <= (d > s ? d : s) + 0.5) }'
}
prev=0
for n in 1 2 3; do
    f="per.$a.$tstamp.$n.cpu.pb.gz"
    read -r at dur < <(info "$f")
    [ "$n" = 1 ] || on_grid "$n" "$at" "$first" "$prev" 2 "per.$a.$tstamp.$((n - 1)).wall.pb.gz" ||
        fail "period $n: its window starts $(awk -v a="$at" -v f="$first" 'BEGIN { print (a - f) / 1e9 }') s after the first, not $((2 * (n - 1))) s (nor right after a late dump)"
    prev=$at
    off=$(awk -v a="$at" -v f="$first" 'BEGIN { printf "%.3f", (a - f) / 1e9 }')
    cpu=$(total "$f")
    busy=$(through "$f" phase_one_work)
    wall=$(total "per.$a.$tstamp.$n.wall.pb.gz" --sample-index wall --tagfocus 'thread_name=^daemon$')
    read -r _ wdur < <(info "per.$a.$tstamp.$n.wall.pb.gz")
    echo "period $n: window at +${off} s for $((dur / 1000000)) ms: CPU ${cpu} ns (${busy} ns in phase_one_work); main thread wall ${wall} ns"
    ratio_ok "$dur" 500000000 0.9 1.5 || fail "period $n: a window of ${dur} ns, not 0.5 s"
    # One busy thread for 0.5 s: some CPU (how much depends on the machine's
    # load), at most ~0.5 s (some margin for the sampling period); its wall
    # time is the window's, whatever the load.
    awk -v c="$busy" 'BEGIN { exit !(c > 0 && c <= 700e6) }' || fail "period $n: ${busy} ns of CPU for a 0.5 s window"
    ratio_ok "$wall" "$wdur" 0.7 1.3 || fail "period $n: main thread wall ${wall} ns for a window of ${wdur} ns"
done

# The template without %n: q.1.pb.gz, q.2.pb.gz, ...: one per 1 s period,
# written 0.3 s into it, so at most one per second since the first began.
got=$(wc -l <b.files)
read -r qfirst _ < <(info q.1.pb.gz)
qmost=$(awk -v f="$qfirst" -v l="$listed" 'BEGIN { printf "%d", (l - f / 1e9) + 1 }')
echo "q: ${got} files, at most ${qmost} windows had begun"
[ "$got" -ge 3 ] && [ "$got" -le "$qmost" ] || fail "${got} periodic files, ${qmost} windows begun: $(tr '\n' ' ' <b.files)"
prev=$qfirst
for ((n = 1; n <= got; n++)); do
    [ -s "q.$n.pb.gz" ] || fail "missing q.$n.pb.gz: $(tr '\n' ' ' <b.files)"
    read -r at _ < <(info "q.$n.pb.gz")
    [ "$n" = 1 ] || on_grid "$n" "$at" "$qfirst" "$prev" 1 "q.$((n - 1)).pb.gz" ||
        fail "q.$n.pb.gz's window starts $(awk -v a="$at" -v f="$qfirst" 'BEGIN { print (a - f) / 1e9 }') s after the first, not $((n - 1)) s (nor right after a late dump)"
    prev=$at
done
kill -TERM "$a" "$b"
wait "$a" || fail "daemon $a exited with $?"
wait "$b" || fail "daemon $b exited with $?"
echo "after exit: $(ls per.* | wc -l) per.* files, $(ls q.* | wc -l) q.* files"
pass "periodic profiles: a window every 2 s (q: 1 s), none ahead of time, each covering its 0.5 s"
