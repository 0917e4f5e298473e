#!/bin/bash
# demo_querydb.sh — the tutorial's second example (docs/tutorial.md): a
# forking query daemon started through a wrapper script, profiled while it
# serves. `hotspur record` follows the exec and the workers, `hotspur ctl
# PID dump` takes a worker's profile while it serves; its flat top is
# memset, `peek` names the callers responsible, `graph` and `list` show
# them; removing the memsets (-fixed) raises the transactions per second.
source "$(dirname "$0")/lib.sh"
build=$(cd "$(dirname "$HOTSPUR")/.." && pwd)
ex=$build/examples
[ -x "$ex/querydb" ] || fail "examples not built in $ex"

rec_pid=""
cleanup() {
    # (pkill hangs with an ASan runtime preloaded: run it without)
    env -u LD_PRELOAD pkill -TERM -f "querydb -workers .* -port_file $TMP/" 2>/dev/null || true
    if [ -n "$rec_pid" ]; then wait "$rec_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

"$HOTSPUR" record -o "$TMP/qdb.pb.gz" -- "$ex/querydb.sh" -workers 2 -port_file "$TMP/port" > rec.log 2>&1 &
rec_pid=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
[ -s port ] || { cat rec.log; fail "querydb did not start"; }
"$ex/querydb_load" -port "$(cat port)" -connections 2 -seconds 2 > load.txt || fail "load failed: $(cat load.txt)"
parent=$(sed -n 's/^querydb (memset) pid \([0-9]*\) .*/\1/p' rec.log)
[ -n "$parent" ] || { cat rec.log; fail "no parent pid"; }
"$HOTSPUR" ctl > ctl.txt
worker=$(awk -v p="$parent" '$2 == "querydb" && $1 != p {print $1; exit}' ctl.txt)
[ -n "$worker" ] || { cat ctl.txt; fail "hotspur ctl lists no querydb worker"; }
# the worker keeps serving while it is dumped
"$ex/querydb_load" -port "$(cat port)" -connections 2 -seconds 2 > load2.txt &
load_pid=$!
sleep 1
"$HOTSPUR" ctl "$worker" dump > dump.txt || fail "ctl dump failed: $(cat dump.txt)"
wait "$load_pid" || fail "load during the dump failed"
file=$(sed -n 's/^file //p' dump.txt | head -1)
[ -s "$file" ] || { cat dump.txt; fail "no dump file"; }

"$HOTSPUR" top -n 3 "$file" > top.txt
first=$(awk '/flat%/ {getline; print $NF; exit}' top.txt)
case "$first" in *memset*) ;; *) cat top.txt; fail "flat top is $first, not memset" ;; esac
pass "ctl dump of a serving worker: memset on top ($first)"

"$HOTSPUR" peek memset "$file" > peek.txt
grep -q 'parse_request' peek.txt && grep -q 'scrub_request' peek.txt ||
    { cat peek.txt; fail "peek memset does not name parse_request and scrub_request"; }
pass "peek memset names its callers, parse_request and scrub_request"

"$HOTSPUR" graph --nodefraction 0.01 -o qdb.dot "$file" 2>/dev/null
grep -q 'memset' qdb.dot && grep -q 'parse_request' qdb.dot || fail "the call graph lacks memset/parse_request"
"$HOTSPUR" list parse_request --source-path "$SRC/examples/querydb" "$file" > list.txt
# the memset line carries cum (column 2), not "."
awk '/memset\(rq->buf, 0, REQUEST_BUF\)/ && $2 != "." {found=1} END {exit !found}' list.txt ||
    { cat list.txt; fail "list parse_request does not put the cost on the memset line"; }
pass "graph and list show the memset and its caller"

kill -TERM "$parent"
wait "$rec_pid" || true
rec_pid=""
grep -Eq "wrote .*qdb\.[0-9]+.*pb\.gz \([1-9][0-9]* samples" rec.log || { cat rec.log; fail "record listed no worker profile"; }
pass "record followed the exec and the forked workers"

# Throughput, memset against fixed, one worker and one connection each, side
# by side in this run.
tps() {
    "$ex/querydb" -workers 1 -port_file "$TMP/port.$1" $2 > /dev/null &
    local p=$!
    for _ in $(seq 100); do [ -s "port.$1" ] && break; sleep 0.05; done
    "$ex/querydb_load" -port "$(cat "port.$1")" -connections 1 -seconds 2 | awk '{print $(NF-1)}'
    kill -TERM $p
    wait $p || true
}
slow=$(tps slow "") fast=$(tps fast -fixed)
echo "memset: $slow tps, fixed: $fast tps"
python3 -c "import sys; sys.exit(0 if $fast >= 1.3 * $slow else 1)" ||
    fail "removing the memsets did not raise throughput ($slow -> $fast tps)"
pass "removing the memsets raises the transactions per second ($slow -> $fast)"
