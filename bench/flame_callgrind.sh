#!/usr/bin/env bash
# flame_callgrind.sh BUILD_DIR [BASE_BUILD_DIR] — the instructions one warm
# /api/v1/flamegraph request costs the server (callgrind, counted inside
# hs_query_handle: merge in the store, records, tree, JSON; not HTTP or
# gzip), for the 100 000-node flame graph of bench/web_ui.sh (one profile
# of 100 000 distinct folded stacks, max_nodes=100000). Deterministic,
# unlike the timings, so two builds compare on a loaded machine; each
# build's answer's md5 is printed too (they must be equal). Also prints
# the functions above 5% (inclusive). Needs valgrind. Prints only (no
# section of docs/BENCHMARKS.md: the web_ui section quotes it).
# BENCH_CG_ENDPOINT=functions (or peek, diff...) counts that answer of the
# same data instead (peek: of its hottest function, `leaf`... as given in
# BENCH_CG_PARAMS, e.g. "&function=f1"; diff: against itself).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: bench/flame_callgrind.sh BUILD_DIR [BASE_BUILD_DIR]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
bench_callgrind_builds flame_callgrind "$@"
TMP=$(mktemp -d)
VG_PID=""
cleanup() {
    if [ -n "$VG_PID" ]; then kill -TERM "$VG_PID" 2>/dev/null || true; wait "$VG_PID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"

bench_big_folded big.folded
"${BUILDS[0]}/bin/hotspur" convert big.folded --to pprof -o big.pb.gz

url_of() { # LOG
    bench_serve_url "$1" 1200 || { echo "flame_callgrind: hotspur serve did not start: $(cat "$1")" >&2; exit 1; }
}
# the store, filled once by the first build
"${BUILDS[0]}/bin/hotspur" serve --listen 127.0.0.1:0 --data "$TMP/store" 2>serve.log &
VG_PID=$!
URL=$(url_of serve.log)
curl -s -f -o /dev/null -X POST --data-binary @big.pb.gz -H 'Content-Type: application/octet-stream' \
    "$URL/api/v1/ingest?service=big&from=$(($(date +%s) - 60))"
kill -TERM "$VG_PID"; wait "$VG_PID" || true; VG_PID=""

i=0
for b in "${BUILDS[@]}"; do
    i=$((i + 1))
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=hs_query_handle \
        --callgrind-out-file="$TMP/cg.$i.out" "$b/bin/hotspur" serve --listen 127.0.0.1:0 --data "$TMP/store" \
        2>"vg.$i.log" &
    VG_PID=$!
    URL=$(url_of "vg.$i.log")
    EP=${BENCH_CG_ENDPOINT:-flamegraph}
    case $EP in
    flamegraph) P="&max_nodes=100000" ;;
    diff) P="&max_nodes=100000&base_from=now-1h" ;;
    *) P="" ;;
    esac
    Q="$URL/api/v1/$EP?service=big&type=samples&from=now-1h$P${BENCH_CG_PARAMS:-}"
    curl -s -f -o /dev/null "$Q" # warms the record cache
    callgrind_control -z "$VG_PID" >/dev/null 2>&1
    curl -s -f -o "answer.$i" "$Q"
    callgrind_control -d "$VG_PID" >/dev/null 2>&1
    kill -INT "$VG_PID"; wait "$VG_PID" || true; VG_PID=""
    f=$(ls -t "$TMP"/cg.$i.out.* | head -n 1)
    total=$(callgrind_annotate "$f" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p')
    echo "flame_callgrind: $b: $total instructions per $EP request, answer md5 $(md5sum <"answer.$i" | cut -d' ' -f1)"
    callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
        awk '/^ *[0-9,]+ \( *[0-9.]+%\) / { p = $2; gsub(/[()%]/, "", p); if (p + 0 >= 5 && p + 0 < 100 && $3 != "=>") {
            n = $3; sub(/.*:/, "", n); sub(/ .*/, "", n); printf "    %6s%%  %s\n", p, n } }' | head -n 14
done
