#!/usr/bin/env bash
# store_ch_ingest.sh BUILD_DIR — ingest over HTTP into ClickHouse with one
# and with two `hotspur serve` instances on the same ClickHouse, beside one
# instance on SQLite, with the same clients and profiles
# (bench/ingest_load.c: gzipped bench/store_gen.h CPU profiles POSTed to
# /api/v1/ingest with new ids; a 200 only once the profile is stored).
#
# BENCH_INGEST_CLIENTS (default 8) clients in all, split evenly over the
# instances; at most BENCH_INGEST_REQUESTS uploads (default 3000) and 30 s
# per run. The clients are closed-loop (each waits for its answer), so at
# most CLIENTS uploads are in flight and a group commit holds at most that
# many: the rows are run again with BENCH_INGEST_FLEET_CLIENTS (default 64;
# 0 skips them), closer to a fleet's many agents uploading at once. Per row, besides the rate: profiles per INSERT into samples and
# the mean time ClickHouse spent in those INSERTs and in the id checks (its
# query_log), and the CPU the serve processes and ClickHouse used per stored
# profile (/proc/PID/stat) — the per-batch cost breakdown.
# ClickHouse's CPU is read after the rollups' feed was handed over
# (OPTIMIZE TABLE of its Buffer), so the rollups' work is counted.
# BENCH_INGEST_BASE=BUILD_DIR runs every ClickHouse row with that build's
# hotspur too, right after this build's (rows marked "base"): the old
# code side by side in one run.
# A throwaway ClickHouse server (tests/integration/clickhouse_lib.sh)
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
FLEET=${BENCH_INGEST_FLEET_CLIENTS:-64}
INVOCATION="${BENCH_INGEST_BASE:+BENCH_INGEST_BASE=$BENCH_INGEST_BASE }bench/store_ch_ingest.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
for f in "$HOTSPUR" "$BUILD/lib/static/libhs_profile.a"; do
    [ -e "$f" ] || { echo "store_ch_ingest: $f is missing; build first (make)" >&2; exit 1; }
done
[ $((CLIENTS % 2)) = 0 ] || { echo "store_ch_ingest: BENCH_INGEST_CLIENTS must be even" >&2; exit 2; }
[ $((FLEET % 2)) = 0 ] || { echo "store_ch_ingest: BENCH_INGEST_FLEET_CLIENTS must be even" >&2; exit 2; }

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
    "$BUILD/lib/static/libhs_profile.a" "$BUILD/lib/static/libhs_base.a" $(pkg-config --libs libprotobuf-c zlib libdeflate libisal libcurl) -lpthread -lm

ch_ports 3
read -r H T I <<<"$CH_PORTS"
ch_config bench "$H" "$T" "$I"
# ClickHouse's own account of each query (query_log), for the breakdown.
sed -i 's|</yandex>|<query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log></yandex>|' \
    "$CH_ROOT/bench/config.xml"
sed -i 's|<max_memory_usage>|<log_queries>1</log_queries><max_memory_usage>|' "$CH_ROOT/bench/users.xml"
ch_start bench
ch_wait bench "$H"
VERSION=$(ch_sql "$H" "SELECT version()")

BIN=$HOTSPUR # the hotspur serve runs
serve() { # N STORE-ARGS... -> sets URL
    local n=$1
    shift
    "$BIN" serve --listen 127.0.0.1:0 --retention 0 "$@" 2>"$TMP/server.$n.log" &
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
# user + system CPU ticks of the processes PID...
ticks() {
    local t=0 p
    for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
    echo "$t"
}
# RUN NAME CLIENTS DB URL... : CLIENTS clients split over the URLs, in
# parallel; DB is the ClickHouse database the servers write (or "-").
run() {
    local name=$1 clients=$2 db=$3 per k=0 u pids=() s0 c0 s1 c1 chp
    shift 3
    per=$((clients / $#))
    chp=$(ch_pid bench)
    s0=$(ticks "${SERVERS[@]}")
    c0=$(ticks "$chp")
    for u in "$@"; do
        k=$((k + 1))
        "$TMP/ingest_load" "$u" "$per" "$((REQUESTS / $#))" 30 >"$TMP/$name.$k" &
        pids+=($!)
    done
    for u in "${pids[@]}"; do wait "$u"; done
    if [ "$db" != - ]; then # (hand the feed to the rollups: their work counted)
        ch_sql "$H" "OPTIMIZE TABLE $db.samples_feed_buf" >/dev/null 2>&1 || true
    fi
    s1=$(ticks "${SERVERS[@]}")
    c1=$(ticks "$chp")
    echo "cpu_ticks $((s1 - s0)) $((c1 - c0)) $(getconf CLK_TCK)" >"$TMP/$name.cpu"
    if [ "$db" != - ]; then
        sleep 1.2 # query_log is flushed every second
        ch_sql "$H" "SYSTEM FLUSH LOGS" >/dev/null 2>&1 || true
        ch_sql "$H" "SELECT countIf(query LIKE 'INSERT INTO $db.samples %'),
            avgIf(query_duration_ms, query LIKE 'INSERT INTO $db.samples %'),
            avgIf(query_duration_ms, query LIKE 'SELECT DISTINCT id FROM $db.samples %')
            FROM system.query_log WHERE type = 2 AND query LIKE '%$db.samples%' FORMAT TSV" |
            awk '{ printf "inserts %d\ninsert_ms %.0f\nidcheck_ms %.0f\n", $1, $2, $3 }' >"$TMP/$name.ch"
    fi
    # Rates add up: the runs are concurrent and equally long.
    cat "$TMP/$name".[0-9]* | awk -v n="$name" -v cl="$clients" -v inst="$#" -v cpuf="$TMP/$name.cpu" -v chf="$TMP/$name.ch" '
        { s[$1] += $2; if ($1 ~ /^p[0-9]+_ms$/ && $2 > m[$1]) m[$1] = $2 }
        END { getline c < cpuf; split(c, t, " "); ok = s["uploads_ok"]
              ch["inserts"] = 0; while ((getline l < chf) > 0) { split(l, f, " "); ch[f[1]] = f[2] }
              printf "%s_ok %d\n%s_failed %d\n%s_per_s %.0f\n%s_p50 %s\n%s_p99 %s\n", n, ok, n,
                  s["uploads_failed"], n, s["per_s"], n, m["p50_ms"], n, m["p99_ms"]
              printf "%s_clients %d\n%s_inst %d\n", n, cl, n, inst
              printf "%s_serve_cpu %.2f\n%s_ch_cpu %.2f\n", n, ok ? t[2] * 1000 / t[4] / ok : 0, n,
                  ok && n !~ /^sqlite/ ? t[3] * 1000 / t[4] / ok : 0
              printf "%s_per_insert %s\n%s_insert_ms %s\n%s_idcheck_ms %s\n", n,
                  ch["inserts"] ? sprintf("%.1f", ok / ch["inserts"]) : "-", n, ch["inserts"] ? ch["insert_ms"] : "-",
                  n, ch["inserts"] ? ch["idcheck_ms"] : "-" }' >>"$TMP/out"
    echo "store_ch_ingest: $name: $(grep "^$name" "$TMP/out" | tr '\n' ' ')"
}

: >"$TMP/out"
serve 1 --data "$TMP/sqlite"
run sqlite "$CLIENTS" - "$URL"
stop_all
# ch1 ch2 [CLIENTS]: one instance, then two, each on a database of its own
ch_rows() {
    local a=$1 b=$2 clients=$3
    serve "$a" --store "clickhouse://127.0.0.1:$H/hs_$a"
    run "$a" "$clients" "hs_$a" "$URL"
    stop_all
    serve "$b.1" --store "clickhouse://127.0.0.1:$H/hs_$b"
    local u1=$URL
    serve "$b.2" --store "clickhouse://127.0.0.1:$H/hs_$b"
    run "$b" "$clients" "hs_$b" "$u1" "$URL"
    stop_all
}
# ch_both ch1 ch2 CLIENTS: this build's rows, then the base build's (ch1b ch2b)
ch_both() {
    ch_rows "$1" "$2" "$3"
    ROWS="$ROWS $1 $2"
    if [ -n "${BENCH_INGEST_BASE:-}" ]; then
        BIN=$BENCH_INGEST_BASE/bin/hotspur
        ch_rows "$1b" "$2b" "$3"
        BIN=$HOTSPUR
        ROWS="$ROWS $1b $2b"
    fi
}
ROWS="sqlite"
ch_both ch1 ch2 "$CLIENTS"
if [ "$FLEET" -gt 0 ]; then
    serve sqlitef --data "$TMP/sqlitef"
    run sqlitef "$FLEET" - "$URL"
    stop_all
    ROWS="$ROWS sqlitef"
    ch_both fleet1 fleet2 "$FLEET"
fi
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v rows="$ROWS" -v load="$LOAD" -v cpu="$CPU" -v ncpu="$(nproc)" -v ver="$VERSION" \
    -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v req="$REQUESTS" -v base="${BENCH_INGEST_BASE:-}" '
{ v[$1] = $2 }
function row(n) {
    printf "| %s, %d instance%s%s | %d | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s |\n", (n ~ /^sqlite/ ? "SQLite" : "ClickHouse"),
        v[n "_inst"], (v[n "_inst"] > 1 ? "s" : ""), (n ~ /b$/ ? " (base: " base ")" : ""), v[n "_clients"], v[n "_ok"], v[n "_failed"], v[n "_per_s"], v[n "_p50"], v[n "_p99"],
        v[n "_per_insert"], v[n "_insert_ms"], v[n "_idcheck_ms"], v[n "_serve_cpu"], (n ~ /^sqlite/ ? "-" : v[n "_ch_cpu"]) }
END {
    print "## Server ingest over HTTP: ClickHouse, 1 and 2 serve instances\n"
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a shared machine: clients, servers, ClickHouse and everyone else share the two cores).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (bench/ingest_load.c: closed-loop clients, split evenly over the instances; at most %d uploads or 30 s per row; ClickHouse %s on loopback). Per INSERT: profiles per INSERT into samples, and the mean time ClickHouse took for it and for the id check of the batch (system.query_log). CPU: of the serve processes and of ClickHouse (background merges included), per stored profile.\n\n", inv, req, ver
    print "| store | clients | uploads stored | failed | profiles/s | latency p50 / p99 ms (worst instance) | profiles per INSERT | INSERT ms | id check ms | serve CPU ms/profile | ClickHouse CPU ms/profile |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    n = split(rows, r, " ")
    for (i = 1; i <= n; i++) row(r[i])
}' "$TMP/out" >"$TMP/section.md"
echo
cat "$TMP/section.md"
bench_write_section store_ch_ingest "Server ingest over HTTP: ClickHouse, 1 and 2 serve instances" "$TMP/section.md" "$DOC"
