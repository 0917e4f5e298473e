#!/usr/bin/env bash
# status_example.sh BUILD_DIR — the microbenchmark harness's example
# (examples/bench/status.c, docs/bench.md): runs the "before" program (a
# fresh copy of the status table per lookup) and the "after" one (the two
# common codes first, no allocation), each with the harness's defaults
# (3 forks x 5 measurements of 0.1 s after 2 warm-up measurements), then
# `hotspur bench compare` on their JSON. The programs run one after the
# other, as a user would; on a loaded machine read the CPU column (CPU time
# per op of the benchmark's thread) beside the wall-clock score.
# Prints the tables and the comparison and writes them into the
# "## Microbenchmark harness example" section of docs/BENCHMARKS.md.
#
# Environment: BENCH_NO_DOC=1 (print only, leave docs/BENCHMARKS.md alone),
# BENCH_ARGS (extra options for both programs, e.g. "--forks 5").
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/status_example.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
INVOCATION="bench/status_example.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
bench_check_build status_example "$BUILD" 1 1
EX=$BUILD/examples/bench
for p in status_before status_after; do
    [ -x "$EX/$p" ] || { echo "status_example: $EX/$p is missing; build first (make)" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-statusbench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
"$EX/status_before" ${BENCH_ARGS:-} --format json --out "$TMP/before.json" >"$TMP/before.txt" 2>"$TMP/before.err"
# shellcheck disable=SC2086
"$EX/status_after" ${BENCH_ARGS:-} --format json --out "$TMP/after.json" >"$TMP/after.txt" 2>"$TMP/after.err"
"$BUILD/bin/hotspur" bench compare "$TMP/before.json" "$TMP/after.json" >"$TMP/compare.txt"

{
    echo "## Microbenchmark harness example"
    echo
    echo "\`$INVOCATION\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "examples/bench/status.c built twice; docs/bench.md explains it."
    echo
    echo '```'
    echo "\$ status_before --format json --out before.json"
    cat "$TMP/before.txt"
    sed 's/^/# /' "$TMP/before.err"
    echo
    echo "\$ status_after --format json --out after.json"
    cat "$TMP/after.txt"
    sed 's/^/# /' "$TMP/after.err"
    echo
    echo "\$ hotspur bench compare before.json after.json"
    cat "$TMP/compare.txt"
    echo '```'
} >"$TMP/section.md"
cat "$TMP/section.md"
bench_write_section status_example "Microbenchmark harness example" "$TMP/section.md" "$DOC"
