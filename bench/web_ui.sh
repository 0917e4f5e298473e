#!/usr/bin/env bash
# web_ui.sh BUILD_DIR [BASE_BUILD_DIR] — how fast the web UI shows a flame
# graph: the time from navigation to the first drawn flame graph in
# headless Chromium (tests/integration/web_ui.js in its measuring mode: a
# performance mark the page sets once it has drawn), for
#   - 10 000 merged profiles (BENCH_PROFILES; each of BENCH_STACKS distinct
#     stacks, default 200, so the store merges 2 000 000 sample rows), and
#   - one profile whose flame graph has 100 000 nodes (max_nodes=100000:
#     the UI's `nodes` URL parameter; made from 100 000 distinct stacks).
# Each is BENCH_RUNS fresh page loads (default 5); the median, min and max
# are printed, with the server's CPU time per /api/v1/flamegraph request
# (utime+stime of `hotspur serve` over BENCH_RUNS requests with curl, warm
# record cache). Goal: under 1 s each. The server is `hotspur serve` on a
# free loopback port over a temporary store.
#
# With BASE_BUILD_DIR, both builds are measured side by side on the same
# store (ingested once): BENCH_ROUNDS rounds (default 5), each running one
# server of each build in turn (the order alternates between rounds), and
# the table gives per build the median of the rounds' medians and their
# spread. Writes the "## Web UI: time to the first flame graph" section of
# docs/BENCHMARKS.md unless BENCH_NO_DOC=1.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: bench/web_ui.sh BUILD_DIR [BASE_BUILD_DIR]" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
BASE=""
if [ $# = 2 ]; then BASE=$(cd "$2" && pwd); fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
RUNS=${BENCH_RUNS:-5}
PROFILES=${BENCH_PROFILES:-10000}
STACKS=${BENCH_STACKS:-200}
ROUNDS=${BENCH_ROUNDS:-5}
[ -n "$BASE" ] || ROUNDS=1
INVOCATION="bench/web_ui.sh $*"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
for b in "$BUILD" ${BASE:+"$BASE"}; do
    [ -x "$b/bin/hotspur" ] || { echo "web_ui: $b/bin/hotspur is missing; build first (make)" >&2; exit 1; }
done
[ -d "$ROOT/tests/node/node_modules/playwright-core" ] || { echo "web_ui: run scripts/install-deps (playwright-core)" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "web_ui: chromium is not installed" >&2; exit 1; }

TMP=$(mktemp -d)
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    SERVER_PID=""
}
cleanup() {
    stop_server
    rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"

start_server() { # BUILD_DIR: sets SERVER_PID and URL
    : > serve.log
    "$1/bin/hotspur" serve --listen 127.0.0.1:0 --data "$TMP/store" 2>>serve.log &
    SERVER_PID=$!
    URL=$(bench_serve_url serve.log 300) || { echo "web_ui: hotspur serve did not start: $(cat serve.log)" >&2; exit 1; }
}
start_server "$BUILD"

python3 - "$STACKS" <<'PY'
import random, sys
random.seed(11)
fns = ["fn_%d" % i for i in range(400)]
with open("service.folded", "w") as out:
    seen = set()
    while len(seen) < int(sys.argv[1]):
        st = ";".join(["main"] + [random.choice(fns[: 20 * k + 20]) for k in range(random.randint(4, 16))])
        if st not in seen:
            seen.add(st)
            out.write("%s %d\n" % (st, random.randint(1, 100)))
PY
"$HOTSPUR" convert service.folded --to pprof -o service.pb.gz
bench_big_folded big.folded
"$HOTSPUR" convert big.folded --to pprof -o big.pb.gz

# PROFILES uploads of the service profile over the last 30 minutes (the
# page shows the last hour: rounds have 30 minutes to run), 20
# instances, 8 at a time (curl --parallel), each with its own id
now=$(date +%s)
t0=$(date +%s.%N)
{
    echo 'data-binary = "@service.pb.gz"'
    echo 'header = "Content-Type: application/octet-stream"'
    echo 'fail'
    echo 'silent'
    for ((i = 0; i < PROFILES; i++)); do
        echo "url = \"$URL/api/v1/ingest?service=fleet&version=1&label=instance=i$((i % 20))&id=p$i&from=$((now - 1800 + i * 1800 / PROFILES))\""
    done
} > ingest.cfg
curl -s --no-progress-meter --parallel --parallel-max 8 --config ingest.cfg >/dev/null || { echo "web_ui: ingest failed: $(tail -3 serve.log)" >&2; exit 1; }
t1=$(date +%s.%N)
curl -s -f -o /dev/null -X POST --data-binary @big.pb.gz -H 'Content-Type: application/octet-stream' \
    "$URL/api/v1/ingest?service=big&from=$((now - 60))"
stored=$(curl -s "$URL/api/v1/profiles?service=fleet&type=samples&from=now-1h&limit=100000" | grep -o '"id"' | wc -l)
[ "$stored" = "$PROFILES" ] || { echo "web_ui: $stored profiles stored, want $PROFILES" >&2; exit 1; }
echo "web_ui: $PROFILES profiles ingested in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"

measure() { # NAME URL
    cat > "$1.json" <<J
{"url": "$2", "tmp": "$TMP", "rounds": $RUNS}
J
    node "$ROOT/tests/integration/web_ui.js" measure "$1.json" | tail -n 1
}
cpu_ms() { # QUERY: the server's CPU ms per request over RUNS requests (after one to warm the cache)
    local a b
    curl -s -f -o /dev/null -H 'Accept-Encoding: gzip' "$URL$1"
    a=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
    for ((k = 0; k < RUNS; k++)); do curl -s -f -o /dev/null -H 'Accept-Encoding: gzip' "$URL$1"; done
    b=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
    echo $(((b - a) * 1000 / $(getconf CLK_TCK) / RUNS))
}
stop_server
: > results.jsonl
for ((r = 1; r <= ROUNDS; r++)); do
    order="new"
    if [ -n "$BASE" ]; then
        if ((r % 2)); then order="base new"; else order="new base"; fi
    fi
    for which in $order; do
        if [ "$which" = base ]; then b=$BASE; else b=$BUILD; fi
        start_server "$b"
        m1=$(measure fleet "$URL/?service=fleet&type=samples&span=3600")
        m2=$(measure big "$URL/?service=big&type=samples&span=3600&nodes=100000")
        c1=$(cpu_ms "/api/v1/flamegraph?service=fleet&type=samples&from=now-1h&max_nodes=20000")
        c2=$(cpu_ms "/api/v1/flamegraph?service=big&type=samples&from=now-1h&max_nodes=100000")
        stop_server
        echo "{\"build\": \"$which\", \"round\": $r, \"case\": \"fleet\", \"cpu_ms\": $c1, \"m\": $m1}" >> results.jsonl
        echo "{\"build\": \"$which\", \"round\": $r, \"case\": \"big\", \"cpu_ms\": $c2, \"m\": $m2}" >> results.jsonl
        echo "web_ui: round $r $which: 10k profiles: $m1 cpu ${c1} ms/request"
        echo "web_ui: round $r $which: 100k nodes:   $m2 cpu ${c2} ms/request"
    done
done

python3 - "$PROFILES" "$STACKS" "$RUNS" "$ROUNDS" "$INVOCATION" "$BASE" "$(uptime | sed 's/.*load average: //')" > section.md <<'PY2'
import json, statistics, sys
profiles, stacks, runs, rounds, invocation, base, load = sys.argv[1:]
rows = [json.loads(l) for l in open("results.jsonl")]
med = statistics.median
builds = ["base", "new"] if base else ["new"]
label = {"base": "base (" + base.rsplit("/", 1)[-1] + ")", "new": "this build"} if base else {"new": "this build"}
print("## Web UI: time to the first flame graph\n")
print("Command: `%s` (%s fresh page loads per case and server, headless Chromium, `hotspur serve` "
      "with its SQLite store on this machine%s; load average at the end %s). The time is from navigation "
      "to the page's mark after its first flame graph draw (selectors, merge in the store, JSON, layout and "
      "draw included). Goal: < 1 s. \"API\" is the median time of its /api/v1/flamegraph request (the "
      "server's merge and shaping), \"page\" the median time from that answer to the drawn graph (JSON "
      "parse, tree, layout, draw), \"server CPU\" the serve process's utime+stime per flame graph request "
      "(%s requests with curl, warm record cache).%s\n"
      % (invocation, runs, ", both builds over one store, %s interleaved rounds" % rounds if base else "", load, runs,
         " Each figure is the median over the rounds of each round's median; the range is the rounds' "
         "lowest and highest median." if base else ""))
print("| case | build | median | range of medians | API | page | server CPU |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
names = {"fleet": "%s profiles × %s stacks" % (profiles, stacks), "big": "one profile, 100 000 distinct stacks, max_nodes=100000"}
for case in ["fleet", "big"]:
    first = True
    for b in builds:
        rs = [r for r in rows if r["build"] == b and r["case"] == case]
        ms = [r["m"]["median_ms"] for r in rs]
        nodes = rs[0]["m"]["nodes"]
        name = "%s (%d profiles, %d nodes drawn)" % (names[case], rs[0]["m"]["profiles"], nodes) if first else ""
        first = False
        print("| %s | %s | %.0f ms | %.0f-%.0f ms | %.0f ms | %.0f ms | %.0f ms |" % (
            name, label[b], med(ms), min(ms), max(ms), med([r["m"]["api_median_ms"] for r in rs]),
            med([r["m"]["client_median_ms"] for r in rs]), med([r["cpu_ms"] for r in rs])))
print()
print("In the browser (the same web/ in both builds): the page's flame graph answer fetched again, then timed "
      "step by step, medians over all page loads of this build:\n")
print("| case | JSON | JSON.parse | HsFlame.fromServer | setTree (layout, draw) |")
print("| --- | ---: | ---: | ---: | ---: |")
for case in ["fleet", "big"]:
    rs = [r for r in rows if r["build"] == "new" and r["case"] == case]
    print("| %s | %.1f MB | %.0f ms | %.0f ms | %.0f ms |" % (names[case], rs[0]["m"]["json_bytes"] / 1e6,
          med([r["m"]["parse_median_ms"] for r in rs]), med([r["m"]["tree_median_ms"] for r in rs]),
          med([r["m"]["draw_median_ms"] for r in rs])))
if base:
    print()
    for case in ["fleet", "big"]:
        for b in builds:
            rs = [r for r in rows if r["build"] == b and r["case"] == case]
            print("- %s, %s: round medians %s ms; server CPU %s ms" % (names[case], label[b],
                  ", ".join("%.0f" % r["m"]["median_ms"] for r in rs), ", ".join(str(r["cpu_ms"]) for r in rs)))
PY2
cat section.md
bench_write_section web_ui "Web UI: time to the first flame graph" section.md "$DOC"
