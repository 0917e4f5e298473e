#!/usr/bin/env bash
# flame_convert_callgrind.sh BUILD_DIR [BASE_BUILD_DIR] — the instructions
# (callgrind) that `hotspur flame`, `convert --to collapsed` and `convert
# --to speedscope` execute on bench's large profile (the one of
# large_profile.sh: BENCH_SAMPLES, default 1 000 000 samples, over
# BENCH_LOCATIONS, default 200 000 locations), per build: the whole run and
# the back half alone (from the view to the written file: hs_report_flame_ex,
# hs_export_collapsed, hs_export_speedscope_multi, inclusive). Counts are
# deterministic, unlike timings, so two builds compare on a loaded machine;
# each output's md5 is printed too (the builds' must be equal). Needs
# valgrind; about 3 minutes per command and build. Prints only (no section
# of docs/BENCHMARKS.md).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: bench/flame_convert_callgrind.sh BUILD_DIR [BASE_BUILD_DIR]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
bench_callgrind_builds flame_convert_callgrind "$@"
BUILD=$(cd "$1" && pwd)
PROFILE=$(bench_large_profile "$BUILD" "${BENCH_SAMPLES:-1000000}" "${BENCH_LOCATIONS:-200000}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# name|arguments|function whose inclusive count is the back half
CASES=(
    "flame|flame -o $TMP/out $PROFILE|hs_report_flame_ex"
    "convert --to collapsed|convert --to collapsed -o $TMP/out $PROFILE|hs_export_collapsed"
    "convert --to speedscope|convert --to speedscope -o $TMP/out $PROFILE|hs_export_speedscope_multi"
)
echo "flame_convert_callgrind: $PROFILE"
printf '%-26s %-40s %16s %16s  %s\n' command build "total Ir" "back half Ir" "output md5"
for c in "${CASES[@]}"; do
    IFS='|' read -r name args fn <<<"$c"
    for b in "${BUILDS[@]}"; do
        # shellcheck disable=SC2086 # args are words
        total=$(bench_callgrind_ir "$TMP/cg" "$b/bin/hotspur" $args)
        back=$(callgrind_annotate --inclusive=yes "$TMP/cg" 2>/dev/null |
            awk -v fn=":$fn " '!done && index($0, fn) { gsub(",", "", $1); print $1; done = 1 }')
        printf '%-26s %-40s %16s %16s  %s\n' "$name" "$b" "$total" "${back:-?}" "$(md5sum <"$TMP/out" | cut -c1-12)"
    done
done
