# convert_exports.sh — the exporters checked against real peers and against
# `hotspur top` on the same profiles:
#  - callgrind_annotate (valgrind) reads our callgrind export; its program
#    total and every per-function self cost equal top's total and flat;
#  - folded (collapsed) output sums to the profile total;
#  - collapsed -> pprof -> collapsed is identical (sorted);
#  - speedscope JSON parses (python3 -m json.tool) and its weights sum to the
#    total, every sample's frame indices are valid;
#  - graph: the DOT renders with Graphviz, -o x.svg gives an SVG;
#  - bad input: one-line error, exit 2.
# Profiles: a folded fixture with awkward names, a perf script fixture, and
# a CPU profile recorded live by our agent (counts: --sample-index samples).
source "$(dirname "$0")/lib.sh"
command -v callgrind_annotate >/dev/null || fail "callgrind_annotate (valgrind) is not installed"

# speedscope's JSON schema, from its npm package (cached next to the test dirs)
SCHEMA=$TMP/../speedscope-schema-1.20.0.json
if [ ! -s "$SCHEMA" ]; then
    (cd "$TMP" && timeout 120 npm pack --silent speedscope@1.20.0 > /dev/null 2>&1 &&
        tar xzf speedscope-1.20.0.tgz package/dist/release/file-format-schema.json &&
        mv package/dist/release/file-format-schema.json "$SCHEMA") ||
        fail "cannot get speedscope's file-format schema from npm (npm pack speedscope@1.20.0)"
fi
"$HOTSPUR" convert --from collapsed "$SRC/tests/data/stacks.folded" --to pprof -o folded.pb.gz
"$HOTSPUR" convert "$SRC/tests/data/perf-script-busy.txt" --to pprof -o perf.pb.gz
"$HOTSPUR" record -o rec.pb.gz -- "$PROGS/cpu_split" single 600 2>/dev/null
for f in folded perf rec; do cp "$f.pb.gz" "$f.in.pb.gz"; done

top_total() { # FILE -> the report total (count sample types only)
    "$HOTSPUR" top --sample-index samples "$1" | sed -n 's/.* of \([0-9]*\) total.*/\1/p'
}
top_flat() { # FILE -> "name<TAB>flat" for every function with flat != 0, sorted
    # (top's "f (inline)" row, the samples where f was an inlined frame, is
    # f's in callgrind, which has no such split: summed under f)
    "$HOTSPUR" top --sample-index samples --nodefraction 0 "$1" |
        awk '/^ *flat  flat%/ { on = 1; next } on && $1 != "0" {
                 name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, "", name)
                 sub(/ \(inline\)$/, "", name); flat[name] += $1 }
             END { for (n in flat) print n "\t" flat[n] }' | LC_ALL=C sort
}

for f in folded perf rec; do
    total=$(top_total $f.pb.gz)
    [ -n "$total" ] && [ "$total" -gt 0 ] || fail "$f: no total from top"

    # ---- folded sums to the total
    "$HOTSPUR" convert $f.pb.gz --sample-index samples --to collapsed -o $f.folded
    sum=$(awk '{ s += $NF } END { print s }' $f.folded)
    [ "$sum" = "$total" ] || fail "$f: folded sum $sum != top total $total"

    # ---- collapsed -> pprof -> collapsed round trip
    "$HOTSPUR" convert --from collapsed $f.folded --to pprof -o $f.rt.pb.gz
    "$HOTSPUR" convert $f.rt.pb.gz --to collapsed -o $f.rt.folded
    LC_ALL=C sort $f.folded > a.sorted; LC_ALL=C sort $f.rt.folded > b.sorted
    cmp -s a.sorted b.sorted || { diff a.sorted b.sorted | head; fail "$f: collapsed round trip differs"; }

    # ---- callgrind_annotate agrees with top
    "$HOTSPUR" convert $f.pb.gz --sample-index samples --to callgrind -o $f.callgrind
    callgrind_annotate --auto=no --threshold=100 $f.callgrind > $f.annotate 2>$f.annotate.err ||
        fail "$f: callgrind_annotate failed: $(head -3 $f.annotate.err)"
    ! grep -q "WARNING" $f.annotate $f.annotate.err || fail "$f: callgrind_annotate warns: $(grep WARNING $f.annotate $f.annotate.err | head -2)"
    cg_total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' $f.annotate)
    [ "$cg_total" = "$total" ] || fail "$f: callgrind_annotate total $cg_total != top total $total"
    awk '/file:function/ { on = 1; next } on && /^$/ { on = 0 } on && /^ *[0-9,]+ \(/ {
             v = $1; gsub(",", "", v); name = $0
             sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", name); sub(/^[^:]*:/, "", name)
             sub(/ \[.*\]$/, "", name) # the object (ob=) callgrind_annotate appends
             print name "\t" v }' $f.annotate | LC_ALL=C sort > $f.cg.flat
    top_flat $f.pb.gz > $f.top.flat
    [ -s $f.top.flat ] || fail "$f: top printed no functions"
    cmp -s $f.cg.flat $f.top.flat || { diff $f.cg.flat $f.top.flat | head; fail "$f: callgrind per-function costs differ from top"; }
    # inclusive costs load too (calls= records), and callers are annotated
    # without Perl warnings: positions that only make calls have cost lines
    callgrind_annotate --inclusive=yes $f.callgrind > $f.incl 2> $f.incl.err || fail "$f: --inclusive=yes failed"
    [ ! -s $f.incl.err ] || fail "$f: callgrind_annotate --inclusive=yes warns: $(head -2 $f.incl.err)"
    grep -q '^# .*calls= is how many samples saw the call' $f.callgrind || fail "$f: callgrind file does not say what calls= counts"
    # --addresses: positions "instr line", still read by callgrind_annotate
    "$HOTSPUR" convert $f.pb.gz --sample-index samples --to callgrind --addresses -o $f.instr.callgrind
    grep -q '^positions: instr line$' $f.instr.callgrind || fail "$f: --addresses without positions: instr line"
    callgrind_annotate --inclusive=yes $f.instr.callgrind > $f.instr.annotate 2> $f.instr.err ||
        fail "$f: callgrind_annotate rejects positions: instr line"
    [ ! -s $f.instr.err ] || fail "$f: callgrind_annotate warns on the instr file: $(head -2 $f.instr.err)"
    [ "$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' $f.instr.annotate)" = "$total" ] ||
        fail "$f: instr file total differs"

    # ---- speedscope
    "$HOTSPUR" convert $f.pb.gz --sample-index samples --to speedscope -o $f.speedscope.json
    python3 -m json.tool $f.speedscope.json > /dev/null || fail "$f: speedscope JSON does not parse"
    python3 - "$f.speedscope.json" "$total" <<'PY' || fail "$f: speedscope content is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["profiles"][0]
assert p["type"] == "sampled", p["type"]
assert len(p["samples"]) == len(p["weights"])
assert sum(p["weights"]) == int(sys.argv[2]), (sum(p["weights"]), sys.argv[2])
n = len(d["shared"]["frames"])
assert all(0 <= i < n for s in p["samples"] for i in s)
assert p["endValue"] == int(sys.argv[2])
PY

    # ---- speedscope: every sample type its own profile, file and line on frames,
    # valid against speedscope's own file-format schema (from its npm package)
    "$HOTSPUR" convert $f.pb.gz --to speedscope -o $f.all.json
    python3 - "$f.all.json" "$f.pb.gz" "$HOTSPUR" "$SCHEMA" <<'PY' || fail "$f: multi-profile speedscope is wrong"
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
types = subprocess.run([sys.argv[3], "raw", sys.argv[2]], capture_output=True, text=True, check=True).stdout
names = [t.split("/")[0].replace("[dflt]", "") for t in types.split("Samples:\n")[1].split("\n")[0].split()]
assert [p["name"] for p in d["profiles"]] == names, ([p["name"] for p in d["profiles"]], names)
for p in d["profiles"]:
    assert sum(p["weights"]) == p["endValue"]
fr = d["shared"]["frames"]
assert all("line" in f for f in fr if "file" in f), "a frame with a file and no line"
if sys.argv[2].startswith("rec"):  # the program's own functions (DWARF): file and line
    mine = [f for f in fr if f["name"] in ("main", "burn_a", "burn_b", "burn_c")]
    assert len(mine) >= 3 and all(f.get("file", "").endswith("cpu_split.c") and f.get("line", 0) > 0
                                  for f in mine), mine
schema = json.load(open(sys.argv[4]))
def check(x, s, path="$"):
    if "$ref" in s:
        return check(x, schema["definitions"][s["$ref"].split("/")[-1]], path)
    if "anyOf" in s:
        errs = []
        for alt in s["anyOf"]:
            try:
                return check(x, alt, path)
            except AssertionError as e:
                errs.append(str(e))
        raise AssertionError(path + ": no alternative matches: " + "; ".join(errs))
    t = s.get("type")
    ok = {"object": lambda: isinstance(x, dict), "array": lambda: isinstance(x, list),
          "string": lambda: isinstance(x, str), "number": lambda: isinstance(x, (int, float)) and not isinstance(x, bool),
          "integer": lambda: isinstance(x, int), "boolean": lambda: isinstance(x, bool), None: lambda: True}[t]()
    assert ok, f"{path}: not {t}"
    if "enum" in s:
        assert x in s["enum"], f"{path}: {x!r} not in {s['enum']}"
    for k in s.get("required", []):
        assert k in x, f"{path}: missing {k}"
    for k, sub in s.get("properties", {}).items():
        if k in x:
            check(x[k], sub, path + "." + k)
    if "items" in s:
        for i, v in enumerate(x):
            check(v, s["items"], f"{path}[{i}]")
check(d, schema)
PY

    # ---- graph: DOT renders, SVG through dot
    "$HOTSPUR" graph $f.pb.gz > $f.dot
    dot -Tsvg $f.dot -o /dev/null || fail "$f: Graphviz rejects our DOT"
    "$HOTSPUR" graph $f.pb.gz -o $f.svg 2>/dev/null
    grep -q "<svg" $f.svg || fail "$f: graph -o .svg wrote no SVG"
    pass "$f: folded, round trip, callgrind ($total), speedscope, graph"
done

# callgrind of a recorded program: ob= names the binary, and every instr
# position of it is the address of an instruction in that binary (as
# KCachegrind's machine-code view disassembles it with objdump)
grep -q "^ob=([0-9]*) .*/cpu_split$" rec.callgrind || fail "rec: no ob= for the binary: $(grep -m3 '^ob=' rec.callgrind)"
grep -q "^cob=" rec.callgrind || fail "rec: no cob= before calls"
objdump -d "$PROGS/cpu_split" > cpu_split.dis
python3 - cpu_split.dis rec.instr.callgrind <<'PY' || fail "rec: instr positions are not instructions of the binary"
import re, sys
starts, after_call = set(), set()
prev_call = False
for line in open(sys.argv[1]):
    m = re.match(r' *([0-9a-f]+):\t(?:[0-9a-f]{2} )+\s*\t?(\S*)', line)
    if not m:
        continue
    a = int(m.group(1), 16)
    starts.add(a)
    if prev_call:
        after_call.add(a)
    prev_call = m.group(2).startswith('call')
inbin, pos = False, []
for line in open(sys.argv[2]):
    if line.startswith('ob='):
        inbin = line.rstrip().endswith('/cpu_split') or (inbin and re.fullmatch(r'ob=\(\d+\)', line.strip()) is not None)
    elif inbin and line.startswith('0x'):
        pos.append(int(line.split()[0], 16))
assert pos, "no positions in the binary"
# a leaf's position is its PC; a caller's is the call's return address - 1
# (pprof's convention), inside the call instruction
bad = [hex(a) for a in pos if a not in starts and a + 1 not in after_call]
assert not bad, bad[:5]
print(len(pos), "positions")
PY
pass "callgrind: ob=, instr positions on instruction boundaries"

# the round trip on the fixture itself (names with spaces, templates, UTF-8)
"$HOTSPUR" convert folded.pb.gz --to collapsed | LC_ALL=C sort > fx.out
LC_ALL=C sort "$SRC/tests/data/stacks.folded" > fx.in
cmp -s fx.in fx.out || { diff fx.in fx.out; fail "fixture does not round-trip"; }

# filters apply to convert like to every report
"$HOTSPUR" convert folded.pb.gz --focus '^io$' --to collapsed > focus.folded
[ "$(awk '{ s += $NF } END { print s }' focus.folded)" = 16 ] || fail "--focus io: $(cat focus.folded)"
"$HOTSPUR" convert folded.pb.gz --focus '^io$' --to pprof -o focus.pb.gz
[ "$(top_total focus.pb.gz)" = 16 ] || fail "--focus on --to pprof"

# bad input: one line on stderr, exit 2, nothing written
set +e
printf 'not a profile at all\n' > junk.txt
"$HOTSPUR" convert --from collapsed junk.txt --to pprof -o junk.pb.gz 2>err.txt; rc=$?
set -e
[ $rc = 2 ] || fail "junk input: exit $rc, want 2"
[ "$(wc -l < err.txt)" = 1 ] || fail "junk input: not a one-line error: $(cat err.txt)"
[ ! -e junk.pb.gz ] || fail "junk input left an output file"
set +e
"$HOTSPUR" convert folded.pb.gz --to nosuch 2>/dev/null; rc1=$?
"$HOTSPUR" convert --to pprof 2>/dev/null; rc2=$?
"$HOTSPUR" convert folded.pb.gz --to collapsed --nodecount 3 2>/dev/null; rc3=$?
set -e
[ "$rc1$rc2$rc3" = 222 ] || fail "usage errors must exit 2 (got $rc1 $rc2 $rc3)"
pass "convert: round trip of awkward names, filters, errors"
