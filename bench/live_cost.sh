#!/usr/bin/env bash
# live_cost.sh BUILD_DIR — what `hotspur record -p PID` costs, side by side
# with `perf record --call-graph dwarf,16384 -p PID` at the same rate (100 Hz)
# on the same busy target (tests/programs/live_target late 0: two threads
# burning CPU on this 2-core box), in interleaved rounds of BENCH_SECONDS
# (default 10) against no profiler:
#  - the target's throughput: its CPU time per second of wall time
#    (/proc/PID/schedstat), relative to no profiler;
#  - the profiler's own CPU (user + system, /usr/bin/time). perf record only
#    copies the stacks; its unwinding and naming happen in `perf report`,
#    whose CPU is shown too (hotspur record does both before it exits).
# Medians over BENCH_ROUNDS (default 3). Needs root. Writes the
# "record -p cost" section of docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: bench/live_cost.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECONDS:-10}
DOC=$ROOT/docs/BENCHMARKS.md
[ "$(id -u)" = 0 ] || { echo "live_cost: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "live_cost: perf is missing" >&2; exit 1; }
TARGET=$BUILD/tests/programs/live_target
[ -x "$TARGET" ] || { echo "live_cost: $TARGET is missing (make build)" >&2; exit 1; }
WORK=$(mktemp -d)
"$TARGET" late 0 & T=$!
trap 'kill $T 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 0.5

run_ns() { awk '{ s += $1 } END { print s }' /proc/$T/task/*/schedstat; }
measure() { # MODE -> "throughput profiler_cpu_s report_cpu_s"
    local r0 w0 r1 w1 cpu=0 rep=0
    r0=$(run_ns); w0=$(date +%s%N)
    case $1 in
    none) sleep "$SECS" ;;
    hotspur)
        /usr/bin/time -f "%U %S" -o "$WORK/t" "$BUILD/bin/hotspur" record -p "$T" -F 100 \
            --duration "$SECS" -o "$WORK/h.pb.gz" 2>/dev/null
        cpu=$(awk '{ print $1 + $2 }' "$WORK/t") ;;
    perf)
        /usr/bin/time -f "%U %S" -o "$WORK/t" perf record -q -F 100 --call-graph dwarf,16384 \
            -p "$T" -o "$WORK/perf.data" -- sleep "$SECS" 2>/dev/null
        cpu=$(awk '{ print $1 + $2 }' "$WORK/t") ;;
    esac
    r1=$(run_ns); w1=$(date +%s%N)
    if [ "$1" = perf ]; then
        /usr/bin/time -f "%U %S" -o "$WORK/t" perf report -i "$WORK/perf.data" --stdio >/dev/null 2>&1
        rep=$(awk '{ print $1 + $2 }' "$WORK/t")
    fi
    awk -v a="$r0" -v b="$r1" -v x="$w0" -v y="$w1" -v c="$cpu" -v r="$rep" \
        'BEGIN { printf "%.4f %.2f %.2f\n", (b - a) / (y - x), c, r }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: >"$WORK/none"; : >"$WORK/hotspur"; : >"$WORK/perf"
for ((i = 1; i <= ROUNDS; i++)); do
    for m in none hotspur perf; do
        measure "$m" >>"$WORK/$m"
        echo "round $i $m: $(tail -1 "$WORK/$m")"
    done
done
base=$(awk '{ print $1 }' "$WORK/none" | median)
row() { # MODE LABEL
    local tp cpu rep
    tp=$(awk '{ print $1 }' "$WORK/$1" | median)
    cpu=$(awk '{ print $2 }' "$WORK/$1" | median)
    rep=$(awk '{ print $3 }' "$WORK/$1" | median)
    awk -v tp="$tp" -v b="$base" -v c="$cpu" -v r="$rep" -v s="$SECS" -v l="$2" \
        'BEGIN { printf "| %s | %.3f | %+.1f %% | %.2f s (%.1f %% of a core) | %s |\n", l, tp, (tp / b - 1) * 100, c, c / s * 100, (r > 0 ? sprintf("%.2f s", r) : "-") }'
}
SEC=$WORK/section
{
    echo "## record -p cost"
    echo
    echo "\`BENCH_ROUNDS=$ROUNDS BENCH_SECONDS=$SECS bench/live_cost.sh build\` (root; medians; $(nproc) CPUs)."
    echo "Target: two threads burning CPU (tests/programs/live_target late 0); throughput = its CPU"
    echo "seconds per wall second. 100 Hz per thread, 16 KiB user stack copies for both profilers."
    echo
    echo "| profiler | target CPU/s | vs none | profiler CPU over ${SECS} s | perf report CPU |"
    echo "|---|---|---|---|---|"
    row none "none"
    row hotspur "hotspur record -p"
    row perf "perf record --call-graph dwarf -p"
} >"$SEC"
cat "$SEC"
bench_write_section live_cost "record -p cost" "$SEC" "$DOC"
