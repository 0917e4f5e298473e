#!/usr/bin/env bash
# store.sh BUILD_DIR — the profile store's ingest rate, merge latency and
# size per profile, on realistic CPU profiles (bench/store_gen.h: ~400
# pprof samples over ~330 distinct stacks 20-40 sites deep, ~44 frames with
# inlined ones; stacks repeat across profiles).
#
# Builds bench/store_bench.c against BUILD_DIR's static libraries and runs
#   store_bench URL --sizes BENCH_STORE_SIZES --runs BENCH_RUNS
# URL is BENCH_STORE_URL (e.g. a clickhouse:// URL) or, by default, a fresh
# sqlite directory under a temporary directory. Sizes default to
# 1000,10000,100000 stored profiles; merge times are medians of BENCH_RUNS
# (default 5) runs. Writes the "## Profile store (STORE)" section of
# docs/BENCHMARKS.md (other sections are kept) unless BENCH_NO_DOC=1.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/store.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
RUNS=${BENCH_RUNS:-5}
SIZES=${BENCH_STORE_SIZES:-1000,10000,100000}
INVOCATION="bench/store.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
LIBS=("$BUILD/lib/static/libhs_store.a" "$BUILD/lib/static/libhs_analysis.a" "$BUILD/lib/static/libhs_profile.a" "$BUILD/lib/static/libhs_base.a")
for f in "${LIBS[@]}"; do
    [ -e "$f" ] || { echo "store: $f is missing; build first (make)" >&2; exit 1; }
done
[ "$RUNS" -ge 1 ] || { echo "store: BENCH_RUNS must be at least 1" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -o "$TMP/store_bench" "$HERE/store_bench.c" "${LIBS[@]}" \
    $(pkg-config --libs sqlite3 libcurl libxxhash libprotobuf-c zlib libdeflate libisal) -lpthread -lm
URL=${BENCH_STORE_URL:-sqlite:$TMP/store}
case $URL in clickhouse://*) BACKEND=ClickHouse ;; *) BACKEND=SQLite ;; esac
echo "store: $TMP/store_bench $URL --sizes $SIZES --runs $RUNS"
"$TMP/store_bench" "$URL" --sizes "$SIZES" --runs "$RUNS" | tee "$TMP/out"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v backend="$BACKEND" -v sizes="$SIZES" -v runs="$RUNS" -v load="$LOAD" \
    -v cpu="$CPU" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v ncpu="$(nproc)" '
{ v[$1] = $2 }
END {
    n = split(sizes, sz, ",")
    printf "## Profile store (%s)\n\n", backend
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a machine shared with other builds: wall times include waiting for a core, CPU times do not).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (bench/store_bench.c; `store_bench URL` runs it against any backend).\n\n", inv
    printf "Profiles: generated 10 s CPU profiles (bench/store_gen.h), %s pprof samples each, merged by the store into %s distinct stacks of %s frames on average (inline frames included; records %s bytes); stacks repeat across profiles, a few are new in each. A pool of %s distinct generated profiles is stored again and again under new ids, instances (1000), versions (5) and start times (100 profiles a minute). Puts are batches of 32 profiles (the server group-commits concurrent uploads); the store is durable at each put (SQLite: WAL, synchronous=FULL).\n\n", v["profile_pprof_samples"], v["profile_distinct_stacks"], v["profile_mean_depth"], v["stack_record_bytes"], v["pool_profiles"]
    print "| stored profiles | ingest, profiles/s (wall) | ingest, profiles/CPU-s | merge all, median ms (wall; min-max) | merge all, CPU ms | merged stacks | merge one instance, ms | series (1 h steps), ms | label values, ms | bytes per profile (all) | bytes per profile added since previous size |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        s = sz[i]
        added = (i > 1) ? v["bytes_per_added_profile_" sz[i - 1] "_to_" s] : "-"
        printf "| %s | %s | %s | %s (%s-%s) | %s | %s | %s | %s | %s | %s | %s |\n", s, v["ingest_per_s_at_" s], v["ingest_per_cpu_s_at_" s], v["merge_ms_at_" s], v["merge_min_ms_at_" s], v["merge_max_ms_at_" s], v["merge_cpu_ms_at_" s], v["merge_rows_at_" s], v["merge_one_instance_ms_at_" s], v["series_ms_at_" s], v["label_values_ms_at_" s], v["bytes_per_profile_at_" s], added
    }
    print ""
    printf "Ingest rates are cumulative (all puts up to that size). Merge times are medians of %d runs of `hs_store_merge` alone (the server then shapes the answer); \"one instance\" selects 0.1%% of the profiles by a label; series and label values (of `instance`) are over all stored profiles. Bytes per profile: the database pages in use (stacks included) over the profiles stored; the last column is the cost of a profile once its stacks are stored.\n\n", runs
    printf "Also: decomposing a pprof profile into stacks (`hs_stack_decompose`, done by the server on ingest): %s profiles/s wall, %s per CPU-second. Puts of one profile each (a transaction and an fsync per profile): %s profiles/s.\n\n", v["decompose_per_s"], v["decompose_per_cpu_s"], v["ingest_per_s_batch1"]
    print "Goals: ingest >= 1000 profiles/s; a merge over 10 000 profiles <= 300 ms; <= 2 KiB stored per profile once stacks repeat."
}' "$TMP/out" >"$TMP/section.md"

echo
cat "$TMP/section.md"
bench_write_section store "Profile store ($BACKEND)" "$TMP/section.md" "$DOC"
