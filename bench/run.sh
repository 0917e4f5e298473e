#!/usr/bin/env bash
# run.sh BUILD_DIR — the entry point of `make bench`: runs every benchmark
# script in bench/ in turn and prints their results.
#
# A benchmark is any bench/*.sh other than this file; it is called as
# `bench/NAME.sh BUILD_DIR` with the hotspur build in BUILD_DIR (bin/hotspur,
# lib/libhotspur.so), prints its results, and may write its own section of
# docs/BENCHMARKS.md. Only Debian packages (scripts/install-deps) and no
# network are needed. A failing benchmark is reported and the others still
# run; the exit status is 1 if any failed. The slowest ones can be left
# out: BENCH_SKIP_DEFAULTS=1 skips continuous_defaults.sh (~6 min, twice)
# and continuous_naming_memory.sh (~9 min).
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ! -x "$BUILD/bin/hotspur" ]; then
    echo "bench: $BUILD/bin/hotspur is missing; build first (make)" >&2
    exit 1
fi

failed=()
for script in "$HERE"/*.sh; do
    name=$(basename "$script")
    if [ "$name" = run.sh ] || [ "$name" = lib.sh ]; then continue; fi
    echo "==== bench/$name ===="
    if bash "$script" "$BUILD"; then
        echo "==== bench/$name: done"
    else
        echo "==== bench/$name: FAILED (exit $?)"
        failed+=("$name")
    fi
    echo
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "bench: failed: ${failed[*]}" >&2
    exit 1
fi
echo "bench: all benchmarks done; results in docs/BENCHMARKS.md"
