#!/usr/bin/env bash
# server_names.sh BUILD_DIR — what naming frames at the server costs (issue
# 31). A 10 000-frame CPU profile sent as addresses: 10 000 samples, one
# distinct address each, spread over the functions of bin/hotspur itself
# (a PIE built -g, named from its own path: --debuginfo-sources path), with
# its build ID. Timed with curl, BENCH_ROUNDS rounds (default 5), medians:
#   ingest, no naming     a server whose sources find nothing (upload only);
#   ingest, cold          a fresh server and cache: DWARF opened and indexed;
#   ingest, warm          the same frames again (the answers in memory);
#   ingest, disk cache    a restarted server: answers read from its cache file;
#   query, named at ingest  /api/v1/profile of a stored profile named at
#                         ingest, beside the same query of a profile named
#                         before upload (`hotspur symbolize`): the cost on
#                         queries of profiles already named;
#   query, named at query time  a profile stored as addresses, its debug info
#                         arriving afterwards (warm).
# A fresh server's first upload also creates its store: compare cold and
# after-restart with the first upload that names nothing.
# Writes the "## Server naming (issue 31)" section of docs/BENCHMARKS.md
# (BENCH_NO_DOC=1: print only).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/server_names.sh BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-5}
bench_check_build server_names "$BUILD" "$ROUNDS" 1
HOTSPUR=$BUILD/bin/hotspur
INVOCATION="bench/server_names.sh $1"
if [ "$ROUNDS" != 5 ]; then INVOCATION="BENCH_ROUNDS=$ROUNDS $INVOCATION"; fi
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
bench_tmpdir
T=$BENCH_TMP

# the profile: python3 writes the pprof (protobuf by hand: tests/integration/pbwire.py)
FRAMES=$(bench_wide_unnamed_profile "$HOTSPUR" "$T")
"$HOTSPUR" symbolize -o "$T/named.pb.gz" "$T/raw.pb.gz"

SRV=""
start() { # DATA ARGS...
    local d=$1; shift
    "$HOTSPUR" serve --listen 127.0.0.1:0 --data "$d" "$@" 2>"$d.log" &
    SRV=$!
    BENCH_PIDS+=("$SRV")
    URL=$(bench_serve_url "$d.log") || { echo "server_names: serve did not start: $(cat "$d.log")" >&2; exit 1; }
    sleep 0.3
}
stop() { kill "$SRV"; wait "$SRV" 2>/dev/null || true; }
post() { # FILE SERVICE -> seconds
    curl -s -o /dev/null -w '%{time_total}\n' --data-binary @"$1" "$URL/api/v1/ingest?service=$2&type=cpu"
}
get() { curl -s -o /dev/null -w '%{time_total}\n' "$URL/api/v1/profile?service=$1&type=cpu&from=now-1h"; }
ms() { bench_median | awk '{ printf "%.1f", $1 * 1000 }'; }

: >"$T/none1"; : >"$T/none" ; : >"$T/cold"; : >"$T/warm"; : >"$T/disk"; : >"$T/qpre"; : >"$T/qing"; : >"$T/qlate"
for ((r = 0; r < ROUNDS; r++)); do
    start "$T/d0.$r" --debuginfo-sources upload
    post "$T/raw.pb.gz" none1 >>"$T/none1" # a fresh server's first upload
    post "$T/raw.pb.gz" none >>"$T/none"
    stop
    start "$T/d1.$r" --debuginfo-sources path
    post "$T/raw.pb.gz" cold >>"$T/cold"
    post "$T/raw.pb.gz" warm >>"$T/warm"
    post "$T/named.pb.gz" pre >/dev/null
    for i in 1 2 3; do get pre >>"$T/qpre"; get cold >>"$T/qing"; done
    stop
    start "$T/d1.$r" --debuginfo-sources path
    post "$T/raw.pb.gz" disk >>"$T/disk"
    stop
    # stored as addresses, named at query time once the file is found
    start "$T/d2.$r" --debuginfo-sources upload
    post "$T/raw.pb.gz" late >/dev/null
    stop
    start "$T/d2.$r" --debuginfo-sources upload,path
    get late >/dev/null
    for i in 1 2 3; do get late >>"$T/qlate"; done
    stop
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
    echo "## Server naming (issue 31)"
    echo
    echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores of \"$cpu_model\"; load average at the end $load (a machine shared with other builds)."
    echo
    echo "Produced by: \`$INVOCATION\`"
    echo
    echo "A CPU profile of $FRAMES frames sent as addresses ($FRAMES distinct addresses over the functions of \`bin/hotspur\`, a PIE built -g, $(stat -c %s "$HOTSPUR") bytes, found by its build ID at its path) uploaded with curl to a local \`hotspur serve\`; medians of $ROUNDS rounds (queries: 3 per round)."
    echo
    echo "| | ms |"
    echo "|---|--:|"
    echo "| ingest, no debug info found, a fresh server's first upload | $(ms <"$T/none1") |"
    echo "| ingest, no debug info found (stored as addresses), second upload | $(ms <"$T/none") |"
    echo "| ingest, cold: a fresh server's first upload (DWARF opened and indexed, $FRAMES lookups) | $(ms <"$T/cold") |"
    echo "| ingest, warm (answers in memory) | $(ms <"$T/warm") |"
    echo "| ingest, after a restart: its first upload (answers from the cache file) | $(ms <"$T/disk") |"
    echo "| query /api/v1/profile, profile named before upload | $(ms <"$T/qpre") |"
    echo "| query /api/v1/profile, profile named at ingest | $(ms <"$T/qing") |"
    echo "| query /api/v1/profile, stored as addresses, named at query time (warm) | $(ms <"$T/qlate") |"
} >"$T/section.md"
cat "$T/section.md"
bench_write_section server_names "Server naming (issue 31)" "$T/section.md" "$ROOT/docs/BENCHMARKS.md"
