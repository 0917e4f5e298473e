#!/bin/bash
# reports_pprof_details.sh — details where hotspur's reports used to differ
# from pprof (issue 14's "Wrong" list), each checked against `go tool pprof`
# or the file itself:
#  - `list` starts the window at the function's start_line (two functions in
#    one file: the second's listing must not show the first's lines);
#  - file paths are cleaned as Go's filepath.Clean (debug info with
#    "./sub/../." prefixes) in --lines, --files and list headers;
#  - `graph -o x.png|pdf|gif|ps|svg` renders with dot in that format, an
#    unknown extension is refused (exit 2, nothing written);
#  - single-dash pprof spellings (-cum, -nodecount=3, -focus=RE) work;
#    pprof's report flags (-tags, -svg) are refused, naming the command;
#  - an output path that is a directory or in a missing directory: exit 2;
#    stdout on a full disk: exit 1.
source "$(dirname "$0")/lib.sh"
command -v go >/dev/null || fail "go (golang-go) is not installed"
command -v dot >/dev/null || fail "dot (graphviz) is not installed"
export HOME=$TMP GOCACHE=$TMP/gocache

cat > two.c <<'C'
volatile double sink;
__attribute__((noinline)) void compute_a(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    sink = x;
}

__attribute__((noinline)) void compute_b(long n)
{
    double x = 1;
    for (long i = 0; i < n; i++)
        x *= 1.0000001;
    sink = x;
}

int main(void)
{
    compute_a(150000000);
    compute_b(150000000);
    return 0;
}
C
# Debug info names the file "./sub/.././two.c": pprof shows "two.c".
cc -O1 -g -fdebug-prefix-map="$TMP=./sub/../." -o two two.c
"$HOTSPUR" record -o two.pb.gz -- ./two 2>/dev/null
gp() { go tool pprof "$@" 2>/dev/null; }

for fn in compute_a compute_b; do
    "$HOTSPUR" list "$fn" --source-path "$TMP" two.pb.gz > h.$fn.txt
    gp -list "$fn" -source_path "$TMP" two.pb.gz > g.$fn.txt
    diff g.$fn.txt h.$fn.txt || fail "list $fn differs from go tool pprof"
done
grep -q 'compute_b(long n)' h.compute_b.txt || fail "list compute_b lacks its own first line"
if grep -q 'compute_a' h.compute_b.txt; then fail "list compute_b shows compute_a's lines"; fi
pass "list windows start at start_line, as pprof's"

# (--files is not compared: pprof splits one file into a row per function
# there, which hotspur does not on purpose, docs/analysis-reports.md)
"$HOTSPUR" top --lines two.pb.gz > h.lines.txt
gp -top -lines two.pb.gz > g.lines.txt
diff <(sed 1,2d g.lines.txt) <(sed 1,2d h.lines.txt) || fail "top --lines differs from go tool pprof"
"$HOTSPUR" top --files two.pb.gz > h.files.txt
grep -q ' two\.c$' h.files.txt || fail "top --files lacks the cleaned two.c row"
if grep -Eq '( \./|/\./|//|sub/)' h.lines.txt h.files.txt; then fail "uncleaned paths in --lines/--files"; fi
grep -q 'ROUTINE =* compute_b in two.c$' h.compute_b.txt || fail "list header path not cleaned"
pass "paths cleaned as filepath.Clean (--lines, --files, list)"

for ext in png pdf gif ps svg dot; do
    "$HOTSPUR" graph -o g.$ext two.pb.gz 2>/dev/null || fail "graph -o g.$ext failed"
done
file g.png | grep -q 'PNG image' || fail "g.png is not a PNG: $(file g.png)"
file g.pdf | grep -q 'PDF document' || fail "g.pdf is not a PDF"
file g.gif | grep -q 'GIF image' || fail "g.gif is not a GIF"
head -c 4 g.ps | grep -q '%!PS' || fail "g.ps is not PostScript"
grep -q '<svg' g.svg || fail "g.svg is not SVG"
head -1 g.dot | grep -q '^digraph' || fail "g.dot is not DOT"
rc=0; "$HOTSPUR" graph -o g.xyz two.pb.gz 2>err.txt || rc=$?
[ "$rc" = 2 ] || fail "graph -o g.xyz: exit $rc, want 2"
[ ! -e g.xyz ] || fail "graph -o g.xyz wrote a file"
grep -q 'cannot write .xyz' err.txt || fail "graph -o g.xyz: unclear message: $(cat err.txt)"
pass "graph renders png/pdf/gif/ps/svg with dot; unknown extensions refused"

"$HOTSPUR" top --cum --nodecount 3 two.pb.gz > long.txt
"$HOTSPUR" top -cum -nodecount=3 two.pb.gz > short.txt
diff long.txt short.txt || fail "-cum -nodecount=3 differs from --cum --nodecount 3"
"$HOTSPUR" top -focus=compute_a two.pb.gz > f1.txt
"$HOTSPUR" top --focus compute_a two.pb.gz > f2.txt
diff f1.txt f2.txt || fail "-focus=RE differs from --focus RE"
"$HOTSPUR" top -n 2 two.pb.gz | tail -2 | grep -q compute || fail "-n 2 no longer works"
"$HOTSPUR" top -n2 two.pb.gz | tail -2 | grep -q compute || fail "-n2 no longer works"
# pprof's report flags name the hotspur command (getopt took --tags for an
# abbreviation of --tagshow and then said "missing arguments")
for spec in "--tags|pprof's -tags report is \`hotspur tags\`" "-tags|\`hotspur tags\`" \
            "-svg|hotspur graph -o FILE.svg" "-callgrind|hotspur convert --to callgrind"; do
    opt=${spec%%|*}
    rc=0; "$HOTSPUR" top "$opt" two.pb.gz >out.txt 2>err.txt || rc=$?
    [ "$rc" = 2 ] || fail "top $opt: exit $rc, want 2"
    [ ! -s out.txt ] || fail "top $opt printed a report"
    grep -qF -- "${spec#*|}" err.txt || fail "top $opt: unclear message: $(cat err.txt)"
done
"$HOTSPUR" top --cu two.pb.gz >abbrev.txt || fail "--cu (an abbreviation of --cum) refused"
diff long.txt <("$HOTSPUR" top --cu --nodec 3 two.pb.gz) || fail "--cu --nodec 3 differs from --cum --nodecount 3"
pass "single-dash pprof spellings; pprof report flags refused with the command to use"

mkdir -p adir
for cmd in "flame -o adir" "flame -o nodir/x.html" "graph -o adir" "convert --to collapsed -o adir" \
           "convert --to collapsed -o nodir/x" "merge -o adir" "merge -o nodir/x.pb.gz" "top -o adir" \
           "diff --flame -o adir two.pb.gz"; do
    rc=0
    # shellcheck disable=SC2086
    "$HOTSPUR" $cmd two.pb.gz 2>/dev/null || rc=$?
    [ "$rc" = 2 ] || fail "hotspur $cmd: exit $rc, want 2"
done
[ -z "$(ls adir)" ] || fail "something was written into adir: $(ls adir)"
pass "bad output paths exit 2"
# stdout that cannot be written (a full disk): exit 1 with a message, also
# when the whole report fits in stdio's buffer and fails only at the final
# flush
for cmd in top tree "list main" "convert --to collapsed -o -" "flame -o -"; do
    rc=0
    # shellcheck disable=SC2086
    "$HOTSPUR" $cmd two.pb.gz >/dev/full 2>err.txt || rc=$?
    [ "$rc" = 1 ] && grep -Eq "error writing output|write error" err.txt ||
        fail "hotspur $cmd >/dev/full: exit $rc, $(cat err.txt)"
done
# ... and when the report is larger than stdio's buffer, so that writing
# fails in the middle of it (3000 stacks: every report is over 4 KiB), on
# stdout and to -o /dev/full alike
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "main;f%d;g%d;h%d %d\n", i % 97, i, i * 7 % 1000, i + 1 }' > big.folded
"$HOTSPUR" convert --from collapsed big.folded --to pprof -o big.pb.gz
for cmd in "top --nodecount 100000" tree traces "list ." "peek ." raw "diff big.pb.gz" \
           "flame -o -" "graph" "convert --to callgrind -o -" "convert --to speedscope -o -"; do
    for to in stdout file; do
        rc=0
        # shellcheck disable=SC2086
        if [ $to = stdout ]; then "$HOTSPUR" $cmd big.pb.gz >/dev/full 2>err.txt || rc=$?
        else "$HOTSPUR" ${cmd% -o -} -o /dev/full big.pb.gz >/dev/null 2>err.txt || rc=$?; fi
        [ "$rc" = 1 ] && grep -Eq "error writing output|write error" err.txt ||
            fail "hotspur $cmd (a large report) to /dev/full ($to): exit $rc, $(cat err.txt)"
    done
done
pass "an unwritable stdout exits 1"

# Every text report reads every input flame reads: collapsed stacks and
# perf script text, detected by content.
printf 'main;a;b 10\nmain;c 5\n' > x.folded
printf 'main;a;b 4\nmain;c 9\n' > y.folded
"$HOTSPUR" diff x.folded y.folded > d.txt || fail "diff of two folded files failed"
grep -Eq '^ +10 +4 +-6 +-60\.00% +b$' d.txt || fail "diff of folded files: $(cat d.txt)"
"$HOTSPUR" merge x.folded y.folded -o m.pb.gz 2>/dev/null || fail "merge of folded files failed"
"$HOTSPUR" top m.pb.gz | grep -Eq '^ +14 50\.00% .* b$' || fail "merged folded files: wrong b"
for cmd in top peek:b tree traces; do
    # shellcheck disable=SC2046
    "$HOTSPUR" ${cmd%%:*} $([ "$cmd" != "${cmd#*:}" ] && echo "${cmd#*:}") x.folded > /dev/null ||
        fail "hotspur ${cmd%%:*} cannot read collapsed stacks"
done
"$HOTSPUR" top "$SRC/tests/data/perf-script-busy.txt" | grep -q ' spin$' ||
    fail "top cannot read perf script text"
printf 'main;a 1.5\nmain;b 0.5\n' > frac.folded
"$HOTSPUR" top frac.folded | grep -Eq '^ +1\.50 75\.00% .* a$' || fail "fractional counts: $("$HOTSPUR" top frac.folded)"
# a file with fractional counts against one with whole counts: brought to
# the same unit (count/10), so diff, merge and --base compare them
"$HOTSPUR" diff x.folded frac.folded > fd.txt 2>err.txt || fail "diff of whole and fractional counts: $(cat err.txt)"
grep -Eq '^ +10 +0\.50 +-9\.50 +-95\.00% +b$' fd.txt && grep -Eq '^ +0 +1\.50 +\+1\.50 +new +a$' fd.txt ||
    fail "diff of whole and fractional counts: $(cat fd.txt)"
"$HOTSPUR" merge x.folded frac.folded -o mf.pb.gz 2>/dev/null || fail "merge of whole and fractional counts failed"
"$HOTSPUR" top mf.pb.gz | grep -Eq '^ +10\.50 +.* b$' || fail "merged whole and fractional counts: $("$HOTSPUR" top mf.pb.gz)"
"$HOTSPUR" top --base frac.folded x.folded | grep -Eq '^ +-1\.50 .* a$' ||
    fail "--base of fractional counts: $("$HOTSPUR" top --base frac.folded x.folded)"
printf 'main;a 1\nmain;b -2\n' > neg.folded
rc=0; "$HOTSPUR" top neg.folded 2>err.txt || rc=$?
[ "$rc" = 2 ] && grep -q 'line 2: negative count' err.txt || fail "negative count: exit $rc, $(cat err.txt)"
pass "every report reads collapsed stacks and perf script text"
