#!/usr/bin/env bash
# bench_harness_failures: a benchmark that crashes (SIGSEGV) and one that
# calls hs_bench_fail() are reported as failed, in the table, JSON and on
# stderr; the others still run and are measured; the exit status is 1.
source "$(dirname "$0")/lib.sh"

set +e
"$PROGS/bench_harness_cases" --filter '^(crash|fails|allocs3)$' --forks 2 --warmup 0 --iterations 2 \
    --time 10ms --format json --out res.json >table.txt 2>err.txt
rc=$?
set -e
cat table.txt err.txt
[ $rc -eq 1 ] || fail "exit status $rc, expected 1 (some benchmark failed)"
grep -Eq '^crash +FAILED: ' table.txt || fail "the crash is not reported as failed in the table"
grep -q 'fails *FAILED: the fixture could not be set up (on purpose)' table.txt ||
    fail "hs_bench_fail's message is not in the table"
grep -q 'crash FAILED' err.txt || fail "the crash is not reported on stderr"
python3 - res.json <<'PY' || fail "JSON does not carry the failures"
import json, sys
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["benchmarks"]}
assert b["crash"]["status"] == "failed" and b["crash"]["error"], b["crash"]
assert b["fails"]["status"] == "failed" and "on purpose" in b["fails"]["error"], b["fails"]
assert b["allocs3"]["status"] == "ok" and len(b["allocs3"]["samples"]) == 4, b["allocs3"]
PY
pass "crash and hs_bench_fail reported as failed; the other benchmark measured"
