#!/usr/bin/env bash
# bench_harness_gofmt: --format go writes Go's benchmark data format as the
# specification (golang.org/design/14313-benchmark-format) defines it; the
# parser below follows the spec's grammar, not our writer: configuration
# lines "key: value" (key starts lower-case, no upper case, no space),
# result lines "name iterations value unit [value unit...]" split on runs of
# white space, an even number >= 4 of fields, the name "Benchmark" followed
# by an upper-case letter or nothing, iterations a decimal integer, values
# numbers. One line per measurement; every other line carries no meaning.
source "$(dirname "$0")/lib.sh"

"$PROGS/bench_harness_cases" --filter '^(allocs3|madd/n=100)$' --forks 2 --warmup 0 --iterations 3 \
    --time 10ms --format go --out res.txt >/dev/null 2>err.txt || { cat err.txt >&2; fail "benchmark run failed"; }
cat res.txt
python3 - res.txt <<'PY' || fail "the Go-format output does not parse by the specification"
import re, sys
config, results = {}, []
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    m = re.match(r"^([^\s:]+):[ \t]+(.*)$", line)
    if m and m.group(1)[0].islower() and not any(c.isupper() for c in m.group(1)):
        config[m.group(1)] = m.group(2)
        continue
    f = line.split()  # unicode white space, as strings.Fields
    if not f or not f[0].startswith("Benchmark"):
        continue
    rest = f[0][len("Benchmark"):]
    assert rest == "" or rest[0].isupper(), "bad name: " + f[0]
    assert len(f) >= 4 and len(f) % 2 == 0, "odd or short line: " + line
    assert re.fullmatch(r"[0-9]+", f[1]), "iterations not an integer: " + line
    pairs = {}
    for v, u in zip(f[2::2], f[3::2]):
        float(v)  # raises on a non-number
        pairs[u] = float(v)
    results.append((f[0], int(f[1]), pairs))
assert config.get("goos") == "linux" and "pkg" in config, config
names = {}
for name, n, p in results:
    names[name] = names.get(name, 0) + 1
    assert n >= 1 and "ns/op" in p and p["ns/op"] > 0, (name, p)
allocs = [p for name, n, p in results if re.fullmatch(r"BenchmarkAllocs3(-\d+)?", name)]
madd = [p for name, n, p in results if re.fullmatch(r"BenchmarkMadd/n=100(-\d+)?", name)]
assert len(allocs) == 6 and len(madd) == 6, names
assert all(p["allocs/op"] == 3 and p["B/op"] == 300 for p in allocs), allocs
assert all(p["allocs/op"] == 0 for p in madd), madd
print("parsed", len(results), "result lines:", names, "config:", sorted(config))
PY
pass "Go benchmark format: one spec-valid result line per measurement"
