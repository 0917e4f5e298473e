# attach_lib.sh — the attach_daemon fixture for the attach tests (sourced
# after lib.sh; not a test itself). The daemon reads one request a line from
# fifo.in (fd 7 of the test writes to it) and answers one line each in
# daemon.out (tests/programs/attach_daemon.c).
#   start_daemon PROG   start it, wait for "ready PID"; sets dpid
#   ask LINE            send one request and wait for its answer
#   stop_daemon         "quit", wait; fails unless it exited 0 after "bye"
# The EXIT trap kills a daemon left running (a test with its own EXIT trap
# must do it there).

start_daemon() {
    rm -f fifo.in daemon.out
    mkfifo fifo.in
    "$1" <fifo.in >daemon.out 2>daemon.err &
    dpid=$!
    exec 7>fifo.in
    for _ in $(seq 100); do grep -q ready daemon.out && break; sleep 0.05; done
    grep -q "ready $dpid" daemon.out || fail "the daemon did not start: $(cat daemon.out daemon.err)"
}
stop_daemon() {
    echo quit >&7
    exec 7>&-
    wait "$dpid" || fail "the daemon exited $?: $(cat daemon.err)"
    grep -q '^bye$' daemon.out || fail "the daemon did not end normally: $(tail -3 daemon.out)"
}
trap 'if [ -n "${dpid:-}" ]; then kill -9 "$dpid" 2>/dev/null || true; fi' EXIT
ask() {
    local n
    n=$(wc -l <daemon.out)
    echo "$1" >&7
    for _ in $(seq 2000); do [ "$(wc -l <daemon.out)" -gt "$n" ] && return 0; sleep 0.01; done
    fail "the daemon did not answer '$1': $(tail -3 daemon.out; cat daemon.err)"
}
