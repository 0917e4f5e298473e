#!/usr/bin/env bash
# store_ch_ingest.sh BUILD_DIR — ingest over HTTP into ClickHouse with one
# and with two `hotspur serve` instances on the same ClickHouse, beside one
# instance on SQLite, with the same clients and profiles
# (bench/ingest_load.c: gzipped bench/store_gen.h CPU profiles POSTed to
# /api/v1/ingest with new ids; a 200 only once the profile is stored).
#
# BENCH_INGEST_CLIENTS (default 8) clients in all, split evenly over the
# instances; at most BENCH_INGEST_REQUESTS uploads (default 3000) and 30 s
# per run. A throwaway ClickHouse server (tests/integration/clickhouse_lib.sh)
# on loopback. Writes the "## Server ingest over HTTP: ClickHouse, 1 and 2
# serve instances" section of docs/BENCHMARKS.md unless BENCH_NO_DOC=1.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/store_ch_ingest.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
REQUESTS=${BENCH_INGEST_REQUESTS:-3000}
CLIENTS=${BENCH_INGEST_CLIENTS:-8}
INVOCATION="bench/store_ch_ingest.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
for f in "$HOTSPUR" "$BUILD/lib/static/libhs_profile.a"; do
    [ -e "$f" ] || { echo "store_ch_ingest: $f is missing; build first (make)" >&2; exit 1; }
done
[ $((CLIENTS % 2)) = 0 ] || { echo "store_ch_ingest: BENCH_INGEST_CLIENTS must be even" >&2; exit 2; }

TMP=$(mktemp -d)
CH_ROOT=$TMP/clickhouse
# shellcheck source=tests/integration/clickhouse_lib.sh
source "$ROOT/tests/integration/clickhouse_lib.sh"
if ! ch_available; then
    echo "store_ch_ingest: SKIP: clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
SERVERS=()
cleanup() {
    local p
    for p in "${SERVERS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    ch_stop_all
    rm -rf "$TMP"
}
trap cleanup EXIT

# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -I"$HERE" -o "$TMP/ingest_load" "$HERE/ingest_load.c" \
    "$BUILD/lib/static/libhs_profile.a" $(pkg-config --libs libprotobuf-c zlib libdeflate libcurl) -lpthread -lm

ch_ports 3
read -r H T I <<<"$CH_PORTS"
ch_config bench "$H" "$T" "$I"
ch_start bench
ch_wait bench "$H"
VERSION=$(ch_sql "$H" "SELECT version()")

serve() { # N STORE-ARGS... -> sets URL
    local n=$1
    shift
    "$HOTSPUR" serve --listen 127.0.0.1:0 --retention 0 "$@" 2>"$TMP/server.$n.log" &
    SERVERS+=($!)
    URL=$(bench_serve_url "$TMP/server.$n.log") && return 0
    echo "store_ch_ingest: serve $n did not start: $(cat "$TMP/server.$n.log")" >&2
    exit 1
}
stop_all() {
    local p
    for p in "${SERVERS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    SERVERS=()
}
# RUN NAME URL... : CLIENTS clients split over the URLs, in parallel.
run() {
    local name=$1 per k=0 u pids=()
    shift
    per=$((CLIENTS / $#))
    for u in "$@"; do
        k=$((k + 1))
        "$TMP/ingest_load" "$u" "$per" "$((REQUESTS / $#))" 30 >"$TMP/$name.$k" &
        pids+=($!)
    done
    for u in "${pids[@]}"; do wait "$u"; done
    # Rates add up: the runs are concurrent and equally long.
    cat "$TMP/$name".* | awk -v n="$name" '
        { s[$1] += $2; if ($1 ~ /^p[0-9]+_ms$/ && $2 > m[$1]) m[$1] = $2 }
        END { printf "%s_ok %d\n%s_failed %d\n%s_per_s %.0f\n%s_p50 %s\n%s_p99 %s\n", n, s["uploads_ok"], n,
              s["uploads_failed"], n, s["per_s"], n, m["p50_ms"], n, m["p99_ms"] }' >>"$TMP/out"
    echo "store_ch_ingest: $name: $(grep "^$name" "$TMP/out" | tr '\n' ' ')"
}

: >"$TMP/out"
serve 1 --data "$TMP/sqlite"
run sqlite "$URL"
stop_all
serve 2 --store "clickhouse://127.0.0.1:$H/hs_ingest1"
run ch1 "$URL"
stop_all
serve 3 --store "clickhouse://127.0.0.1:$H/hs_ingest2"
U1=$URL
serve 4 --store "clickhouse://127.0.0.1:$H/hs_ingest2"
run ch2 "$U1" "$URL"
stop_all
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v clients="$CLIENTS" -v load="$LOAD" -v cpu="$CPU" -v ncpu="$(nproc)" -v ver="$VERSION" \
    -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v req="$REQUESTS" '
{ v[$1] = $2 }
function row(label, n) { printf "| %s | %s | %s | %s | %s / %s |\n", label, v[n "_ok"], v[n "_failed"], v[n "_per_s"], v[n "_p50"], v[n "_p99"] }
END {
    print "## Server ingest over HTTP: ClickHouse, 1 and 2 serve instances\n"
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a shared machine: clients, servers, ClickHouse and everyone else share the two cores).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (bench/ingest_load.c; %d clients in all, split evenly over the instances; at most %d uploads or 30 s per row; ClickHouse %s on loopback).\n\n", inv, clients, req, ver
    print "| store | uploads stored | failed | profiles/s | latency p50 / p99 ms (worst instance) |"
    print "|---|---:|---:|---:|---:|"
    row("SQLite, 1 instance", "sqlite")
    row("ClickHouse, 1 instance", "ch1")
    row("ClickHouse, 2 instances", "ch2")
}' "$TMP/out" >"$TMP/section.md"
echo
cat "$TMP/section.md"
bench_write_section store_ch_ingest "Server ingest over HTTP: ClickHouse, 1 and 2 serve instances" "$TMP/section.md" "$DOC"
