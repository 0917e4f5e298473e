# convert_perf_script.sh — `perf record -g` data read by hotspur: a program
# with a known split (tests/data/busy.c: work_a burns 3 units in spin, work_b
# 1 unit) is recorded with perf, `perf script` text is imported with
# `convert --from perf-script`, and `top` must show spin, work_a and work_b
# with work_a's cum about 3x work_b's. Where `perf record` is not permitted
# (containers without perf_event access) the test says so and uses
# tests/data/perf-script-busy.txt, real `perf script` output of the same
# program recorded on a developer machine.
source "$(dirname "$0")/lib.sh"

cc -O0 -g -fno-omit-frame-pointer -o busy "$SRC/tests/data/busy.c"
src="recorded live with perf record -g"
if command -v perf >/dev/null && perf record -q -g -o perf.data ./busy 8000000 >/dev/null 2>perf.err &&
    perf script -i perf.data > busy.perf.txt 2>/dev/null && [ -s busy.perf.txt ]; then
    :
else
    echo "NOTE: perf record unavailable here ($(head -1 perf.err 2>/dev/null)); using the checked-in perf script fixture"
    cp "$SRC/tests/data/perf-script-busy.txt" busy.perf.txt
    src="checked-in fixture tests/data/perf-script-busy.txt"
fi

"$HOTSPUR" convert --from perf-script busy.perf.txt --to pprof -o busy.pb.gz
# autodetection gives the same profile
"$HOTSPUR" convert busy.perf.txt --to collapsed | LC_ALL=C sort > auto.folded
"$HOTSPUR" convert busy.pb.gz --to collapsed | LC_ALL=C sort > explicit.folded
cmp -s auto.folded explicit.folded || fail "autodetected import differs from --from perf-script"

"$HOTSPUR" top --sample-index samples --nodefraction 0 busy.pb.gz > top.txt
cum() { awk -v f="$1" '$6 == f { print $4 }' top.txt; }
flat() { awk -v f="$1" '$6 == f { print $1 }' top.txt; }
# spin's cum, not its flat: perf's callchains carry kernel frames, and on a
# loaded VM the interrupts taken while in spin land as kernel leaves under it
# (a fresh-clone CI run saw spin flat 397 of work_a+work_b 587)
a=$(cum work_a); b=$(cum work_b); s=$(cum spin)
echo "perf ($src): spin cum=$s flat=$(flat spin) work_a cum=$a work_b cum=$b"
[ -n "$a" ] && [ -n "$b" ] && [ -n "$s" ] || { cat top.txt; fail "spin/work_a/work_b missing from top"; }
awk -v a="$a" -v b="$b" 'BEGIN { r = a / b; exit !(r > 2.2 && r < 4.2) }' ||
    fail "work_a/work_b = $a/$b, want about 3"
awk -v s="$s" -v a="$a" -v b="$b" 'BEGIN { exit !(s >= 0.9 * (a + b)) }' ||
    { head -14 top.txt; fail "spin's cum $s is not most of work_a+work_b"; }
grep -q "^File: busy" <("$HOTSPUR" top busy.pb.gz) || fail "the main binary is not the profile's first mapping"
# the period column: cpu-clock in nanoseconds is the default value
"$HOTSPUR" top busy.pb.gz | grep -q "^Type: cpu-clock" || fail "default sample type is not cpu-clock"
pass "perf script import ($src)"

# `perf script -F +srcline` (a "file:line" line under each frame, "[dso][addr]"
# under frames without debug info): read, and the lines become the
# locations' file and line, so --lines and list work on them
if [ -s perf.data ] && perf script -i perf.data -F +srcline > srcline.txt 2>/dev/null && [ -s srcline.txt ]; then
    grep -Eq '^  [^ ].*:[0-9]+$' srcline.txt || fail "perf script -F +srcline printed no srclines"
    "$HOTSPUR" top --lines srcline.txt > lines.txt 2>err.txt || fail "srcline input refused: $(cat err.txt)"
    grep -Eq ' spin busy\.c:[0-9]+$' lines.txt || { head -12 lines.txt; fail "no busy.c line for spin from -F +srcline"; }
    "$HOTSPUR" list --source-path "$SRC/tests/data" spin srcline.txt > list.txt 2>err.txt || fail "list on srcline input: $(cat err.txt)"
    grep -q 'ROUTINE =* spin in busy.c' list.txt || { head list.txt; fail "list: no routine for spin"; }
    grep -Eq '^ +[0-9.]+m?s? +[0-9.]+m?s? +[0-9]+:' list.txt || { head -20 list.txt; fail "list: no annotated source line"; }
    pass "perf script -F +srcline: file and line per frame, list works"
else
    echo "NOTE: no perf.data here (perf record unavailable): -F +srcline not checked"
fi
