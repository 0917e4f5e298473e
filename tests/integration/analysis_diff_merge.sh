#!/bin/bash
# analysis_diff_merge.sh — diff and merge on profiles with known content
# (collapsed stacks converted to pprof): a profile diffed with itself is all
# zero; known A and B give the known deltas, and the same deltas as
# `go tool pprof -top -diff_base=A B`; --normalize compares shapes; merge
# sums; and the analysis commands fail cleanly (one line, exit 2) on bad
# regexes, unknown options, unreadable and corrupt files.
source "$(dirname "$0")/lib.sh"

cat > a.txt <<'TXT'
main;work;spin 30
main;work 10
main;rec;rec;rec;spin 20
main;alloc 40
TXT
cat > b.txt <<'TXT'
main;work;spin 60
main;work 10
main;rec;rec;rec;spin 40
main;fresh 5
TXT
"$HOTSPUR" convert --from collapsed --to pprof -o a.pb.gz a.txt || fail "convert a"
"$HOTSPUR" convert --from collapsed --to pprof -o b.pb.gz b.txt || fail "convert b"

# --- diff of a profile with itself: every delta is zero
"$HOTSPUR" diff a.pb.gz a.pb.gz > self.txt || fail "diff self exited $?"
grep -q "delta: 0 (0%)" self.txt || { cat self.txt; fail "self diff total not zero"; }
rows=$(awk 'f{print} /delta%/{f=1}' self.txt)
[ -n "$rows" ] || fail "self diff has no rows"
echo "$rows" | awk '$3 != "0" || $4 != "0%" {bad=1} END {exit bad}' || { cat self.txt; fail "self diff has a nonzero delta"; }
"$HOTSPUR" diff --cum a.pb.gz a.pb.gz | awk 'f && ($3 != "0") {bad=1} /delta%/{f=1} END{exit bad}' || fail "self diff --cum nonzero"

# --- known deltas (flat): spin +50, alloc -40 (gone), fresh +5 (new), work 0
"$HOTSPUR" diff a.pb.gz b.pb.gz > ab.txt || fail "diff a b exited $?"
cat ab.txt
row() { awk -v n="$1" '$NF == n {print $1, $2, $3, $4}' ab.txt; }
[ "$(row spin)" = "50 100 +50 +100.00%" ] || fail "spin row: $(row spin)"
[ "$(row alloc)" = "40 0 -40 gone" ] || fail "alloc row: $(row alloc)"
[ "$(row fresh)" = "0 5 +5 new" ] || fail "fresh row: $(row fresh)"
[ "$(row work)" = "10 10 0 0%" ] || fail "work row: $(row work)"
grep -q "Base total: 100, new total: 115, delta: +15 (+15.00%)" ab.txt || fail "diff totals"
# first row is the largest change
[ "$(awk 'f{print $NF; exit} /delta%/{f=1}' ab.txt)" = spin ] || fail "diff not sorted by |delta|"
# cum: rec 20 -> 40 (recursion counted once)
"$HOTSPUR" diff --cum a.pb.gz b.pb.gz > abc.txt || fail "diff --cum"
[ "$(awk '$NF == "rec" {print $1, $2, $3}' abc.txt)" = "20 40 +20" ] || { cat abc.txt; fail "rec cum delta"; }
# filters apply to both sides
"$HOTSPUR" diff --focus=rec a.pb.gz b.pb.gz > abf.txt || fail "diff --focus"
[ "$(awk '$NF == "spin" {print $1, $2, $3}' abf.txt)" = "20 40 +20" ] || { cat abf.txt; fail "focused diff"; }

# --- the same deltas as pprof's -diff_base
if command -v go >/dev/null; then
    export GOCACHE=$TMP/gocache HOME=$TMP
    go tool pprof -top -nodefraction=0 -diff_base=a.pb.gz b.pb.gz 2>/dev/null |
        awk 'f && $1 != "0" {print $NF, $1} /flat%/ {f=1}' | sort > want.txt
    awk 'f && $3 != "0" {d=$3; sub(/^\+/, "", d); print $NF, d} /delta%/ {f=1}' ab.txt | sort > got.txt
    diff -u want.txt got.txt || fail "deltas differ from go tool pprof -diff_base"
fi

# --- normalize: B scaled to A's total (100/115)
"$HOTSPUR" diff --normalize a.pb.gz b.pb.gz > abn.txt || fail "diff --normalize"
grep -q "new total: 100 (normalized to base)" abn.txt || { cat abn.txt; fail "normalized total"; }

# --- merge sums identical stacks
"$HOTSPUR" merge a.pb.gz b.pb.gz -o m.pb.gz || fail "merge"
"$HOTSPUR" top m.pb.gz > mt.txt || fail "top of merged"
grep -q "of 215 total" mt.txt || { cat mt.txt; fail "merged total"; }
[ "$(awk '$NF == "spin" {print $1, $4}' mt.txt)" = "150 150" ] || { cat mt.txt; fail "merged spin"; }
"$HOTSPUR" merge --focus=fresh a.pb.gz b.pb.gz -o mf.pb.gz || fail "merge --focus"
"$HOTSPUR" top mf.pb.gz | grep -q "of 5 total" || fail "filtered merge"

# --- errors: one line on stderr, exit 2, never a crash
printf 'not a profile at all' > corrupt.pb
head -c 20 a.pb.gz > truncated.pb.gz
check_err() {
    local rc=0
    "$HOTSPUR" "$@" > out.txt 2> err.txt || rc=$?
    [ "$rc" = 2 ] || { cat err.txt; fail "'$*' exited $rc, want 2"; }
    [ "$(wc -l < err.txt)" = 1 ] || { cat err.txt; fail "'$*' printed $(wc -l < err.txt) lines on stderr"; }
}
for cmd in top tree traces; do
    check_err $cmd --focus='(' a.pb.gz
    check_err $cmd --tagfocus='k=[' a.pb.gz
    check_err $cmd --bogus a.pb.gz
    check_err $cmd nosuchfile.pb.gz
    check_err $cmd corrupt.pb
    check_err $cmd truncated.pb.gz
    check_err $cmd --sample-index=nosuch a.pb.gz
    check_err $cmd
done
check_err peek '(' a.pb.gz
check_err peek 'nomatch' a.pb.gz
check_err list '[' a.pb.gz
check_err list 'nomatch' a.pb.gz
check_err diff a.pb.gz
check_err diff a.pb.gz corrupt.pb
check_err diff --nodecount=x a.pb.gz b.pb.gz
check_err merge a.pb.gz b.pb.gz
check_err merge a.pb.gz corrupt.pb -o x.pb.gz
check_err traces --nodecount=3 a.pb.gz
check_err top --lines --files a.pb.gz
for cmd in top peek list tree traces diff merge; do
    "$HOTSPUR" $cmd --help > help.txt || fail "$cmd --help exited $?"
    grep -q "usage: hotspur $cmd" help.txt || fail "$cmd --help has no usage line"
done
"$HOTSPUR" top --help | grep -q -- "--tagfocus" || fail "top --help lacks the filters"
pass "diff, merge and errors"
