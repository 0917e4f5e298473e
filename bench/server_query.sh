#!/usr/bin/env bash
# server_query.sh BUILD_DIR — the query API's latency (hs_query_handle,
# no HTTP) on realistic CPU profiles (bench/store_gen.h) in a SQLite store:
# the steps (store merge, record fetch + profile rebuild) and whole answers
# (flame graph, functions, pprof, series, focus, one instance, diff), each
# without and with the stack record cache, run alternately.
#
# Builds bench/server_query.c against BUILD_DIR's static libraries and runs
#   server_query sqlite:TMP --profiles BENCH_QUERY_PROFILES --runs BENCH_RUNS
# (defaults 1000 and 7; times are medians). Writes the "## Query API
# (SQLite)" section of docs/BENCHMARKS.md unless BENCH_NO_DOC=1.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/server_query.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
RUNS=${BENCH_RUNS:-7}
PROFILES=${BENCH_QUERY_PROFILES:-1000}
INVOCATION="bench/server_query.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
LIBS=()
for l in server store report analysis profile; do
    f="$BUILD/lib/static/libhs_$l.a"
    [ -e "$f" ] || { echo "server_query: $f is missing; build first (make)" >&2; exit 1; }
    LIBS+=("$f")
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -I"$HERE" -o "$TMP/server_query" "$HERE/server_query.c" "${LIBS[@]}" \
    $(pkg-config --libs libmicrohttpd sqlite3 libcurl libxxhash libprotobuf-c zlib libdeflate) -lpthread -lm
echo "server_query: $TMP/server_query sqlite:$TMP/store --profiles $PROFILES --runs $RUNS"
"$TMP/server_query" "sqlite:$TMP/store" --profiles "$PROFILES" --runs "$RUNS" | tee "$TMP/out"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

awk -v inv="$INVOCATION" -v runs="$RUNS" -v load="$LOAD" -v cpu="$CPU" -v ncpu="$(nproc)" \
    -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" '
{ v[$1] = $2 }
END {
    print "## Query API (SQLite)\n"
    printf "Measured %s on %d cores of \"%s\"; load average at the end %s (a shared machine: wall times include waiting for a core).\n\n", date, ncpu, cpu, load
    printf "Produced by: `%s` (bench/server_query.c: `hs_query_handle` called directly, no HTTP).\n\n", inv
    printf "Data: %s generated 10 s CPU profiles (bench/store_gen.h) over the last 50 minutes, 100 instances, two versions; merged, %s distinct stacks. Times are medians of %s runs, in ms; \"cached\" runs alternate with uncached ones, the stack record cache (64 MiB LRU, src/server/query_cache.c) warmed by one query first.\n\n", v["profiles"], v["merged_stacks"], runs
    print "| step | ms |"
    print "|---|---:|"
    printf "| store merge (`hs_store_merge`, GROUP BY stack) | %s |\n", v["step_merge_ms"]
    printf "| fetch the records (`hs_store_get_stacks`) | %s |\n", v["step_fetch_records_ms"]
    printf "| fetch + rebuild the merged profile (`hs_stack_cache_build`, no cache; only `/api/v1/profile` rebuilds it since 2026-12-04) | %s |\n\n", v["step_records_and_rebuild_ms"]
    print "| answer | no cache, ms | cache, ms | cache / no cache | bytes |"
    print "|---|---:|---:|---:|---:|"
    n = split("flamegraph functions profile series flamegraph_focus flamegraph_one_instance diff_versions", k, " ")
    split("flamegraph (all 1000)|functions|profile (gzipped pprof)|series (step 60 s)|flamegraph, focus=function_12\\(|flamegraph, one instance (label)|diff of the two versions", lab, "|")
    for (i = 1; i <= n; i++) {
        a = v[k[i] "_ms"]; b = v[k[i] "_cached_ms"]
        printf "| %s | %s | %s | %.2f | %s |\n", lab[i], a, b, (a > 0 ? b / a : 0), v[k[i] "_bytes"]
    }
    printf "\nThe cache held %s records in %s bytes after the run.\n", v["cache_entries"], v["cache_bytes"]
}' "$TMP/out" >"$TMP/section.md"
echo
cat "$TMP/section.md"
bench_write_section server_query "Query API (SQLite)" "$TMP/section.md" "$DOC"
