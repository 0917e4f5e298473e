# attach_lock.sh — `hotspur attach PID --lock`: the lock profile of a daemon
# that runs already (issue 32). attach_daemon's "lock R H" has a thread hold
# a mutex H ms while site_lock_wait waits for it, R times, and answers the
# wait it measured itself: the profile's delay at site_lock_wait is within
# 10% of it, with R contentions. (No heap: this one runs in the ASan build
# too, where ASan's runtime owns malloc and a heap attach is refused.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/attach_lib.sh"

site_sum() { "$HOTSPUR" convert --to collapsed --sample-index "$2" "$1" |
    awk '/site_lock_wait/ { s += $NF } END { printf "%.0f\n", s }'; }

start_daemon "$PROGS/attach_daemon"

ask "lock 2 20" # before the attach: not the profile's
"$HOTSPUR" attach "$dpid" --lock -o "$TMP/lock.pb.gz" >attach.out 2>&1 || fail "attach failed: $(cat attach.out)"
cat attach.out
grep -q "attached to process $dpid: lock" attach.out || fail "attach said: $(cat attach.out)"
ask "lock 5 60"
"$HOTSPUR" attach "$dpid" --detach >detach.out 2>&1 || fail "detach failed: $(cat detach.out)"
cat detach.out
[ -s lock.pb.gz ] || fail "no lock profile: $(cat detach.out)"
truth=$(awk '/^lock waited/ { v = $3 } END { print v }' daemon.out)
got=$(site_sum lock.pb.gz delay)
n=$(site_sum lock.pb.gz contentions)
echo "the daemon waited $truth ns; the profile says $got ns in $n contentions at site_lock_wait"
[ "$n" = 5 ] || fail "$n contentions at site_lock_wait, want 5"
awk -v t="$truth" -v g="$got" 'BEGIN { d = g - t; if (d < 0) d = -d; exit !(t > 0 && d <= t / 10) }' ||
    fail "the profile's delay $got ns is not within 10% of the daemon's own $truth ns"
ask "lock 1 5" # detached: still answers
stop_daemon
pass "attach --lock: $n contentions, delay within 10% of the program's own measurement"
