#!/usr/bin/env bash
# web_ui.sh BUILD_DIR — how fast the web UI shows a flame graph: the time
# from navigation to the first drawn flame graph in headless Chromium
# (tests/integration/web_ui.js in its measuring mode: a performance mark the
# page sets once it has drawn), for
#   - 10 000 merged profiles (BENCH_PROFILES; each of BENCH_STACKS distinct
#     stacks, default 200, so the store merges 2 000 000 sample rows), and
#   - one profile whose flame graph has 100 000 nodes (max_nodes=100000:
#     the UI's `nodes` URL parameter; made from 100 000 distinct stacks).
# Each is BENCH_RUNS fresh page loads (default 5); the median, min and max
# are printed. Goal: under 1 s each. The server is `hotspur serve` on a free
# loopback port over a temporary store. Writes the "## Web UI: time to the
# first flame graph" section of docs/BENCHMARKS.md unless BENCH_NO_DOC=1.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/web_ui.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
RUNS=${BENCH_RUNS:-5}
PROFILES=${BENCH_PROFILES:-10000}
STACKS=${BENCH_STACKS:-200}
INVOCATION="bench/web_ui.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
[ -x "$HOTSPUR" ] || { echo "web_ui: $HOTSPUR is missing; build first (make)" >&2; exit 1; }
[ -d "$ROOT/tests/node/node_modules/playwright-core" ] || { echo "web_ui: run scripts/install-deps (playwright-core)" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "web_ui: chromium is not installed" >&2; exit 1; }

TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"

"$HOTSPUR" serve --listen 127.0.0.1:0 --data "$TMP/store" 2>serve.log &
SERVER_PID=$!
URL=""
for _ in $(seq 300); do
    URL=$(sed -n 's|.*listening on \(http://[^ /]*\).*|\1|p' serve.log | head -n 1)
    [ -n "$URL" ] && break
    sleep 0.1
done
[ -n "$URL" ] || { echo "web_ui: hotspur serve did not start: $(cat serve.log)" >&2; exit 1; }

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
fns = ["big_%d" % i for i in range(3000)]
with open("big.folded", "w") as out:
    seen = set()
    while len(seen) < 100000:
        st = ";".join(["main"] + [random.choice(fns[: 30 * k + 30]) for k in range(random.randint(3, 20))])
        if st not in seen:
            seen.add(st)
            out.write("%s %d\n" % (st, random.randint(1, 1000)))
PY
"$HOTSPUR" convert service.folded --to pprof -o service.pb.gz
"$HOTSPUR" convert big.folded --to pprof -o big.pb.gz

# PROFILES uploads of the service profile over the last 50 minutes, 20
# instances, 8 at a time (curl --parallel), each with its own id
now=$(date +%s)
t0=$(date +%s.%N)
{
    echo 'data-binary = "@service.pb.gz"'
    echo 'header = "Content-Type: application/octet-stream"'
    echo 'fail'
    echo 'silent'
    for ((i = 0; i < PROFILES; i++)); do
        echo "url = \"$URL/api/v1/ingest?service=fleet&version=1&label=instance=i$((i % 20))&id=p$i&from=$((now - 3000 + i * 3000 / PROFILES))\""
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
m1=$(measure fleet "$URL/?service=fleet&type=samples&span=3600")
m2=$(measure big "$URL/?service=big&type=samples&span=3600&nodes=100000")
echo "web_ui: 10k profiles: $m1"
echo "web_ui: 100k nodes:   $m2"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

cat > section.md <<EOF2
## Web UI: time to the first flame graph

Command: \`$INVOCATION\` (BENCH_RUNS=$RUNS fresh page loads each, headless
Chromium, \`hotspur serve\` with its SQLite store on this machine). The time
is from navigation to the page's mark after its first flame graph draw
(selectors, merge in the store, JSON, layout and draw included). Goal: < 1 s.
"flame graph API" is the median time of its /api/v1/flamegraph request (the
server's merge and shaping), "page" the median time from that answer to the
drawn graph (JSON parse, tree, layout, draw).

| case | profiles merged | nodes drawn | median | min | max | flame graph API | page |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| $PROFILES profiles × $STACKS stacks | $(field "$m1" profiles) | $(field "$m1" nodes) | $(printf %.0f "$(field "$m1" median_ms)") ms | $(printf %.0f "$(field "$m1" min_ms)") ms | $(printf %.0f "$(field "$m1" max_ms)") ms | $(printf %.0f "$(field "$m1" api_median_ms)") ms | $(printf %.0f "$(field "$m1" client_median_ms)") ms |
| one profile, 100 000 distinct stacks, max_nodes=100000 | $(field "$m2" profiles) | $(field "$m2" nodes) | $(printf %.0f "$(field "$m2" median_ms)") ms | $(printf %.0f "$(field "$m2" min_ms)") ms | $(printf %.0f "$(field "$m2" max_ms)") ms | $(printf %.0f "$(field "$m2" api_median_ms)") ms | $(printf %.0f "$(field "$m2" client_median_ms)") ms |
EOF2
cat section.md
bench_write_section web_ui "Web UI: time to the first flame graph" section.md "$DOC"
