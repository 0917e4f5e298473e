# record_cpu_split.sh — truth by construction: cpu_split burns CPU in burn_a,
# burn_b, burn_c in the ratio 60/30/10 (by its own CPU clock), in one thread
# and in three threads of different loads. The recorded shares must be within
# 3 percentage points, at the default rate and at 1000 Hz, and go tool pprof
# must read the same numbers from our file.
source "$(dirname "$0")/lib.sh"

share() { # FILE FUNCTION -> cum% without the % sign (the burn functions read
        # their own CPU clock; under load that syscall shows as their callee)
    "$HOTSPUR" top -n 50 "$1" | awk -v f="$2" '$6 == f { sub("%", "", $5); print $5 }'
}

check_split() { # FILE LABEL
    local a b c
    a=$(share "$1" burn_a); b=$(share "$1" burn_b); c=$(share "$1" burn_c)
    echo "$2: burn_a=$a% burn_b=$b% burn_c=$c%"
    for pair in "$a 60" "$b 30" "$c 10"; do
        set -- $pair
        [ -n "$1" ] || fail "$2: a burn function is missing"
        awk -v got="$1" -v want="$2" 'BEGIN { d = got - want; if (d < 0) d = -d; exit !(d <= 3) }' ||
            fail "share $1% is not within 3 points of $2%"
    done
}

"$HOTSPUR" record -o single.pb.gz -- "$PROGS/cpu_split" single 3000 2>record.err
grep -q "wrote .*single.pb.gz (.* samples, .* s CPU)" record.err || fail "no summary line: $(cat record.err)"
check_split single.pb.gz "single thread, 100 Hz"

"$HOTSPUR" record -o threads.pb.gz -- "$PROGS/cpu_split" threads 3000 2>/dev/null
check_split threads.pb.gz "three threads, 100 Hz"

"$HOTSPUR" record -F 1000 -o fast.pb.gz -- "$PROGS/cpu_split" threads 1500 2>/dev/null
check_split fast.pb.gz "three threads, 1000 Hz"

# Each thread's samples carry its name and tid.
go tool pprof -tagfocus=thread_name=worker-b -top threads.pb.gz 2>/dev/null | grep -q ' burn_b$' ||
    fail "thread_name label missing"
go tool pprof -tagfocus=thread_name=worker-b -top threads.pb.gz 2>/dev/null | grep -q ' burn_a$' &&
    fail "worker-b's samples include burn_a"

# go tool pprof reads our file and agrees with hotspur top.
ours=$("$HOTSPUR" top -n 3 single.pb.gz | awk '$6 ~ /^burn_/ { print $6, $1, $4 }')
theirs=$(go tool pprof -top -nodecount=3 single.pb.gz 2>/dev/null | awk '$6 ~ /^burn_/ { print $6, $1, $4 }')
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || fail "hotspur top and go tool pprof differ: [$ours] vs [$theirs]"
pass "CPU shares within 3 points; go tool pprof agrees"
