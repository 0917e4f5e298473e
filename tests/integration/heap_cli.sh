# heap_cli.sh — `hotspur record` file naming with heap profiles and its
# argument checks: one type writes exactly -o (plus OUT.peak.pb.gz and with
# --leaks OUT.leaks.pb.gz); several types carry their type in every name
# (y.cpu.pb.gz, y.heap.pb.gz, y.heap.peak.pb.gz); no type named means
# --cpu only; a bad --heap-rate is refused with exit 2 and one line.
source "$(dirname "$0")/lib.sh"

files() { ls -1 "$1" | sort | tr '\n' ' '; }
prog=("$PROGS/heap_sites" exact)

mkdir one && "$HOTSPUR" record --heap -o one/x.pb.gz -- "${prog[@]}" > /dev/null 2> one.err
[ "$(files one)" = "x.pb.gz x.peak.pb.gz " ] || fail "--heap -o x.pb.gz wrote: $(files one)"
grep -q "wrote .*one/x.pb.gz" one.err && grep -q "wrote .*one/x.peak.pb.gz" one.err ||
    fail "the written files are not listed on stderr: $(cat one.err)"
"$HOTSPUR" top one/x.pb.gz | grep -q '^Type: inuse_space' || fail "x.pb.gz's default type is not inuse_space"

mkdir leaks && "$HOTSPUR" record --heap --leaks -o leaks/x.pb.gz -- "${prog[@]}" > /dev/null 2>&1
[ "$(files leaks)" = "x.leaks.pb.gz x.pb.gz x.peak.pb.gz " ] || fail "--heap --leaks wrote: $(files leaks)"

mkdir two && "$HOTSPUR" record --cpu --heap -o two/y.pb.gz -- "${prog[@]}" > /dev/null 2>&1
[ "$(files two)" = "y.cpu.pb.gz y.heap.pb.gz y.heap.peak.pb.gz " ] || fail "--cpu --heap wrote: $(files two)"
"$HOTSPUR" top two/y.cpu.pb.gz | grep -q '^Type: cpu' || fail "y.cpu.pb.gz is not a CPU profile"
"$HOTSPUR" top two/y.heap.pb.gz | grep -q '^Type: inuse_space' || fail "y.heap.pb.gz is not a heap profile"

mkdir three && "$HOTSPUR" record --cpu --heap --leaks -o three/z.pb.gz -- "${prog[@]}" > /dev/null 2>&1
[ "$(files three)" = "z.cpu.pb.gz z.heap.leaks.pb.gz z.heap.pb.gz z.heap.peak.pb.gz " ] ||
    fail "--cpu --heap --leaks wrote: $(files three)"

mkdir dflt && (cd dflt && "$HOTSPUR" record -- "${prog[@]}" > /dev/null 2>&1)
[ "$(files dflt)" = "hotspur.pb.gz " ] || fail "no type named wrote: $(files dflt)"
"$HOTSPUR" top dflt/hotspur.pb.gz | grep -q '^Type: cpu' || fail "the default profile is not CPU"

mkdir hdflt && (cd hdflt && "$HOTSPUR" record --heap -- "${prog[@]}" > /dev/null 2>&1)
[ "$(files hdflt)" = "hotspur.pb.gz hotspur.peak.pb.gz " ] || fail "--heap without -o wrote: $(files hdflt)"

# --heap-rate takes a positive byte count
mkdir bad
for rate in abc -5 12x "" 1.5 99999999999999999999999; do
    rc=0
    "$HOTSPUR" record --heap --heap-rate "$rate" -o bad/b.pb.gz -- "${prog[@]}" > bad.out 2> bad.err || rc=$?
    [ "$rc" = 2 ] || fail "--heap-rate '$rate': exit $rc, want 2"
    [ "$(wc -l < bad.err)" = 1 ] || fail "--heap-rate '$rate': want a one-line error, got: $(cat bad.err)"
    [ ! -s bad.out ] || fail "--heap-rate '$rate': the program ran"
done
[ -z "$(ls bad)" ] || fail "a refused --heap-rate wrote files: $(files bad)"
echo "e.g.: $(cat bad.err)"
# and a good one is honoured: the period is the rate
"$HOTSPUR" record --heap --heap-rate 4096 -o rate.pb.gz -- "${prog[@]}" > /dev/null 2>&1
go tool pprof -raw rate.pb.gz 2>/dev/null | grep -q '^Period: 4096$' || fail "--heap-rate 4096: the period is not 4096"
pass "record --heap file names and --heap-rate checks"
