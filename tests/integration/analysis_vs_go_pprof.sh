#!/bin/bash
# analysis_vs_go_pprof.sh — hotspur's text reports against `go tool pprof` on
# CPU and heap profiles written by a Go program (runtime/pprof, with pprof.Do
# labels) built here with Debian's golang-go: top, tree, peek, traces and list
# must print exactly what pprof prints for the same options (sample index,
# focus, ignore, hide, show, show-from, tagfocus, tagignore, granularity,
# trimming). Also: merge of two profiles equals pprof's merge of both.
source "$(dirname "$0")/lib.sh"
command -v go >/dev/null || fail "go (golang-go) is not installed"
export GOCACHE=$TMP/gocache GOPATH=$TMP/gopath HOME=$TMP GOFLAGS=-mod=mod GOTOOLCHAIN=local

mkdir -p goprog
cat > goprog/go.mod <<'GO'
module hsgoprog

go 1.19
GO
cat > goprog/main.go <<'GO'
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink []byte
var keep [][]byte

//go:noinline
func leafA(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

//go:noinline
func leafB(n int) int {
	s := 1
	for i := 0; i < n; i++ {
		s = s*31 + i
	}
	return s
}

//go:noinline
func recurse(d, n int) int {
	if d == 0 {
		return leafA(n)
	}
	return recurse(d-1, n) + 1
}

//go:noinline
func worker(ctx context.Context, n int) int {
	s := 0
	pprof.Do(ctx, pprof.Labels("kind", "alpha"), func(ctx context.Context) {
		s += recurse(3, n)
	})
	pprof.Do(ctx, pprof.Labels("kind", "beta"), func(ctx context.Context) {
		s += leafB(n)
	})
	return s
}

//go:noinline
func allocSmall() {
	for i := 0; i < 2000; i++ {
		sink = make([]byte, 1024)
		if i%10 == 0 {
			keep = append(keep, sink)
		}
	}
}

//go:noinline
func allocBig() {
	for i := 0; i < 200; i++ {
		sink = make([]byte, 64*1024)
		if i%4 == 0 {
			keep = append(keep, sink)
		}
	}
}

func main() {
	runtime.MemProfileRate = 4096
	cf, _ := os.Create(os.Args[1])
	pprof.StartCPUProfile(cf)
	deadline := time.Now().Add(1200 * time.Millisecond)
	s := 0
	for time.Now().Before(deadline) {
		s += worker(context.Background(), 200000)
	}
	pprof.StopCPUProfile()
	cf.Close()
	allocSmall()
	allocBig()
	runtime.GC()
	hf, _ := os.Create(os.Args[2])
	pprof.WriteHeapProfile(hf)
	hf.Close()
	if s == 42 {
		println(s)
	}
}
GO
(cd goprog && go build -o ../prog .) || fail "go build failed"
./prog cpu.pb.gz heap.pb.gz || fail "Go program failed"
./prog cpu2.pb.gz heap2.pb.gz || fail "Go program failed (2nd run)"

n=0
# compare REPORT "hotspur options" "pprof options" FILE
compare() {
    local report=$1 hopts=$2 gopts=$3 file=$4
    local tag="$report $hopts ($file)"
    # shellcheck disable=SC2086
    go tool pprof -$report $gopts $file > want.txt 2>/dev/null || fail "go tool pprof -$report $gopts failed"
    # shellcheck disable=SC2086
    "$HOTSPUR" $report $hopts $file > got.txt 2>err.txt || { cat err.txt >&2; fail "hotspur $tag exited $?"; }
    if ! diff -u want.txt got.txt > diff.txt; then
        head -40 diff.txt >&2
        fail "hotspur $tag differs from go tool pprof -$report $gopts"
    fi
    n=$((n+1))
}

# compare_re REPORT RE "hotspur options" "pprof options" FILE (peek, list)
compare_re() {
    local report=$1 re=$2 hopts=$3 gopts=$4 file=$5
    # shellcheck disable=SC2086
    go tool pprof "-$report=$re" $gopts $file > want.txt 2>/dev/null || fail "go tool pprof -$report=$re failed"
    # shellcheck disable=SC2086
    "$HOTSPUR" $report $hopts "$re" $file > got.txt 2>err.txt || { cat err.txt >&2; fail "hotspur $report $re exited $?"; }
    if ! diff -u want.txt got.txt > diff.txt; then
        head -40 diff.txt >&2
        fail "hotspur $report $hopts $re differs from go tool pprof -$report=$re $gopts"
    fi
    n=$((n+1))
}

for f in cpu.pb.gz; do
    for r in top tree traces; do
        compare $r "" "" $f
        compare $r "--focus=leafA" "-focus=leafA" $f
        compare $r "--ignore=leafB" "-ignore=leafB" $f
        compare $r "--hide=runtime" "-hide=runtime" $f
        compare $r "--show=main" "-show=main" $f
        compare $r "--show-from=worker" "-show_from=worker" $f
        compare $r "--tagfocus=kind=alpha" "-tagfocus=kind=alpha" $f
        compare $r "--tagignore=kind=alpha" "-tagignore=kind=alpha" $f
        compare $r "--lines" "-lines" $f
        compare $r "--files" "-files" $f
        compare $r "--addresses" "-addresses" $f
        compare $r "--sample-index=samples" "-sample_index=samples" $f
        compare $r "--focus=main --ignore=recurse --hide=pprof" "-focus=main -ignore=recurse -hide=pprof" $f
        compare $r "--prune-from=worker" "-prune_from=worker" $f
        compare $r "--prune-from=recurse --lines" "-prune_from=recurse -lines" $f
        compare $r "--noinlines" "-noinlines" $f
        compare $r "--noinlines --lines" "-noinlines -lines" $f
        compare $r "--noinlines --hide=leaf --prune-from=main" "-noinlines -hide=leaf -prune_from=main" $f
    done
    compare top "--cum" "-cum" $f
    compare top "--nodecount=4" "-nodecount=4" $f
    compare top "--nodefraction=0.1" "-nodefraction=0.1" $f
    compare tree "--nodecount=5" "-nodecount=5" $f
    compare tree "--nodefraction=0.05 --edgefraction=0.2" "-nodefraction=0.05 -edgefraction=0.2" $f
    compare_re peek "main.recurse" "" "" "$f"
    compare_re peek "leaf" "" "" "$f"
    compare_re peek 'main\.worker$' "" "" "$f"
    compare_re peek "leaf" "--lines" "-lines" "$f"
    compare_re peek "main" "--focus=leafB" "-focus=leafB" "$f"
    compare_re list "main.leafB" "" "" "$f"
    compare_re list "main.leaf" "--tagfocus=kind=beta" "-tagfocus=kind=beta" "$f"
done
compare_re peek "alloc" "--sample-index=alloc_space" "-sample_index=alloc_space" heap.pb.gz
compare_re list "main.alloc" "--sample-index=alloc_space" "-sample_index=alloc_space" heap.pb.gz

for si in alloc_space alloc_objects inuse_space inuse_objects 1; do
    for r in top tree traces; do
        compare $r "--sample-index=$si" "-sample_index=$si" heap.pb.gz
        compare $r "--sample-index=$si --focus=alloc" "-sample_index=$si -focus=alloc" heap.pb.gz
    done
    compare top "--sample-index=$si --tagfocus=bytes=64kb" "-sample_index=$si -tagfocus=bytes=64kb" heap.pb.gz
    compare top "--sample-index=$si --tagfocus=2kb:" "-sample_index=$si -tagfocus=2kb:" heap.pb.gz
    compare top "--sample-index=$si --tagignore=:1kb" "-sample_index=$si -tagignore=:1kb" heap.pb.gz
    compare top "--sample-index=$si --nodecount=3" "-sample_index=$si -nodecount=3" heap.pb.gz
    compare top "--sample-index=$si --show-from=alloc --lines" "-sample_index=$si -show_from=alloc -lines" heap.pb.gz
done
compare traces "--show-from=alloc --lines" "-show_from=alloc -lines" cpu.pb.gz
compare tree "--relative-percentages --focus=leafB" "-relative_percentages -focus=leafB" cpu.pb.gz
compare top "--cum --nodecount=5 --hide=alloc --addresses" "-cum -nodecount=5 -hide=alloc -addresses" heap.pb.gz

# --base subtracts, as pprof's -base (Scale(-1), merge, zero samples dropped)
# (tree and peek of a difference are not compared: pprof orders edges of
# equal |weight| and opposite sign by Go's map iteration, at random, and
# keeps some edges whose weights cancel; docs/analysis-reports.md)
for r in top traces; do
    compare $r "--base=cpu2.pb.gz" "-base=cpu2.pb.gz" cpu.pb.gz
    compare $r "--base=cpu2.pb.gz --focus=leaf --lines" "-base=cpu2.pb.gz -focus=leaf -lines" cpu.pb.gz
    compare $r "--sample-index=alloc_space --base=heap2.pb.gz" "-sample_index=alloc_space -base=heap2.pb.gz" heap.pb.gz
    compare $r "--sample-index=inuse_objects --base=heap2.pb.gz" "-sample_index=inuse_objects -base=heap2.pb.gz" heap.pb.gz
done
compare_re list "main.leafB" "--base=cpu2.pb.gz" "-base=cpu2.pb.gz" cpu.pb.gz
"$HOTSPUR" merge --base cpu2.pb.gz cpu.pb.gz -o delta.pb.gz || fail "merge --base failed"
go tool pprof -traces delta.pb.gz > got.txt 2>/dev/null || fail "pprof cannot read merge --base's output"
go tool pprof -traces -base cpu2.pb.gz cpu.pb.gz > want.txt 2>/dev/null
diff -u <(sed 1,3d want.txt) <(sed 1,3d got.txt) >&2 || fail "merge --base differs from pprof -base"

# value options: --unit, --divide-by, --mean, --drop-negative (pprof's -unit,
# -divide_by, -mean, -drop_negative)
for r in top tree; do
    for u in ms s us auto minimum hrs; do
        compare $r "--unit=$u" "-unit=$u" cpu.pb.gz
    done
    for u in MB kb B auto; do
        compare $r "--unit=$u --sample-index=alloc_space" "-unit=$u -sample_index=alloc_space" heap.pb.gz
    done
    compare $r "--divide-by=3" "-divide_by=3" cpu.pb.gz
    compare $r "--divide-by=0.25 --unit=ms" "-divide_by=0.25 -unit=ms" cpu.pb.gz
    compare $r "--divide-by=1000 --sample-index=alloc_space" "-divide_by=1000 -sample_index=alloc_space" heap.pb.gz
    compare $r "--mean" "-mean" cpu.pb.gz
    for si in alloc_space inuse_space; do
        compare $r "--mean --sample-index=$si" "-mean -sample_index=$si" heap.pb.gz
        compare $r "--mean --sample-index=$si --focus=alloc --lines" "-mean -sample_index=$si -focus=alloc -lines" heap.pb.gz
    done
    compare $r "--trim-path=/nowhere:$TMP/goprog --lines" "-trim_path=/nowhere:$TMP/goprog -lines" cpu.pb.gz
    compare $r "--trim-path=$TMP/ --files" "-trim_path=$TMP/ -files" cpu.pb.gz
done
compare top "--drop-negative --base=cpu2.pb.gz" "-drop_negative -base=cpu2.pb.gz" cpu.pb.gz
compare top "--drop-negative --base=heap2.pb.gz --sample-index=alloc_space" "-drop_negative -base=heap2.pb.gz -sample_index=alloc_space" heap.pb.gz
compare traces "--unit=ms" "-unit=ms" cpu.pb.gz
compare traces "--mean --sample-index=alloc_space" "-mean -sample_index=alloc_space" heap.pb.gz
compare traces "--divide-by=7" "-divide_by=7" cpu.pb.gz
compare traces "--trim-path=$TMP --lines" "-trim_path=$TMP -lines" cpu.pb.gz
compare_re list "main.leafB" "--unit=us --divide-by=2" "-unit=us -divide_by=2" cpu.pb.gz
compare_re list "main.alloc" "--mean --sample-index=alloc_space" "-mean -sample_index=alloc_space" heap.pb.gz
compare_re list "main.leafA" "--trim-path=$TMP --source-path=$TMP" "-trim_path=$TMP -source_path=$TMP" cpu.pb.gz
compare_re peek "leaf" "--mean --unit=ms" "-mean -unit=ms" cpu.pb.gz
# labels: --tagshow/--taghide, and the label report (pprof's -tags)
compare traces "--tagshow=kind" "-tagshow=kind" cpu.pb.gz
compare traces "--taghide=kin" "-taghide=kin" cpu.pb.gz
compare traces "--taghide=bytes --sample-index=alloc_space" "-taghide=bytes -sample_index=alloc_space" heap.pb.gz
compare top "--tagshow=kind --taghide=nothing" "-tagshow=kind -taghide=nothing" cpu.pb.gz
for f in cpu.pb.gz heap.pb.gz; do
    compare tags "" "" $f
    compare tags "--tagshow=k" "-tagshow=k" $f
done
compare tags "--focus=leafA" "-focus=leafA" cpu.pb.gz
for si in alloc_space inuse_objects; do
    compare tags "--sample-index=$si" "-sample_index=$si" heap.pb.gz
    compare tags "--sample-index=$si --unit=kb" "-sample_index=$si -unit=kb" heap.pb.gz
done
# the profile dump (pprof's -raw); of two profiles, after pprof's merge
compare raw "" "" cpu.pb.gz
compare raw "" "" heap.pb.gz
go tool pprof -raw cpu.pb.gz cpu2.pb.gz > want.txt 2>/dev/null
"$HOTSPUR" raw cpu.pb.gz cpu2.pb.gz > got.txt || fail "hotspur raw A B failed"
diff -u want.txt got.txt >&2 || fail "raw of two profiles differs from pprof's"
n=$((n+1))
# the profile's own drop_frames/keep_frames, applied on load (RemoveUninteresting):
# written into copies of the Go profiles (fields 7/8 and their strings appended)
setframes() {
    python3 - "$@" <<'PY'
import gzip, sys
def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1; r |= (c & 0x7f) << s; s += 7
        if c < 0x80: return r, i
def enc(v):
    o = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        if not v: o.append(c); return bytes(o)
        o.append(c | 0x80)
src, dst, frames = sys.argv[1], sys.argv[2], sys.argv[3:]
b = gzip.decompress(open(src, 'rb').read())
i = nstr = 0
while i < len(b):  # count the string table
    key, i = varint(b, i)
    wt = key & 7
    if wt == 0: _, i = varint(b, i)
    elif wt == 2:
        n, i = varint(b, i); i += n; nstr += (key >> 3) == 6
    elif wt == 1: i += 8
    elif wt == 5: i += 4
out = bytearray(b)
for field, s in zip((7, 8), frames):
    d = s.encode()
    out += b'\x32' + enc(len(d)) + d + bytes([field << 3]) + enc(nstr)
    nstr += 1
open(dst, 'wb').write(gzip.compress(bytes(out)))
PY
}
setframes cpu.pb.gz drop.pb.gz 'main\.recurse' || fail "cannot write drop_frames"
setframes cpu.pb.gz dropkeep.pb.gz 'main\..*' 'main\.worker' || fail "cannot write keep_frames"
setframes heap.pb.gz hdrop.pb.gz 'runtime\..*|compress.*' || fail "cannot write drop_frames"
for f in drop.pb.gz dropkeep.pb.gz; do
    for r in top tree traces raw; do
        compare $r "" "" $f
    done
done
compare top "--sample-index=alloc_space" "-sample_index=alloc_space" hdrop.pb.gz
compare traces "--sample-index=alloc_space" "-sample_index=alloc_space" hdrop.pb.gz
"$HOTSPUR" top --divide-by=0 cpu.pb.gz > /dev/null 2> err.txt && fail "--divide-by=0 accepted"
grep -q "zero divisor" err.txt || fail "no message for --divide-by=0"
"$HOTSPUR" traces --tagshow=nosuchkey cpu.pb.gz > /dev/null 2> err.txt || fail "traces --tagshow failed"
grep -q "TagShow expression matched no samples" err.txt || fail "no warning for a --tagshow matching nothing"

# graph --call-tree: the same nodes (flat, cum) and edges (weights) as
# pprof's -dot -call_tree (untrimmed: pprof's DOT trimming counts label
# nodelets and orders by entropy, hotspur's DOT does not)
dotvalues() {
    python3 - "$1" <<'PY'
import re, sys
ns, es = [], []
for line in open(sys.argv[1]):
    m = re.match(r'N\d+ \[label="(.*?)" id=', line)
    if m:
        lab = re.sub(r'\([^)]*\)', '', m.group(1))
        lab = re.sub(r'[^\s\\]*/', '', lab)  # directories: pprof labels show base names
        ns.append(' '.join(re.findall(r'(?<![\w.])(\d+(?:\.\d+)?(?:ns|us|ms|s|B|kB|MB|GB)?)(?![\w.])', lab)))
    m = re.match(r'N\d+ -> N\d+ \[label=" ?([^"\\]*)', line)
    if m:
        es.append(m.group(1))
# values in one unit, 2 significant digits: pprof prints one unit for the
# whole graph (0.42s), hotspur's DOT scales each value (420ms)
F = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "": 1}
def norm(tok):
    m = re.fullmatch(r'(\d+(?:\.\d+)?)([a-zA-Z]*)', tok)
    if not m or m.group(2) not in F:
        return tok
    v = float(m.group(1)) * F[m.group(2)]
    return f"{float(f'{v:.2g}'):g}"
ns = [' '.join(norm(t) for t in n.split()) for n in ns]
es = [norm(e.strip()) for e in es]
print(len(ns), "nodes:", ' | '.join(sorted(ns)))
print(len(es), "edges:", ' | '.join(sorted(es)))
PY
}
for args in "" "--focus=leaf" "--lines --hide=runtime"; do
    # shellcheck disable=SC2086
    go tool pprof -dot -call_tree -nodecount=1000 $(echo "$args" | sed 's/--/-/g') cpu.pb.gz > want.dot 2>/dev/null
    # shellcheck disable=SC2086
    "$HOTSPUR" graph --call-tree --nodecount=1000 $args -o got.dot cpu.pb.gz 2>/dev/null || fail "graph --call-tree $args failed"
    dotvalues want.dot > want.txt; dotvalues got.dot > got.txt
    diff -u want.txt got.txt >&2 || fail "graph --call-tree $args: nodes/edges differ from pprof -dot -call_tree"
    n=$((n+1))
done
"$HOTSPUR" graph -o plain.dot cpu.pb.gz 2>/dev/null
"$HOTSPUR" graph --call-tree -o tree.dot cpu.pb.gz 2>/dev/null || fail "graph --call-tree failed"
# recurse(3) calls itself 3 times: 4 call-tree nodes, 1 graph node
[ "$(grep -c 'label="main.recurse' tree.dot)" = 4 ] || fail "call tree: main.recurse should be 4 nodes"
[ "$(grep -c 'label="main.recurse' plain.dot)" = 1 ] || fail "graph: main.recurse should be one node"

"$HOTSPUR" graph --compact-labels -o compact.dot cpu.pb.gz 2>/dev/null || fail "graph --compact-labels failed"
grep -q 'Type: cpu' plain.dot || fail "graph legend lacks its type line"
if grep -q 'Type: cpu' compact.dot; then fail "--compact-labels kept the type line"; fi
grep -q 'Showing nodes accounting for' compact.dot || fail "--compact-labels dropped the 'Showing nodes' line"

# disasm: objdump's instructions annotated as pprof's -disasm annotates Go's
# (the instruction text differs: AT&T from binutils, Go syntax from pprof);
# every routine header, instruction address and flat/cum value must agree
disasm_values() { sed -E 's/^( *[^ ]+ +[^ ]+ +[0-9a-f]+):.*/\1/' "$1" | grep -v '^ *;'; }
for args in "main.leaf|" "main.recurse|" "main.|--focus=leafB" "main.alloc|--sample-index=alloc_space" "main.alloc|--sample-index=inuse_objects"; do
    re=${args%%|*} opts=${args#*|}
    f=cpu.pb.gz; case $re in main.alloc) f=heap.pb.gz;; esac
    # shellcheck disable=SC2086
    go tool pprof "-disasm=$re" $(echo "$opts" | sed 's/--/-/;s/-index/_index/') $f > want.txt 2>/dev/null || fail "go tool pprof -disasm=$re failed"
    # shellcheck disable=SC2086
    "$HOTSPUR" disasm $opts "$re" $f > got.txt 2>err.txt || { cat err.txt >&2; fail "hotspur disasm $re exited $?"; }
    # every line with a value (and every header) equal, in order; every
    # address pprof shows shown, up to where Go's disassembler loses track
    # ("?": it stops one byte short of a symbol's end, so it also omits a
    # final 1-byte RET, and garbles the last jump; objdump shows both)
    awk '/^ROUTINE/ { bad = 0 } / [0-9a-f]+: \?$/ { bad = 1 } !bad' want.txt > want.ok
    disasm_values want.ok > want.v; disasm_values got.txt > got.v
    diff -u <(grep -v '^ *\. *\. ' want.v) <(grep -v '^ *\. *\. ' got.v) >&2 ||
        fail "hotspur disasm $opts $re: values differ from go tool pprof -disasm"
    [ -z "$(comm -23 <(sort want.v) <(sort got.v))" ] || fail "hotspur disasm $opts $re: instructions missing"
    [ "$(wc -l < got.v)" -gt 5 ] || fail "disasm $re printed almost nothing"
    n=$((n+1))
done
rc=0; "$HOTSPUR" disasm nosuchfunction cpu.pb.gz > /dev/null 2>err.txt || rc=$?
[ "$rc" = 2 ] && grep -q "no matches found for regexp: nosuchfunction" err.txt || fail "disasm of no function: exit $rc, $(cat err.txt)"

# --diff-base (pprof's -diff_base): the base subtracted with its samples
# marked pprof::base, percentages of the base's total; every text view
# pprof orders two edges (or label values) of equal |weight| and opposite
# sign at random (Go map order): runs of such lines are sorted on both sides
# before tree, peek and tags are compared
tie_sort() {
    python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
def key(l):  # the |value| of a tree/peek edge line or a tags value line
    m = re.match(r' {20,}-?(\S+) ', l) or re.match(r' {2,}-?(\d[\d.]*[a-zA-Z]*)(?: \([^)]*\))?:', l)
    return m.group(1) if m else None
out, i = [], 0
while i < len(lines):
    j = i
    while j + 1 < len(lines) and key(lines[i]) is not None and key(lines[j + 1]) == key(lines[i]):
        j += 1
    out += sorted(lines[i:j + 1]); i = j + 1
print('\n'.join(out))
PY
}
compare_ties() { # REPORT RE "hotspur options" "pprof options" FILE (RE "" for tree)
    local report=$1 re=$2 hopts=$3 gopts=$4 file=$5
    # shellcheck disable=SC2086
    go tool pprof -$report${re:+=$re} $gopts $file > want.txt 2>/dev/null || fail "go tool pprof -$report $gopts failed"
    # shellcheck disable=SC2086
    "$HOTSPUR" $report $hopts ${re:+"$re"} $file > got.txt 2>err.txt || { cat err.txt >&2; fail "hotspur $report $hopts exited $?"; }
    diff -u <(tie_sort want.txt) <(tie_sort got.txt) >&2 || fail "hotspur $report $hopts $re differs from go tool pprof -$report $gopts"
    n=$((n+1))
}
compare_ties tags "" "--diff-base=cpu2.pb.gz" "-diff_base=cpu2.pb.gz" cpu.pb.gz
compare_ties tags "" "--diff-base=heap2.pb.gz --sample-index=alloc_space" "-diff_base=heap2.pb.gz -sample_index=alloc_space" heap.pb.gz
for r in top traces; do
    compare $r "--diff-base=cpu2.pb.gz" "-diff_base=cpu2.pb.gz" cpu.pb.gz
    compare $r "--diff-base=cpu2.pb.gz --focus=leaf --lines" "-diff_base=cpu2.pb.gz -focus=leaf -lines" cpu.pb.gz
    compare $r "--diff-base=heap2.pb.gz --sample-index=alloc_space" "-diff_base=heap2.pb.gz -sample_index=alloc_space" heap.pb.gz
done
compare_ties tree "" "--diff-base=cpu2.pb.gz" "-diff_base=cpu2.pb.gz" cpu.pb.gz
compare_ties tree "" "--diff-base=cpu2.pb.gz --focus=leaf --lines" "-diff_base=cpu2.pb.gz -focus=leaf -lines" cpu.pb.gz
compare_ties tree "" "--diff-base=heap2.pb.gz --sample-index=alloc_space" "-diff_base=heap2.pb.gz -sample_index=alloc_space" heap.pb.gz
compare top "--diff-base=cpu2.pb.gz --drop-negative --cum" "-diff_base=cpu2.pb.gz -drop_negative -cum" cpu.pb.gz
compare_ties peek "leaf" "--diff-base=cpu2.pb.gz" "-diff_base=cpu2.pb.gz" cpu.pb.gz
compare_re list "main.leaf" "--diff-base=cpu2.pb.gz" "-diff_base=cpu2.pb.gz" cpu.pb.gz
"$HOTSPUR" top --base cpu2.pb.gz --diff-base cpu2.pb.gz cpu.pb.gz > /dev/null 2>&1 && fail "--base with --diff-base accepted"

# several files are merged, as pprof merges several sources
go tool pprof -top cpu.pb.gz cpu2.pb.gz > want.txt 2>/dev/null
"$HOTSPUR" top cpu.pb.gz cpu2.pb.gz > got.txt || fail "hotspur top A B failed"
diff -u want.txt got.txt >&2 || fail "top of two profiles differs from pprof's"
"$HOTSPUR" merge cpu.pb.gz cpu2.pb.gz -o merged.pb.gz || fail "merge failed"
go tool pprof -traces merged.pb.gz > got.txt 2>/dev/null || fail "pprof cannot read the merged profile"
go tool pprof -traces cpu.pb.gz cpu2.pb.gz > want.txt 2>/dev/null
diff -u want.txt got.txt >&2 || fail "merged profile differs from pprof's merge"
# list: a clear note when the source is not where the profile says, and
# --source-path finds it elsewhere (same listing as pprof's with the source)
go tool pprof -list=main.leafB cpu.pb.gz > want.txt 2>/dev/null
mkdir -p elsewhere && mv goprog/main.go elsewhere/main.go
"$HOTSPUR" list main.leafB cpu.pb.gz > got.txt 2>err.txt || fail "list without source exited $?"
grep -q "Source not found: .*main.go (use --source-path DIR" got.txt || { cat got.txt; fail "no note for missing source"; }
"$HOTSPUR" list main.leafB --source-path "$TMP/elsewhere" cpu.pb.gz > got.txt || fail "list --source-path exited $?"
diff -u want.txt got.txt >&2 || fail "list --source-path differs from pprof's listing"
mv elsewhere/main.go goprog/main.go
pass "$n reports identical to go tool pprof"
