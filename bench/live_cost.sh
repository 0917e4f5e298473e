#!/usr/bin/env bash
# live_cost.sh BUILD_DIR — what profiling from outside costs, side by side
# with perf on the same host in the same run. Two parts (BENCH_LIVE_PARTS,
# default "record agent"):
#
# record: `hotspur record -p PID` beside `perf record --call-graph
# dwarf,16384 -p PID` at the same rate (100 Hz) on the same busy target
# (tests/programs/live_target late 0: two threads burning CPU on this 2-core
# box), in interleaved rounds of BENCH_SECONDS (default 10) against no
# profiler:
#  - the target's throughput: its CPU time per second of wall time
#    (/proc/PID/schedstat), relative to no profiler;
#  - the profiler's own CPU (user + system, /usr/bin/time). perf record only
#    copies the stacks; its unwinding and naming happen in `perf report`,
#    whose CPU is shown too (hotspur record does both before it exits).
# Medians over BENCH_ROUNDS (default 3).
#
# agent: two `hotspur agent`s side by side (every process on the host, 19 Hz
# per CPU, windows back to back: --period 10s --duration 10s, six times the
# sampling of the default 10 s per 60 s, i.e. sampling all the time as
# Parca's and the OpenTelemetry profiler's agents do), one with the default
# server-side naming, one with --symbolize agent, uploading to a local
# `hotspur serve` for BENCH_AGENT_SECONDS (default 300) while a real daemon
# is under load: redis-server with redis-benchmark in a loop (scripts/
# install-deps; without them, the two-thread target alone). Each agent's CPU
# (/proc/PID/stat) and RSS every 5 s (VmRSS, and its anonymous and
# file-backed parts), the server's CPU (it names the frames of the first);
# then `perf record -a -F 19 --call-graph dwarf,16384` for as long, and the
# `perf report` that names its frames.
#
# Needs root. Writes the "record -p cost" and "host agent cost" sections of
# docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
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
AGENT_SECS=${BENCH_AGENT_SECONDS:-300}
PARTS=${BENCH_LIVE_PARTS:-record agent}
DOC=$ROOT/docs/BENCHMARKS.md
[ "$(id -u)" = 0 ] || { echo "live_cost: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "live_cost: perf is missing" >&2; exit 1; }
TARGET=$BUILD/tests/programs/live_target
[ -x "$TARGET" ] || { echo "live_cost: $TARGET is missing (make build)" >&2; exit 1; }
bench_tmpdir
WORK=$BENCH_TMP
"$TARGET" late 0 & T=$!
BENCH_PIDS+=($T)
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
median() { bench_median; }
case " $PARTS " in *" record "*)
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
    echo
    # issue 27's goal: the profiler's own CPU at most half of perf's
    awk -v h="$(awk '{ print $2 }' "$WORK/hotspur" | median)" -v p="$(awk '{ print $2 }' "$WORK/perf" | median)" \
        -v r="$(awk '{ print $3 }' "$WORK/perf" | median)" 'BEGIN {
        printf "hotspur record -p used %.0f %% of the CPU of perf record + perf report (which unwinds and names\n", (p + r > 0 ? 100 * h / (p + r) : 0)
        printf "what perf record copied), %.0f %% of perf record alone (goal: at most half of perf\x27s).\n", (p > 0 ? 100 * h / p : 0) }'
} >"$SEC"
cat "$SEC"
bench_write_section live_cost "record -p cost" "$SEC" "$DOC"
;; esac

case " $PARTS " in *" agent "*)
"$BUILD/bin/hotspur" serve --listen 127.0.0.1:0 --data "$WORK/data" 2>"$WORK/serve.err" &
SRV=$!
BENCH_PIDS+=($SRV)
URL=$(bench_serve_url "$WORK/serve.err") || { echo "live_cost: hotspur serve did not start" >&2; exit 1; }
LOAD="the two-thread target (tests/programs/live_target late 0)"
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
    RPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
    RS=$!
    BENCH_PIDS+=($RS)
    sleep 0.5
    (while kill -0 $RS 2>/dev/null; do
        redis-benchmark -p "$RPORT" -q -n 20000 -c 4 -t set,get >/dev/null 2>&1 || true
        sleep 0.5
    done) &
    BENCH_PIDS+=($!)
    LOAD="redis-server under redis-benchmark (-c 4 -n 20000 -t set,get in a loop, 0.5 s apart) beside the two-thread target"
fi
echo "live_cost: two hotspur agents for $AGENT_SECS s (load: $LOAD)"
"$BUILD/bin/hotspur" agent --server "$URL" -F 19 --period 10s --duration 10s 2>"$WORK/agent.srv.err" &
AS=$!
BENCH_PIDS+=($AS)
"$BUILD/bin/hotspur" agent --server "$URL" -F 19 --period 10s --duration 10s --symbolize agent \
    2>"$WORK/agent.agt.err" &
AA=$!
BENCH_PIDS+=($AA)
sleep 1
for a in $AS $AA $SRV; do bench_ticks $a >"$WORK/ticks0.$a"; : >"$WORK/mem.$a"; done
for ((t = 0; t < AGENT_SECS; t += 5)); do
    sleep 5
    for a in $AS $AA; do
        awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 } END { print "" }' /proc/$a/status >>"$WORK/mem.$a"
    done
done
for a in $AS $AA $SRV; do echo $(($(bench_ticks $a) - $(cat "$WORK/ticks0.$a"))) >"$WORK/ticks.$a"; done
for a in $AS $AA; do
    kill -TERM $a
    st=0
    wait $a || st=$?
    [ $st = 0 ] || { echo "live_cost: agent $a exited with status $st" >&2; exit 1; }
done
windows=$(grep -c 'window of' "$WORK/agent.srv.err" || true)
services=$(sed -n 's/.* \([0-9]*\) service profiles\{0,1\} uploaded.*/\1/p' "$WORK/agent.srv.err" | bench_median)
procs=$(sed -n 's/.*(\([0-9]*\) processes, \([0-9]*\) new.*/\1/p' "$WORK/agent.srv.err" | bench_median)
newp=$(sed -n 's/.*(\([0-9]*\) processes, \([0-9]*\) new.*/\2/p' "$WORK/agent.srv.err" | bench_median)
echo "live_cost: perf record -a for $AGENT_SECS s"
/usr/bin/time -f "%U %S %M" -o "$WORK/pt" perf record -q -a -F 19 --call-graph dwarf,16384 \
    -o "$WORK/perf.data" -- sleep "$AGENT_SECS" 2>/dev/null
/usr/bin/time -f "%U %S %M" -o "$WORK/pr" perf report -i "$WORK/perf.data" --stdio >/dev/null 2>&1 || true
SEC2=$WORK/section2
tk=$(getconf CLK_TCK)
agent_row() { # PID LABEL
    local m=$WORK/mem.$1
    col() { awk -v c="$1" '{ print $c }' "$m" | bench_median; }
    colmax() { awk -v c="$1" '$c > m { m = $c } END { print m + 0 }' "$m"; }
    awk -v t="$(cat "$WORK/ticks.$1")" -v k="$tk" -v s="$AGENT_SECS" -v r="$(col 1)" -v rm="$(colmax 1)" \
        -v a="$(col 2)" -v am="$(colmax 2)" -v f="$(col 3)" -v fm="$(colmax 3)" -v l="$2" \
        'BEGIN { printf "| %s | %.2f s | %.2f %% | %d MB (%d) | %d MB (%d) | %d MB (%d) |\n", l, t / k, t / k / s * 100, r / 1024, rm / 1024, a / 1024, am / 1024, f / 1024, fm / 1024 }'
}
{
    echo "## host agent cost"
    echo
    echo "\`BENCH_LIVE_PARTS=agent BENCH_AGENT_SECONDS=$AGENT_SECS bench/live_cost.sh build\` (root; $(nproc) CPUs; this"
    echo "host as it was: $LOAD, and the other work of the machine: a median of $procs processes sampled"
    echo "per window, $newp of them new, $services services uploaded). Two \`hotspur agent -F 19 --period 10s"
    echo "--duration 10s\` side by side (windows back to back: sampling all the time, six times the default"
    echo "10 s per 60 s), one naming frames at the server (the default), one with \`--symbolize agent\`, for"
    echo "$AGENT_SECS s, $windows windows; then \`perf record -a -F 19 --call-graph dwarf,16384\` for as long."
    echo
    echo "| | CPU | of one core | RSS median (max) | anonymous | file-backed |"
    echo "|---|---|---|---|---|---|"
    agent_row $AS "hotspur agent (names at the server)"
    agent_row $AA "hotspur agent --symbolize agent"
    awk -v t="$(cat "$WORK/ticks.$SRV")" -v k="$tk" -v s="$AGENT_SECS" \
        'BEGIN { printf "| hotspur serve (ingest of both, naming of the first) | %.2f s | %.2f %% | | | |\n", t / k, t / k / s * 100 }'
    awk -v s="$AGENT_SECS" '{ printf "| perf record -a --call-graph dwarf | %.2f s | %.2f %% | max %d MB | | |\n", $1 + $2, ($1 + $2) / s * 100, $3 / 1024 }' "$WORK/pt"
    awk -v s="$AGENT_SECS" '{ printf "| + perf report (naming) | %.2f s | %.2f %% | max %d MB | | |\n", $1 + $2, ($1 + $2) / s * 100, $3 / 1024 }' "$WORK/pr"
} >"$SEC2"
cat "$SEC2"
bench_write_section live_cost "host agent cost" "$SEC2" "$DOC"
;; esac
