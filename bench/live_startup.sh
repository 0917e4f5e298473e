#!/usr/bin/env bash
# live_startup.sh BUILD_DIR — the fixed cost of one `hotspur record -p`: the
# CPU (user + system: its task clock, perf stat) of `record -p PID -F 100 --duration 1`
# on a busy target (tests/programs/live_target late 0), where one second of
# sampling costs little and what is left is start-up and naming. Cases, in
# interleaved rounds whose order rotates (BENCH_ROUNDS, default 15):
#  - cached: the core kernel's symbols from the per-boot cache
#    (HOTSPUR_KSYMS_CACHE pointed at a file this script fills first);
#  - uncached: HOTSPUR_KSYMS_CACHE="": /proc/kallsyms read in full;
#  - other: BENCH_OTHER=PATH, another hotspur binary (e.g. an older build)
#    run as it is, if given.
# Medians, the spread (min-max) of each case and the median of each case's
# per-round ratio to "uncached". Needs root. Writes the "record -p start-up"
# section of docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: bench/live_startup.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-15}
OTHER=${BENCH_OTHER:-}
DOC=$ROOT/docs/BENCHMARKS.md
[ "$(id -u)" = 0 ] || { echo "live_startup: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "live_startup: perf is missing" >&2; exit 1; }
TARGET=$BUILD/tests/programs/live_target
[ -x "$TARGET" ] || { echo "live_startup: $TARGET is missing (make build)" >&2; exit 1; }
[ -z "$OTHER" ] || [ -x "$OTHER" ] || { echo "live_startup: BENCH_OTHER=$OTHER is not executable" >&2; exit 1; }
bench_tmpdir
WORK=$BENCH_TMP
"$TARGET" late 0 & T=$!
BENCH_PIDS+=($T)
sleep 0.5
CASES=(cached uncached)
[ -z "$OTHER" ] || CASES+=(other)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date -u +'%Y-%m-%d %H:%M')

run() { # CASE -> CPU seconds
    local bin=$BUILD/bin/hotspur cache=$WORK/kallsyms
    case $1 in
    uncached) cache="" ;;
    other) bin=$OTHER ;;
    esac
    HOTSPUR_KSYMS_CACHE=$cache perf stat -x, -e task-clock -o "$WORK/t" "$bin" record -p "$T" -F 100 \
        --duration 1 -o "$WORK/p.pb.gz" 2>/dev/null
    awk -F, '$3 ~ /task-clock/ { printf "%.4f\n", $1 / 1000 }' "$WORK/t"
}
run cached >/dev/null # fills the cache
for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#CASES[@]}; i++)); do
        c=${CASES[$(((i + r) % ${#CASES[@]}))]}
        echo "$r $c $(run "$c")" >>"$WORK/runs"
    done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

median() { awk -v c="$1" '$2 == c { print $3 }' "$WORK/runs" | bench_median; }
spread() { awk -v c="$1" '$2 == c { print $3 }' "$WORK/runs" | sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.4f-%.4f", a, b }'; }
ratio() { # median over rounds of CASE / uncached
    awk -v c="$1" '{ v[$1 " " $2] = $3 } END { for (k in v) { split(k, p, " "); if (p[2] == c && v[p[1] " uncached"] > 0) print v[k] / v[p[1] " uncached"] } }' "$WORK/runs" | bench_median
}
SEC=$WORK/section.md
{
    echo "## record -p start-up"
    echo
    echo "\`BENCH_ROUNDS=$ROUNDS${OTHER:+ BENCH_OTHER=$OTHER} bench/live_startup.sh build\` (root; 2 CPUs shared),"
    echo "$START UTC, load average $LOAD0 at the start, $LOAD1 at the end. CPU (task clock, perf stat) of"
    echo "\`hotspur record -p PID -F 100 --duration 1\` on two threads burning CPU (tests/programs/live_target"
    echo "late 0): one second of sampling, so mostly the fixed cost of a recording (start-up, reading"
    echo "kernel symbols, parsing the DWARF of the modules it names). Interleaved rounds, order rotating;"
    echo "medians, min-max, and the median of the per-round ratios to \"uncached\"."
    echo
    echo "| case | CPU (median) | min-max | vs uncached, same round |"
    echo "|---|---|---|---|"
    for c in "${CASES[@]}"; do
        case $c in
        cached) what="kernel symbols from the per-boot cache" ;;
        uncached) what="HOTSPUR_KSYMS_CACHE=\"\" (/proc/kallsyms read in full)" ;;
        other) what="BENCH_OTHER" ;;
        esac
        printf '| %s: %s | %.4f s | %s s | %s |\n' "$c" "$what" "$(median "$c")" "$(spread "$c")" \
            "$(awk -v x="$(ratio "$c")" 'BEGIN { printf "%.2f", x }')"
    done
} >"$SEC"
cat "$SEC"
echo "rounds (round case CPU-seconds):"
tr '\n' ';' <"$WORK/runs"
echo
bench_write_section live_startup "record -p start-up" "$SEC" "$DOC"
