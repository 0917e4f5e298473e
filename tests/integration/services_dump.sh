# services_dump.sh — on-demand dumps of a daemon that never exits, through
# `hotspur ctl`: the daemon computes in phase_one_work, then in
# phase_two_work, as the test tells it through a file, idling between. Each
# dump must be a valid profile covering only the time since the previous
# one: the first has phase one and no phase two, the second phase two and
# not one sample of phase one. Also: default and -o names, status, stop and
# start, an agent error, and the profile written at SIGTERM.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

has() { through "$1" "$2"; } # CPU nanoseconds under function $2 in file $1

echo 0 >phase
HOTSPUR_OUTPUT="$TMP/d.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/daemon" "$TMP/phase" >daemon.out 2>daemon.err &
pid=$!
bg_track "$pid"
wait_until 10 test -S "$HOTSPUR_RUNTIME_DIR/$pid.sock" || fail "no control socket $HOTSPUR_RUNTIME_DIR/$pid.sock"
wait_until 10 grep -q ready daemon.out || fail "daemon did not start"

# The daemon's CPU time so far in ns (utime + stime from /proc): on a busy
# machine 1.5 s of wall time in a phase may be much less CPU.
cpu_ns() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1e9 / hz }' "/proc/$pid/stat"; }

# dump PHASE: run PHASE for 1.5 s, idle, dump; the files go to $1.files and
# the CPU the daemon used meanwhile to $phase_cpu.
run_and_dump() { # NAME PHASE [ctl dump options...]
    local name=$1 ph=$2; shift 2
    local before
    before=$(cpu_ns)
    echo "$ph" >phase
    sleep 1.5
    echo 0 >phase
    sleep 0.3 # the daemon reads the file every 10 ms: now it idles
    phase_cpu=$(awk -v a="$before" -v b="$(cpu_ns)" 'BEGIN { printf "%.0f", b - a }')
    "$HOTSPUR" ctl "$pid" dump "$@" >"$name.txt" 2>"$name.err" || fail "ctl dump failed: $(cat "$name.err")"
    dump_files "$name.txt" >"$name.files"
    [ "$(wc -l <"$name.files")" = 1 ] || fail "$name: expected one file (CPU only): $(cat "$name.txt")"
    local f
    f=$(cat "$name.files")
    [ -s "$f" ] || fail "$name: $f was not written"
    "$HOTSPUR" top "$f" >/dev/null || fail "$name: $f is not a valid profile"
}

# check_phase N PHASE OTHER: dump N is d.N.pb.gz (the template with the
# dump's number) and holds PHASE's work and not one sample of OTHER's.
check_phase() {
    local f
    f=$(cat "dump$1.files")
    [ "$f" = "$TMP/d.$1.pb.gz" ] || fail "dump $1 is $f, expected $TMP/d.$1.pb.gz"
    held=$(has "$f" "$2"); leaked=$(has "$f" "$3")
    echo "dump $1: $2 ${held} ns, $3 ${leaked} ns"
    [ "$held" -gt 0 ] && [ "$leaked" = 0 ] || fail "dump $1 must hold $2 and no $3"
}
run_and_dump dump1 1
check_phase 1 phase_one_work phase_two_work
run_and_dump dump2 2
check_phase 2 phase_two_work phase_one_work # only the work after dump 1
two=$held
# Each dump holds the CPU of its phase (as /proc counted it), not the whole run.
ratio_ok "$two" "$phase_cpu" 0.7 1.3 || fail "dump 2 holds ${two} ns of phase two; the daemon used $phase_cpu ns"

# A relative -o template is relative to the caller, not to the daemon.
mkdir -p sub
(cd sub && "$HOTSPUR" ctl "$pid" dump -o 'mine.%n.pb.gz' >../dump3.txt 2>../dump3.err) ||
    fail "ctl dump -o failed: $(cat dump3.err)"
[ "$(dump_files dump3.txt)" = "$TMP/sub/mine.3.pb.gz" ] && [ -s sub/mine.3.pb.gz ] ||
    fail "dump -o mine.%n.pb.gz wrote: $(cat dump3.txt)"

"$HOTSPUR" ctl "$pid" status >status.txt || fail "ctl status failed"
grep -q "^ok pid=$pid cmd=daemon .*types=cpu.* state=running dumps=3" status.txt || fail "status: $(cat status.txt)"

# stop: no sampling until start.
"$HOTSPUR" ctl "$pid" stop >stop.txt || fail "ctl stop failed"
grep -q '^ok' stop.txt || fail "stop: $(cat stop.txt)"
"$HOTSPUR" ctl "$pid" status | grep >/dev/null 'state=stopped' || fail "state is not stopped after stop"
run_and_dump dump4 1
[ "$(has "$(cat dump4.files)" phase_one_work)" = 0 ] || fail "samples taken while stopped"
"$HOTSPUR" ctl "$pid" start >start.txt || fail "ctl start failed"
"$HOTSPUR" ctl "$pid" status | grep >/dev/null 'state=running' || fail "state is not running after start"
run_and_dump dump5 1
[ "$(has "$(cat dump5.files)" phase_one_work)" -gt 0 ] || fail "no samples after start"

# An error from the agent: exit 1, its message on stderr, the daemon lives on.
set +e
"$HOTSPUR" ctl "$pid" dump -o "$TMP/no/such/dir/x.pb.gz" >err.txt 2>err.err
rc=$?
set -e
[ "$rc" = 1 ] || fail "a failed dump exits $rc, not 1: $(cat err.txt err.err)"
grep -q "hotspur ctl: $pid: " err.err || fail "no error message: $(cat err.err)"
kill -0 "$pid" || fail "the daemon died"

# SIGTERM: the program exits normally and the agent writes the rest.
kill -TERM "$pid"
wait "$pid" || fail "daemon exited with $?"
ls d.*.pb.gz >written.txt
echo "written: $(tr '\n' ' ' <written.txt)"
[ "$(wc -l <written.txt)" -ge 5 ] || fail "expected the four dumps named d.N.pb.gz and one at exit"
[ ! -e "$HOTSPUR_RUNTIME_DIR/$pid.sock" ] || fail "the control socket was left behind at exit"
pass "two dumps hold phase one, then only phase two; -o, status, stop, start, errors"
