# services_children.sh — `record` follows children: forktwo's parent burns
# CPU in parent_burn while one forked child burns in child_one_burn and
# another, forked then exec'd, in child_two_burn. Three files: the first
# process's is OUT, the others carry their pid; each has its own process's
# function on top and not the others'; record lists all three. --no-follow
# gives one file. With two types, every process writes both. `hotspur
# merge` combines the three.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

"$HOTSPUR" record -o fk.pb.gz -- "$PROGS/forktwo" 600 >fk.out 2>fk.err || fail "record failed: $(cat fk.err)"
parent=$(sed -n 's/^parent pid=//p' fk.out)
c1=$(sed -n 's/^child1 pid=//p' fk.out)
c2=$(sed -n 's/^child2 pid=//p' fk.out)
[ -n "$parent" ] && [ -n "$c1" ] && [ -n "$c2" ] || fail "forktwo printed: $(cat fk.out)"
ls fk*.pb.gz >files.txt
[ "$(wc -l <files.txt)" = 3 ] || fail "expected 3 files: $(tr '\n' ' ' <files.txt)"
[ "$(grep -c '^hotspur: wrote ' fk.err)" = 3 ] || fail "record did not list 3 files: $(cat fk.err)"

# (awk reads to the end: an early exit would break the pipe under pipefail)
top_fn() { "$HOTSPUR" top "$1" | awk 'f && !done { print $6; done = 1 } /^ *flat  flat%/ { f = 1 }'; }
check_file() { # FILE FUNCTION OTHER...
    local f=$1 fn=$2 t; shift 2
    [ -s "$f" ] || fail "$f missing: $(tr '\n' ' ' <files.txt)"
    grep -q "wrote .*$f" fk.err || fail "record did not list $f"
    t=$(top_fn "$f")
    echo "$f: top function $t"
    [ "$t" = "$fn" ] || fail "$f: top function is $t, not $fn"
    for o in "$@"; do
        [ "$(through "$f" "$o")" = 0 ] || fail "$f holds samples of $o"
    done
}
check_file fk.pb.gz parent_burn child_one_burn child_two_burn
check_file "fk.$c1.pb.gz" child_one_burn parent_burn child_two_burn
check_file "fk.$c2.pb.gz" child_two_burn parent_burn child_one_burn

"$HOTSPUR" merge fk.pb.gz "fk.$c1.pb.gz" "fk.$c2.pb.gz" -o all.pb.gz || fail "merge failed"
for fn in parent_burn child_one_burn child_two_burn; do
    s=$(pct "$(through all.pb.gz "$fn")" "$(total all.pb.gz)")
    echo "merged: $fn $s%"
    within "$s" 33.3 12 || fail "merged profile: $fn has $s%, each process burnt the same CPU"
done

"$HOTSPUR" record --no-follow -o nf.pb.gz -- "$PROGS/forktwo" 300 >nf.out 2>nf.err || fail "record --no-follow failed"
[ "$(ls nf*.pb.gz | wc -l)" = 1 ] || fail "--no-follow wrote: $(ls nf*)"
[ "$(grep -c '^hotspur: wrote ' nf.err)" = 1 ] || fail "--no-follow listed: $(cat nf.err)"
[ "$(top_fn nf.pb.gz)" = parent_burn ] || fail "--no-follow: top function is $(top_fn nf.pb.gz)"

"$HOTSPUR" record --cpu --wall -o two.pb.gz -- "$PROGS/forktwo" 300 >two.out 2>two.err || fail "record --cpu --wall failed"
c1=$(sed -n 's/^child1 pid=//p' two.out)
c2=$(sed -n 's/^child2 pid=//p' two.out)
for f in two.cpu.pb.gz two.wall.pb.gz "two.$c1.cpu.pb.gz" "two.$c1.wall.pb.gz" "two.$c2.cpu.pb.gz" "two.$c2.wall.pb.gz"; do
    [ -s "$f" ] || fail "missing $f: $(ls two*)"
    grep -q "wrote .*$f" two.err || fail "record did not list $f: $(cat two.err)"
done
[ "$(ls two*.pb.gz | wc -l)" = 6 ] || fail "unexpected files: $(ls two*)"
pass "three processes, three files, each with its own function on top; --no-follow: one"
