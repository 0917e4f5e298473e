#!/usr/bin/env bash
# bench_harness_allocs: exact allocation counts of the measured loop. A
# function making 3 allocations of 100 B reports 3 allocs/op and 300 B/op in
# every single measurement (not on average), on 1 thread and on 2; the
# setup's allocations are not counted, nor those under hs_bench_pause().
# C++: operator new[] of 25 ints is 1 allocation of 100 B, a std::string of
# 100 chars 1 of 101 B.
source "$(dirname "$0")/lib.sh"

"$PROGS/bench_harness_cases" --filter '^allocs' --forks 2 --warmup 1 --iterations 3 --time 10ms \
    --format json --out allocs.json >table.txt 2>err.txt || { cat err.txt >&2; fail "benchmark run failed"; }
cat table.txt
python3 - allocs.json <<'PY' || fail "allocation counts are not exact"
import json, sys
d = json.load(open(sys.argv[1]))
b = {x["name"]: x for x in d["benchmarks"]}
want = {"allocs3": (3, 300), "allocs3_threads": (3, 300), "allocs_paused": (1, 50)}
for name, (allocs, nbytes) in want.items():
    x = b[name]
    assert x["status"] == "ok", (name, x.get("error"))
    assert len(x["samples"]) == 6, (name, len(x["samples"]))
    for s in x["samples"]:
        ops = s["n"] * x["threads"]
        assert s["allocs"] == allocs * ops, (name, s)
        assert s["bytes"] == nbytes * ops, (name, s)
        assert s["allocs/op"] == allocs and s["B/op"] == nbytes, (name, s)
    m = x["metrics"]
    assert m["allocs/op"]["mean"] == allocs and m["B/op"]["median"] == nbytes, (name, m)
# Hardware counters: numbers where the machine has them, null (never 0) where not.
avail = d["context"]["hardware_counters"] == "available"
for x in b.values():
    for s in x["samples"]:
        for k in ("instructions/op", "cycles/op", "branch-misses/op", "cache-misses/op"):
            assert (s[k] is not None and s[k] >= 0) if avail else s[k] is None, (x["name"], k, s[k])
print("exact:", {k: v for k, v in want.items()}, "counters:", d["context"]["hardware_counters"])
PY
grep -Eq '^allocs3 +avgt .* 300 +3$' table.txt || fail "the table does not show 300 B/op and 3 allocs/op"
"$PROGS/bench_harness_cxx" --forks 1 --warmup 0 --iterations 3 --time 10ms --format json --out cxx.json \
    >cxx.txt 2>err.txt || { cat err.txt >&2; fail "C++ benchmark run failed"; }
cat cxx.txt
python3 - cxx.json <<'PY' || fail "C++ allocation counts are not exact"
import json, sys
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["benchmarks"]}
for name, (allocs, nbytes) in {"cxx_new": (1, 100), "cxx_string/len=100": (1, 101)}.items():
    assert b[name]["status"] == "ok" and len(b[name]["samples"]) == 3, b[name]
    for s in b[name]["samples"]:
        assert s["allocs/op"] == allocs and s["B/op"] == nbytes, (name, s)
PY
pass "C++ new[] and std::string: exactly 1 allocs/op, 100 and 101 B/op"
pass "3 allocations of 100 B: exactly 3 allocs/op and 300 B/op; threads summed; setup and pauses not counted"
