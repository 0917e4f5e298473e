#!/usr/bin/env bash
# store_ch.sh BUILD_DIR — the ClickHouse store side by side with SQLite on
# the same generated profiles (bench/store_bench.c, bench/store_gen.h: a
# simulated fleet of one service, 1000 instances, 5 versions, 100 profiles
# a minute): ingest rate, merged flame graph latency (every stored profile,
# the last 24 hours, one version, one version in the last 24 hours, one
# instance, one zone), series and label listing,
# bytes per profile, at each size of BENCH_STORE_SIZES (default
# 10000,100000; the issue's figures add 1000000: 35-60 min of filling here
# at load 5-10, BENCH_STORE_PARALLEL=1 being the faster).
#
# Starts a throwaway ClickHouse server (tests/integration/clickhouse_lib.sh:
# loopback, free ports, data in a temporary directory), runs ONE store_bench
# against a fresh sqlite directory and ClickHouse at once (the same puts go
# to both; each query's runs alternate between the stores, so load changes
# hit both), and writes the "## Profile store: ClickHouse vs SQLite"
# section of docs/BENCHMARKS.md (other sections kept) unless BENCH_NO_DOC=1.
# Query figures are medians of BENCH_RUNS (default 5) runs; puts are of
# BENCH_STORE_BATCH profiles (default 1024: a bulk load; the server's own
# small group commits are bench/store_ch_ingest.sh's).
# BENCH_STORE_PARALLEL=1 fills the two stores at once, each from a thread
# of its own (the fill takes about ClickHouse's time instead of the sum;
# each ingest rate is then measured while the other store fills too).
# The ClickHouse store URL gets the options BENCH_CH_OPTIONS (default
# rollup_labels=zone: the label rollup holds the zone label only, the one
# a merge reads it for; the instance merge reads its series' samples. Set
# it empty for a build that predates the option, e.g. main's).
# BENCH_STORE_KEEP=DIR keeps the two stores in DIR (sqlite/, clickhouse/,
# state): the first run fills them as usual; a later run with the same DIR
# and the same last size only times the queries of that size on the kept
# data (no fill, no ingest figures: for trying a change to the queries).
# The filling run writes the section as usual; a queries-only run does not.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/store_ch.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
RUNS=${BENCH_RUNS:-5}
SIZES=${BENCH_STORE_SIZES:-10000,100000}
BATCH=${BENCH_STORE_BATCH:-1024}
PARALLEL=${BENCH_STORE_PARALLEL:-0}
CH_OPTIONS=${BENCH_CH_OPTIONS-rollup_labels=zone}
INVOCATION="bench/store_ch.sh $1"
[ "$CH_OPTIONS" != "rollup_labels=zone" ] && INVOCATION="BENCH_CH_OPTIONS=$CH_OPTIONS $INVOCATION"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
[ -n "${BENCH_STORE_SIZES:-}" ] && INVOCATION="BENCH_STORE_SIZES=$SIZES $INVOCATION"
[ -n "${BENCH_STORE_BATCH:-}" ] && INVOCATION="BENCH_STORE_BATCH=$BATCH $INVOCATION"
[ "$PARALLEL" = 1 ] && INVOCATION="BENCH_STORE_PARALLEL=1 $INVOCATION"
LIBS=("$BUILD/lib/static/libhs_store.a" "$BUILD/lib/static/libhs_analysis.a" "$BUILD/lib/static/libhs_profile.a" "$BUILD/lib/static/libhs_base.a")
for f in "${LIBS[@]}"; do
    [ -e "$f" ] || { echo "store_ch: $f is missing; build first (make)" >&2; exit 1; }
done
[ "$RUNS" -ge 1 ] || { echo "store_ch: BENCH_RUNS must be at least 1" >&2; exit 2; }

TMP=$(mktemp -d)
KEEP=${BENCH_STORE_KEEP:-}
STORES=$TMP
if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    STORES=$(cd "$KEEP" && pwd)
fi
CH_ROOT=$STORES/clickhouse
# shellcheck source=tests/integration/clickhouse_lib.sh
source "$ROOT/tests/integration/clickhouse_lib.sh"
if ! ch_available; then
    echo "store_ch: SKIP: clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
trap 'ch_stop_all; rm -rf "$TMP"' EXIT
LAST=${SIZES##*,}
REUSE=0
if [ -n "$KEEP" ] && [ -f "$STORES/state" ]; then
    read -r K_SIZE K_SERVICE K_T0 H T I <"$STORES/state"
    [ "$K_SIZE" = "$LAST" ] || { echo "store_ch: $STORES holds $K_SIZE profiles, not $LAST" >&2; exit 2; }
    REUSE=1
    BENCH_NO_DOC=1
fi

# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -o "$TMP/store_bench" "$HERE/store_bench.c" "${LIBS[@]}" \
    $(pkg-config --libs sqlite3 libcurl libxxhash libprotobuf-c zlib libdeflate libisal) -lpthread -lm

if [ "$REUSE" = 1 ]; then
    CH_NAMES+=(bench) # (its config and data as the filling run left them)
else
    rm -rf "$STORES/sqlite" "$STORES/clickhouse"
    ch_ports 3
    read -r H T I <<<"$CH_PORTS"
    ch_config bench "$H" "$T" "$I"
fi
ch_start bench
ch_wait bench "$H"
VERSION=$(ch_sql "$H" "SELECT version()")

CH_URL="clickhouse://127.0.0.1:$H/hs_bench${CH_OPTIONS:+?$CH_OPTIONS}"
echo "store_ch: SQLite and ClickHouse $VERSION: $TMP/store_bench sqlite:$STORES/sqlite $CH_URL --sizes $SIZES --runs $RUNS --batch $BATCH --parallel-fill $PARALLEL"
FILL_START=$(date +%s)
AGAIN=()
[ "$REUSE" = 1 ] && AGAIN=(--service "$K_SERVICE" --t0 "$K_T0" --queries-only 1)
"$TMP/store_bench" "sqlite:$STORES/sqlite" "$CH_URL" --sizes "$SIZES" --runs "$RUNS" --batch "$BATCH" --parallel-fill "$PARALLEL" "${AGAIN[@]}" | tee "$TMP/out"
echo "store_ch: store_bench took $(($(date +%s) - FILL_START)) s (fill and queries)"
if [ -n "$KEEP" ] && [ "$REUSE" = 0 ]; then
    echo "$LAST $(awk '$1 == "service" { print $2 }' "$TMP/out") $(awk '$1 == "t0" { print $2 }' "$TMP/out") $H $T $I" >"$STORES/state"
fi
# ClickHouse's part count at the end.
PARTS=$(ch_sql "$H" "SELECT count() FROM system.parts WHERE active AND database = 'hs_bench'")
# What each table costs: its bytes on disk per stored profile.
NPROF=$(ch_sql "$H" "SELECT count() FROM hs_bench.samples WHERE rowtype = 0")
BYTABLE=$(ch_sql "$H" "SELECT arrayStringConcat(groupArray(concat(table, ' ', toString(round(b / $NPROF)))), ', ') FROM (SELECT table, sum(bytes_on_disk) AS b FROM system.parts WHERE active AND database = 'hs_bench' GROUP BY table ORDER BY b DESC)")
echo "ch_bytes_per_profile_by_table $BYTABLE"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v chopt="${CH_OPTIONS:+?$CH_OPTIONS}" -v sizes="$SIZES" -v runs="$RUNS" -v load="$LOAD" -v cpu="$CPU" -v ver="$VERSION" \
    -v par="$PARALLEL" -v parts="$PARTS" -v bytable="$BYTABLE" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v ncpu="$(nproc)" '
{ a[$1] = $2; b[$1] = (NF >= 3) ? $3 : $2 }
function r(x, y) { return (y > 0 && x > 0) ? sprintf("%.1f", x / y) : "-" }
function pair(k) { return a[k] " | " b[k] }
END {
    n = split(sizes, sz, ",")
    print "## Profile store: ClickHouse vs SQLite"
    print ""
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a machine shared with other builds: every figure is wall time; both stores get the same puts one after the other, and each query'"'"'s runs alternate between them).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (one bench/store_bench.c run against `sqlite:DIR` and `clickhouse://127.0.0.1:PORT/hs_bench%s`, a throwaway ClickHouse %s server on the same machine).\n\n", inv, chopt, ver
    printf "Profiles: a simulated fleet of one service: bench/store_gen.h CPU profiles (%s pprof samples over %s distinct stacks each), 1000 instances, 5 versions rolling, 100 profiles a minute (1 000 000 profiles span ~7 days); puts of %s profiles%s. Queries, medians of %d runs: every stored profile (\"all\"; ClickHouse reads its whole hours from the rollup), the last 24 hours from 10 minutes past an hour (rollup plus the partial hour from the samples), one version (20%%: ClickHouse reads its whole hours from the version rollup), one version in the last 24 hours, one instance (0.1%%: the samples of its series), one zone (50%%: with rollup_labels=zone ClickHouse reads its whole hours from the label rollup, else the samples of its series). ClickHouse / SQLite > 1 means ClickHouse is slower.\n\n", a["profile_pprof_samples"], a["profile_distinct_stacks"], a["batch"], (par == 1 ? ", the two stores filled at once from two threads (each ingest rate measured while the other store fills too)" : ""), runs
    print "| stored profiles | ingest profiles/s SQLite | ClickHouse | merge all ms SQLite | ClickHouse | CH / SQLite | last 24 h ms SQLite | ClickHouse | bytes/profile SQLite | ClickHouse |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        s = sz[i]
        printf "| %s | %s | %s | %s | %s | %s |\n", s, pair("ingest_per_s_at_" s), pair("merge_ms_at_" s),
            r(b["merge_ms_at_" s], a["merge_ms_at_" s]), pair("merge_day_ms_at_" s), pair("bytes_per_profile_at_" s)
    }
    print ""
    print "Filtered merges:"
    print ""
    print "| stored profiles | one version ms SQLite | ClickHouse | CH / SQLite | one version, last 24 h ms SQLite | ClickHouse | one instance ms SQLite | ClickHouse | CH / SQLite | one zone ms SQLite | ClickHouse |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        s = sz[i]
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", s, pair("merge_one_version_ms_at_" s),
            r(b["merge_one_version_ms_at_" s], a["merge_one_version_ms_at_" s]), pair("merge_version_day_ms_at_" s),
            pair("merge_one_instance_ms_at_" s), r(b["merge_one_instance_ms_at_" s], a["merge_one_instance_ms_at_" s]),
            pair("merge_one_zone_ms_at_" s)
    }
    print ""
    print "| stored profiles | series ms SQLite | ClickHouse | label values ms SQLite | ClickHouse | merge all spread ms SQLite | ClickHouse |"
    print "|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        s = sz[i]
        printf "| %s | %s | %s | %s-%s | %s-%s |\n", s, pair("series_ms_at_" s), pair("label_values_ms_at_" s),
            a["merge_min_ms_at_" s], a["merge_max_ms_at_" s], b["merge_min_ms_at_" s], b["merge_max_ms_at_" s]
    }
    print ""
    up = ""
    for (i = 1; i <= n; i++)
        up = up sprintf("%s%s at %s", (i > 1 ? ", " : ""), pair("upkeep_ms_at_" sz[i]), sz[i])
    printf "Before the queries of each size, each store ran its retention once with nothing to drop (the upkeep `hotspur serve` runs every hour: ClickHouse merges each finished day'"'"'s partitions of the tables merges read whole into one part, and every generated day is before today; SQLite checkpoints its WAL). It took, ms SQLite | ClickHouse: %s.\n\n", up
    printf "ClickHouse held %s active parts at the end (its bytes per profile are compressed parts, rollups included, before background merges finish); per table, bytes on disk per stored profile: %s. Single-profile puts: SQLite %s, ClickHouse %s profiles/s.\n", parts, bytable, a["ingest_per_s_batch1"], b["ingest_per_s_batch1"]
}' "$TMP/out" >"$TMP/section"
cat "$TMP/section"
bench_write_section store_ch "Profile store: ClickHouse vs SQLite" "$TMP/section" "$DOC"
