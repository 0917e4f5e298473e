# attach_calls.sh — the host's system calls, errno and signals across an
# attach and a detach (issue 32: "a read interrupted by the attach is
# restarted or returns as it would have"). attach_calls blocks three threads
# at once, in read() on a pipe, nanosleep(1.5 s) and epoll_wait(2 s), with
# the program's own SIGUSR1 handler on a fourth; the thread the injector
# stops for both injections (attach and detach) is the main thread, in turn
# each of the three calls. With the agent attached (--exact) and detached
# while they block, and 3 SIGUSR1 sent meanwhile, the output is the
# unattached run's: the bytes read, errno as the program set it (777: the
# agent's dlopen and its calls ran on that thread), each sleep and wait its
# full length and returning what it would (0, not EINTR), 3 signals counted.
# (attach_inject.sh: 20 loads into a blocked read, a sleep.)
source "$(dirname "$0")/lib.sh"
mode=(--exact)
[ -n "$asan_rt" ] && mode=(--lock) # ASan owns malloc: a heap attach is refused

# run CALL ATTACH(0|1): the program with CALL on its main thread; prints its output
run() {
    rm -f fifo
    mkfifo fifo
    "$PROGS/attach_calls" "$1" <fifo >"calls.$1.$2" 2>&1 &
    local pid=$!
    exec 7>fifo
    for _ in $(seq 200); do grep -q ready "calls.$1.$2" && break; sleep 0.01; done
    grep -q "ready $pid" "calls.$1.$2" || fail "attach_calls did not start: $(cat "calls.$1.$2")"
    sleep 0.1 # all three threads in their calls
    if [ "$2" = 1 ]; then
        "$HOTSPUR" attach "$pid" "${mode[@]}" -o "$TMP/calls.pb.gz" >attach.out 2>&1 || fail "$1: attach: $(cat attach.out)"
        grep -q "(thread $pid stopped" attach.out || fail "$1: the main thread was not the one stopped: $(cat attach.out)"
    fi
    for _ in 1 2 3; do kill -USR1 "$pid"; sleep 0.05; done
    if [ "$2" = 1 ]; then
        "$HOTSPUR" attach "$pid" --detach >detach.out 2>&1 || fail "$1: detach: $(cat detach.out)"
        grep -q "(thread $pid stopped" detach.out || fail "$1: the main thread was not the one stopped: $(cat detach.out)"
        cat attach.out detach.out
    fi
    echo hello >&7
    exec 7>&-
    wait "$pid" || fail "$1: attach_calls exited $?: $(cat "calls.$1.$2")"
    sed -i "s/^ready .*/ready/" "calls.$1.$2"
}

for call in read sleep epoll; do
    run "$call" 0
    run "$call" 1
    cat "calls.$call.1"
    grep -q "^read: returned 6 (hello), errno 777$" "calls.$call.0" || fail "the unattached run: $(cat "calls.$call.0")"
    diff "calls.$call.0" "calls.$call.1" >diff.out || fail "main thread in $call: attached, the program saw otherwise: $(cat diff.out)"
done
pass "read, nanosleep and epoll_wait interrupted by an attach and a detach end as unattached (data, errno, full length, signals counted)"
