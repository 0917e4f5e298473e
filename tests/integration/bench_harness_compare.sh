#!/usr/bin/env bash
# bench_harness_compare: `hotspur bench compare OLD NEW`.
# Statistics on synthetic inputs (seeded, so deterministic): a 2x slowdown
# is significant (+100%, p < 0.05) and fails --fail-on-regression 5%; two
# samples of the same distribution give '~' and pass. Then end to end with
# real runs: BENCH_SCALE=4 multiplies madd's work by 4 (same names), which
# compare finds significant and worse by more than 150% (the Go format read
# back too; 4x, not 2x, so the effect stays far above what a loaded shared
# machine does to a run's CPU time); the example's before/after programs
# show allocs/op 1 -> 0 significant; two runs of the same code give '~' for
# allocs/op and B/op.
source "$(dirname "$0")/lib.sh"

python3 - <<'PY'
import json, random
def write(path, seed, scale):
    rnd = random.Random(seed)
    benches = []
    for name, base in (("parse", 100.0), ("encode/size=64", 40.0)):
        samples = [{"n": 1000, "ns/op": rnd.gauss(base * scale, base * 0.03),
                    "B/op": 64.0, "allocs/op": 1.0} for _ in range(15)]
        benches.append({"name": name, "status": "ok", "samples": samples})
    json.dump({"format": "hotspur-bench", "version": 1, "benchmarks": benches}, open(path, "w"))
write("old.json", 1, 1.0)
write("same.json", 2, 1.0)
write("slow.json", 3, 2.0)
PY
"$HOTSPUR" bench compare old.json slow.json >slow.txt || fail "compare failed"
cat slow.txt
grep -Eq '^parse +.*\+[0-9.]+% \[.*\] \(p=0\.0[0-4][0-9] n=15\+15\)' slow.txt || fail "2x slowdown of parse not significant"
python3 - slow.txt <<'PY' || fail "the 2x slowdown is not reported as about +100%"
import re, sys
t = open(sys.argv[1]).read()
for name in ("parse", "encode/size=64"):
    d = float(re.search(r"^" + re.escape(name) + r" .*?([+-][0-9.]+)% \[", t, re.M).group(1))
    assert 90 <= d <= 110, (name, d)
assert re.search(r"^geomean .*\+(9\d|10\d)\.\d\d%", t, re.M), "geomean"
PY
grep -Eq '^parse +64 .* ~ \(p=1\.000' slow.txt || fail "equal B/op not reported as ~"
set +e
"$HOTSPUR" bench compare --fail-on-regression 5% old.json slow.json >/dev/null 2>reg.txt
rc=$?
set -e
[ $rc -eq 1 ] || fail "--fail-on-regression 5% exit status $rc on a 2x slowdown, expected 1"
grep -q 'regression: parse ns/op' reg.txt || fail "the regression is not named"
"$HOTSPUR" bench compare --fail-on-regression 5 old.json same.json >same.txt ||
    fail "--fail-on-regression failed on two samples of the same distribution"
cat same.txt
grep -Eq '^parse +.* ~ \(p=0\.[0-9]+ n=15\+15\)' same.txt || fail "same distribution not reported as ~"
grep -Eq '^encode/size=64 +.* ~ \(p=' same.txt || fail "same distribution not reported as ~ (encode)"

# End to end: real runs.
run() { "$PROGS/bench_harness_cases" --filter '^madd/n=400$' --forks 2 --warmup 1 --iterations 10 --time 5ms "$@" >/dev/null 2>>err.txt; }
run --format json --out madd1.json || fail "run 1 failed"
BENCH_SCALE=4 run --format json --out madd2.json || fail "run 2 failed"
"$HOTSPUR" bench compare --metric ns/op --metric cpu-ns/op madd1.json madd2.json >real.txt ||
    fail "compare of real runs failed"
cat real.txt
# In CPU time: significant and about +300% (asserted: more than +150%; with
# a 2x slowdown and a +70..130% band this failed once in a fresh-clone CI
# run). In wall time: significant, asserted unless the load average
# exceeds the CPU count (then another process's share of the CPU, not the
# benchmark, decides the wall time).
python3 - real.txt <<'PY' || fail "a real 4x slowdown is not found significant"
import os, re, sys
t = open(sys.argv[1]).read()
wall, cpu = t.split("\n\n")[:2]
m = re.search(r"^madd/n=400 .*?\+([0-9.]+)% \[.*\(p=([0-9.]+) n=20\+20\)", cpu, re.M)
assert m and float(m.group(1)) > 150 and float(m.group(2)) < 0.05, cpu
m = re.search(r"^madd/n=400 .*?\+([0-9.]+)% \[.*\(p=([0-9.]+) n=20\+20\)", wall, re.M)
if not (m and float(m.group(2)) < 0.05):
    if os.getloadavg()[0] > os.cpu_count():
        print("wall time: not significant at load average %.2f > %d CPUs; not asserted" %
              (os.getloadavg()[0], os.cpu_count()))
    else:
        sys.exit("wall-time slowdown not significant:\n" + wall)
PY
run --format go --out madd1.txt && BENCH_SCALE=4 run --format go --out madd2.txt || fail "Go-format runs failed"
"$HOTSPUR" bench compare madd1.txt madd2.txt >realgo.txt || fail "compare of Go-format files failed"
grep -A1 '^cpu-ns/op' realgo.txt | grep -Eq '^Madd/n=400 .*\+[0-9.]+% \[' ||
    { cat realgo.txt; fail "Go-format slowdown (cpu-ns/op) not significant"; }

ex="$(dirname "$HOTSPUR")/../examples/bench"
"$ex/status_before" --filter '^status_text$' --forks 2 --iterations 4 --time 20ms --format json --out before.json >/dev/null 2>>err.txt || fail "status_before failed"
"$ex/status_after" --filter '^status_text$' --forks 2 --iterations 4 --time 20ms --format json --out after.json >/dev/null 2>>err.txt || fail "status_after failed"
"$ex/status_after" --filter '^status_text$' --forks 2 --iterations 4 --time 20ms --format json --out after2.json >/dev/null 2>>err.txt || fail "status_after failed"
"$HOTSPUR" bench compare before.json after.json >ex.txt || fail "compare of the example failed"
cat ex.txt
grep -Eq '^status_text +1 .* 0 +-100\.00% .*\(p=0\.0' ex.txt || fail "allocs/op 1 -> 0 not significant"
grep -A1 '^ns/op' ex.txt | grep -Eq '^status_text .*-[0-9.]+% \[.*\(p=0\.0' || fail "the example's speed-up not significant"
"$HOTSPUR" bench compare --metric allocs/op --metric B/op after.json after2.json >exsame.txt || fail "compare after/after failed"
cat exsame.txt
[ "$(grep -c '^status_text .* ~ (p=1.000' exsame.txt)" = 2 ] || fail "identical code: allocs/op and B/op not ~"
# options as every command takes them (getopt_long): --opt=value too; bad input: exit 2 and why
"$HOTSPUR" bench compare --metric=allocs/op --alpha=0.01 after.json after2.json >exeq.txt || fail "--metric=... --alpha=... refused"
[ "$(grep -c '^status_text .* ~ (p=1.000' exeq.txt)" = 1 ] || { cat exeq.txt; fail "--metric=allocs/op: not one ~ row"; }
for bad in "--alpha=2" "--nope" "--metric"; do
    "$HOTSPUR" bench compare after.json after2.json $bad >/dev/null 2>bad.txt && fail "bench compare $bad accepted"
    [ $? = 2 ] && grep -Eq "bad value|unknown option|needs a value" bad.txt || fail "bench compare $bad: $(cat bad.txt)"
done
pass "compare: 2x slowdown significant, same code ~, --fail-on-regression, example 1 -> 0 allocs/op, options and their errors"
