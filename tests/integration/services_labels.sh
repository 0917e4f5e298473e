# services_labels.sh — thread names and the label API: labels (linked with
# -lhotspur, no environment) starts the agent with hotspur_start, runs
# threads "alpha" (under alpha_loop) and "beta" (under beta_loop) that label
# their requests request=checkout (handle_checkout) and request=search
# (handle_search), clear the labels for between_requests, and dumps with
# hotspur_dump. --tagfocus on a thread name keeps only that thread's
# samples; on request=checkout only handle_checkout; both in CPU and wall
# profiles, read by hotspur and by go tool pprof.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

# No HOTSPUR_* variable at all: the program configures itself.
# (LD_PRELOAD stays: under SANITIZE=1 it holds ASan's runtime, not the agent.)
run_clean() {
    local unset=() v
    for v in $(env | sed -n 's/^\(HOTSPUR_[A-Z_]*\)=.*/\1/p'); do unset+=(-u "$v"); done
    env "${unset[@]}" "$@"
}
run_clean "$PROGS/labels" "$TMP/lab.pb.gz" 40 >lab.out 2>lab.err || fail "labels failed: $(cat lab.err)"
grep -q "^dumped " lab.out || fail "labels: $(cat lab.out lab.err)"
# hotspur_dump(path) writes exactly path; the exit profile goes to the
# configured template (the same name), numbered, and holds only what came
# after the dump: next to nothing (checked at the end).
f=lab.pb.gz
[ -s "$f" ] || fail "hotspur_dump did not write $f: $(ls)"
exitf=$(ls lab.[0-9]*.pb.gz 2>/dev/null | head -1 || true)
echo "dump: $f; at exit: ${exitf:-none}"

check_labels() { # FILE [--sample-index NAME]
    local f=$1; shift
    local all alpha a_in b_in co co_in
    all=$(total "$f" "$@")
    [ "$all" -gt 0 ] || fail "$f: no samples"
    alpha=$(total "$f" "$@" --tagfocus thread_name=alpha)
    a_in=$(through "$f" alpha_loop "$@" --tagfocus thread_name=alpha)
    b_in=$(through "$f" beta_loop "$@" --tagfocus thread_name=alpha)
    echo "$f: total $all; thread_name=alpha: $alpha, under alpha_loop $a_in, under beta_loop $b_in"
    # (a sample may rarely fall outside the loops: thread start and end)
    [ "$alpha" -gt 0 ] && ratio_ok "$a_in" "$alpha" 0.98 1 && [ "$b_in" = 0 ] ||
        fail "$f: --tagfocus thread_name=alpha keeps other threads' samples"
    co=$(total "$f" "$@" --tagfocus request=checkout)
    co_in=$(through "$f" handle_checkout "$@" --tagfocus request=checkout)
    echo "$f: request=checkout: $co, under handle_checkout $co_in"
    # (or rarely in hotspur_set_label, as the label changes)
    [ "$co" -gt 0 ] && ratio_ok "$co_in" "$co" 0.98 1 || fail "$f: --tagfocus request=checkout keeps other samples"
    [ "$(through "$f" between_requests "$@" --tagfocus request=.)" = 0 ] ||
        fail "$f: samples after hotspur_clear_labels still carry a request label"
    "$HOTSPUR" traces "$f" | grep >/dev/null '^ *tid: *[0-9]' || fail "$f: no tid label"
}
check_labels "$f"
# Every thread did the same work: alpha has about half of it.
s=$(pct "$(total "$f" --tagfocus thread_name=alpha)" "$(total "$f")")
within "$s" 50 15 || fail "alpha has $s% of the CPU samples, not about half"
go tool pprof -tagfocus=request=checkout -top "$f" 2>/dev/null >go.txt || fail "go tool pprof failed"
grep -q ' handle_checkout$' go.txt && ! grep -q ' handle_search$' go.txt || fail "go tool pprof -tagfocus: $(cat go.txt)"

# The same with the wall profile on: every type's samples carry the labels.
run_clean "$PROGS/labels" "$TMP/labw.pb.gz" 30 wall >labw.out 2>labw.err || fail "labels wall failed: $(cat labw.err)"
cpu=labw.cpu.pb.gz wall=labw.wall.pb.gz
[ -s "$cpu" ] && [ -s "$wall" ] || fail "hotspur_dump with two types wrote: $(ls labw*)"
check_labels "$cpu"
check_labels "$wall" --sample-index wall
# Last (the label checks above stand on their own): the exit profile.
if [ -n "$exitf" ]; then
    # The agent's own work writing the dump (symbolizing, compressing) is
    # not the program's: no sample may be under hotspur_dump.
    [ "$(through "$exitf" hotspur_dump)" = 0 ] ||
        fail "$exitf has $(through "$exitf" hotspur_dump) ns of CPU under hotspur_dump: the agent profiled its own dump"
    awk -v a="$(total "$exitf")" -v b="$(total "$f")" 'BEGIN { exit !(a <= 0.05 * b) }' ||
        fail "the exit profile repeats what the dump held"
fi
pass "--tagfocus on thread_name and on an API label keep only their samples"
