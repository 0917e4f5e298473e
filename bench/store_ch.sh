#!/usr/bin/env bash
# store_ch.sh BUILD_DIR — the ClickHouse store side by side with SQLite on
# the same generated profiles (bench/store_bench.c, bench/store_gen.h):
# ingest rate, merged flame graph latency (every stored profile, and one
# instance's), series and label listing, bytes per profile, at each size of
# BENCH_STORE_SIZES (default 10000,100000; add 1000000 if you have the
# time: ingest is the slow part).
#
# Starts a throwaway ClickHouse server (tests/integration/clickhouse_lib.sh:
# loopback, free ports, data in a temporary directory), runs store_bench
# against a fresh sqlite directory and then against ClickHouse with the
# same options, and writes the "## Profile store: ClickHouse vs SQLite"
# section of docs/BENCHMARKS.md (other sections kept) unless BENCH_NO_DOC=1.
# Merge figures are medians of BENCH_RUNS (default 5) runs.
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
INVOCATION="bench/store_ch.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
[ -n "${BENCH_STORE_SIZES:-}" ] && INVOCATION="BENCH_STORE_SIZES=$SIZES $INVOCATION"
LIBS=("$BUILD/lib/static/libhs_store.a" "$BUILD/lib/static/libhs_analysis.a" "$BUILD/lib/static/libhs_profile.a")
for f in "${LIBS[@]}"; do
    [ -e "$f" ] || { echo "store_ch: $f is missing; build first (make)" >&2; exit 1; }
done
[ "$RUNS" -ge 1 ] || { echo "store_ch: BENCH_RUNS must be at least 1" >&2; exit 2; }

TMP=$(mktemp -d)
CH_ROOT=$TMP/clickhouse
# shellcheck source=tests/integration/clickhouse_lib.sh
source "$ROOT/tests/integration/clickhouse_lib.sh"
if ! ch_available; then
    echo "store_ch: SKIP: clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
trap 'ch_stop_all; rm -rf "$TMP"' EXIT

# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -o "$TMP/store_bench" "$HERE/store_bench.c" "${LIBS[@]}" \
    $(pkg-config --libs sqlite3 libcurl libxxhash libprotobuf-c zlib libdeflate) -lpthread -lm

ch_ports 3
read -r H T I <<<"$CH_PORTS"
ch_config bench "$H" "$T" "$I"
ch_start bench
ch_wait bench "$H"
VERSION=$(ch_sql "$H" "SELECT version()")

echo "store_ch: SQLite: $TMP/store_bench sqlite:$TMP/sqlite --sizes $SIZES --runs $RUNS"
"$TMP/store_bench" "sqlite:$TMP/sqlite" --sizes "$SIZES" --runs "$RUNS" | tee "$TMP/sqlite.out"
echo "store_ch: ClickHouse $VERSION: $TMP/store_bench clickhouse://127.0.0.1:$H/hs_bench --sizes $SIZES --runs $RUNS"
"$TMP/store_bench" "clickhouse://127.0.0.1:$H/hs_bench" --sizes "$SIZES" --runs "$RUNS" | tee "$TMP/ch.out"
# ClickHouse's part count and compressed size once background merges ran.
PARTS=$(ch_sql "$H" "SELECT count() FROM system.parts WHERE active AND database = 'hs_bench'")
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v sizes="$SIZES" -v runs="$RUNS" -v load="$LOAD" -v cpu="$CPU" -v ver="$VERSION" \
    -v parts="$PARTS" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v ncpu="$(nproc)" '
FNR == 1 { f++ }
{ v[f, $1] = $2 }
function r(a, b) { return (b > 0 && a > 0) ? sprintf("%.2f", a / b) : "-" }
END {
    n = split(sizes, sz, ",")
    print "## Profile store: ClickHouse vs SQLite"
    print ""
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a machine shared with other builds: every figure is wall time, both stores measured in the same run, one after the other).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (bench/store_bench.c against `sqlite:DIR` and `clickhouse://127.0.0.1:PORT/hs_bench`, a throwaway ClickHouse %s server on the same machine).\n\n", inv, ver
    printf "Profiles: bench/store_gen.h CPU profiles, %s pprof samples over %s distinct stacks each; puts of 32 profiles (what the server group-commits); merges are medians of %d runs over every stored profile (\"all\") and over one instance label (1%% of them). Both stores hold exactly the same profiles.\n\n", v[1, "profile_pprof_samples"], v[1, "profile_distinct_stacks"], runs
    print "| stored profiles | ingest profiles/s SQLite | ingest ClickHouse | merge all ms SQLite | merge all ms ClickHouse | SQLite / ClickHouse | merge one instance ms SQLite | ClickHouse | series ms SQLite | ClickHouse | bytes/profile SQLite | ClickHouse |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        s = sz[i]
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s,
            v[1, "ingest_per_s_at_" s], v[2, "ingest_per_s_at_" s],
            v[1, "merge_ms_at_" s], v[2, "merge_ms_at_" s], r(v[1, "merge_ms_at_" s], v[2, "merge_ms_at_" s]),
            v[1, "merge_one_instance_ms_at_" s], v[2, "merge_one_instance_ms_at_" s],
            v[1, "series_ms_at_" s], v[2, "series_ms_at_" s],
            v[1, "bytes_per_profile_at_" s], v[2, "bytes_per_profile_at_" s]
    }
    print ""
    printf "Merge spread (min-max ms) at the largest size: SQLite %s-%s, ClickHouse %s-%s. ClickHouse held %s active parts at the end (its bytes per profile are compressed parts, before background merges finish).\n", v[1, "merge_min_ms_at_" sz[n]], v[1, "merge_max_ms_at_" sz[n]], v[2, "merge_min_ms_at_" sz[n]], v[2, "merge_max_ms_at_" sz[n]], parts
}' "$TMP/sqlite.out" "$TMP/ch.out" >"$TMP/section"
cat "$TMP/section"
bench_write_section store_ch "Profile store: ClickHouse vs SQLite" "$TMP/section" "$DOC"
