# record_passthrough.sh — `hotspur record` must not change what a program
# does: same stdout, stderr, stdin handling and exit status as without it,
# for a shell script, sort of a large file, and a program that forks and
# execs; plus the CLI's error handling.
source "$(dirname "$0")/lib.sh"

compare() { # NAME CMD... : run with and without record, compare everything
    local name=$1; shift
    set +e
    "$@" < input.txt > "$name.plain.out" 2> "$name.plain.err"; local s1=$?
    "$HOTSPUR" record -o "$name.pb.gz" -- "$@" < input.txt > "$name.rec.out" 2> "$name.rec.err"; local s2=$?
    set -e
    [ "$s1" = "$s2" ] || fail "$name: exit status $s2 under record, $s1 without"
    cmp -s "$name.plain.out" "$name.rec.out" || fail "$name: stdout differs"
    grep -v '^hotspur: ' "$name.rec.err" > "$name.rec.err2" || true
    cmp -s "$name.plain.err" "$name.rec.err2" || fail "$name: stderr differs"
    echo "$name: identical output, status $s1"
}

# ~20 MB of lines for sort
awk 'BEGIN { srand(7); for (i = 0; i < 400000; i++) printf "%08d line %d %s\n", int(rand() * 1e8), i, "payload-payload-payload" }' > input.txt
compare sort sort input.txt
cat > script.sh <<'SH'
#!/bin/sh
read first
echo "first line: $first"
i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done
echo "to stderr" >&2
wc -l
exit 3
SH
chmod +x script.sh
compare script ./script.sh
compare forker "$PROGS/forker" 5
[ -s sort.pb.gz ] && [ -s forker.pb.gz ] || fail "profiles missing"

# killed by a signal: 128+N, like a shell
set +e
"$HOTSPUR" record -o killed.pb.gz -- sh -c 'kill -9 $$' 2>/dev/null; s=$?
set -e
[ "$s" = 137 ] || fail "killed program: status $s, want 137"

# errors: one line, exit 2 (or 127 for a missing command, like a shell)
expect_error() { # STATUS CMD...
    local want=$1; shift
    set +e; "$@" > err.out 2> err.txt; local s=$?; set -e
    [ "$s" = "$want" ] || fail "$*: status $s, want $want"
    [ "$(wc -l < err.txt)" -ge 1 ] || fail "$*: no message"
}
expect_error 2 "$HOTSPUR" record --bogus -- true
expect_error 2 "$HOTSPUR" record -F 0 -- true
expect_error 2 "$HOTSPUR" record
expect_error 127 "$HOTSPUR" record -o x.pb.gz -- ./no-such-program
"$HOTSPUR" record --help | grep -q "usage: hotspur record" || fail "record --help"
pass "record passes programs through untouched"
