#!/usr/bin/env bash
# continuous_empty.sh — a process with nothing to report uploads nothing
# (issue 28): `timeout` wrapping a service, or any process that sleeps
# through its windows, used to upload 0-sample CPU windows under the same
# service, doubling the profile count and halving the average. A busy
# process beside it still uploads every window.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_SERVICE=svc HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms \
    LD_PRELOAD="$AGENT_PRELOAD" sleep 3.5 2>idle.err || fail "sleep failed: $(cat idle.err)"
sleep 0.3
fake_summary >idle.sum
# Three windows close while it sleeps, all empty: none is uploaded. The
# last, cut short at exit, may hold a sample of the process's own exit
# work (libc's exit handlers: a real 10 ms of CPU, seen in 2 runs of 4).
idle=$(wc -l <idle.sum)
[ "$idle" -le 1 ] || fail "an idle process uploaded $idle windows: $(cat idle.sum)"
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_SERVICE=svc HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 3500 0 >/dev/null 2>busy.err || fail "phases failed: $(cat busy.err)"
sleep 0.3
fake_summary >busy.sum
n=$(wc -l <busy.sum)
echo "idle: $idle upload(s) (at most its exit window); busy: $n uploads in 3.5 s of 1 s periods"
[ "$n" -ge 3 ] || fail "the busy process uploaded only $n windows: $(cat busy.sum)"
pass "empty windows are not uploaded ($idle of an idle process's 4); a busy process's are ($n)"
