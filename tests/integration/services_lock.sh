# services_lock.sh — the lock contention profile, by construction:
# contention's threads take one lock in wait_for_lock and hold it ~200 us;
# each measures its own wait around the lock call and the program prints
# the total. The delay must land on wait_for_lock (the waiting call site,
# not the holder's critical_section), total within 25% of what the program
# measured, with at most one contention per lock call; for
# pthread_mutex_lock, pthread_mutex_timedlock and a rwlock taken for reading
# and writing. Every sample has the thread's name.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

check_lock() { # KIND THREADS ITERS
    local kind=$1 out="lk_$1.pb.gz"
    "$HOTSPUR" record --lock -o "$out" -- "$PROGS/contention" "$kind" "$2" "$3" >"$kind.out" 2>"$kind.err" ||
        fail "$kind: record failed: $(cat "$kind.err")"
    grep -q "wrote .*$out" "$kind.err" || fail "$kind: no file listed: $(cat "$kind.err")"
    "$HOTSPUR" top "$out" | grep >/dev/null '^Type: delay\|^Type: contentions' ||
        fail "$kind: not a lock profile: $("$HOTSPUR" top "$out" | head -5)"
    local measured locks delay at_site holder count
    measured=$(sed -n 's/^waited_ns=\([0-9]*\) .*/\1/p' "$kind.out")
    locks=$(sed -n 's/.* locks=\([0-9]*\) .*/\1/p' "$kind.out")
    [ -n "$measured" ] && [ -n "$locks" ] || fail "$kind: contention printed nothing: $(cat "$kind.out")"
    delay=$(total "$out" --sample-index delay)
    at_site=$(through "$out" wait_for_lock --sample-index delay)
    holder=$(through "$out" critical_section --sample-index delay)
    count=$(total "$out" --sample-index contentions)
    echo "$kind: program waited ${measured} ns in ${locks} lock calls;" \
        "profile: ${delay} ns in ${count} contentions, ${at_site} ns under wait_for_lock"
    ratio_ok "$delay" "$measured" 0.75 1.25 || fail "$kind: delay ${delay} ns is not within 25% of the measured ${measured} ns"
    awk -v a="$at_site" -v b="$delay" 'BEGIN { exit !(a >= 0.99 * b) }' || fail "$kind: delay not at wait_for_lock"
    [ "$holder" = 0 ] || fail "$kind: delay charged to the holder's critical_section"
    [ "$count" -ge 1 ] && [ "$count" -le "$locks" ] || fail "$kind: ${count} contentions for ${locks} lock calls"
    [ "$(total "$out" --sample-index delay --tagfocus thread_name=contender)" = "$delay" ] ||
        fail "$kind: samples without thread_name=contender"
}
check_lock mutex 4 400
check_lock timedlock 4 200
check_lock rwlock 4 200
pass "lock delay at the waiting call site, within 25% of the program's own measure"
