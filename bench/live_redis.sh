#!/usr/bin/env bash
# live_redis.sh BUILD_DIR — `hotspur record -p` on a real daemon (issue 27's
# "target's throughput within noise of no profiler"): redis-server under
# redis-benchmark, not profiled, profiled by `hotspur record -p PID` and by
# `perf record --call-graph dwarf,16384 -p PID`, both at 100 Hz.
#
# Built for a shared machine, where the throughput of one unprofiled run
# and the next differ by more than a profiler costs:
#  - redis-server runs on one CPU and redis-benchmark on another (taskset;
#    BENCH_SERVER_CPU, default 0, BENCH_CLIENT_CPU, default 1); the
#    profilers are left where the scheduler puts them;
#  - BENCH_ROUNDS rounds (default 7), each running four cases in turn, the
#    order rotating from round to round: none, hotspur, perf and none again
#    ("none2": an A/A pair, whose ratio to "none" is what noise alone does
#    in this run); each case one redis-benchmark run of BENCH_REQUESTS
#    requests per test (default 300 000, -c 4, -t set,get, pipelining 1)
#    while the profiler is attached;
#  - each case's ratio to the "none" of its own round, median over the
#    rounds, beside the A/A ratio's median and its spread (the largest
#    |none2/none - 1|): an effect smaller than that spread is reported as
#    not measurable in this run;
#  - beside throughput, a figure load disturbs much less: redis-server's
#    CPU time per request (the run time of all its threads, /proc/PID/
#    task/*/schedstat, over the benchmark run, divided by the requests).
#    The kernel's work of taking a sample in the target (the stack copy)
#    is charged to the target, so this is the profiler's cost to it.
# Needs root (perf events), redis-server and redis-benchmark (scripts/
# install-deps), perf, taskset. Writes the "record -p on a real daemon"
# section of docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/live_redis.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
source "$HERE/lib.sh"
HOTSPUR=$BUILD/bin/hotspur
ROUNDS=${BENCH_ROUNDS:-7}
REQUESTS=${BENCH_REQUESTS:-300000}
SCPU=${BENCH_SERVER_CPU:-0}
CCPU=${BENCH_CLIENT_CPU:-1}
DOC=$ROOT/docs/BENCHMARKS.md
[ -x "$HOTSPUR" ] || { echo "live_redis: $HOTSPUR is missing; build first (make)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "live_redis: /usr/bin/time is not installed (scripts/install-deps: time)" >&2; exit 1; }
for c in redis-server redis-benchmark redis-cli perf taskset; do
    command -v "$c" >/dev/null || { echo "live_redis: $c is not installed (scripts/install-deps)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "live_redis: run as root (perf events)" >&2; exit 1; }

WORK=$(mktemp -d)
RPID=""
PROF=""
cleanup() {
    [ -z "$PROF" ] || { kill -INT "$PROF" 2>/dev/null || true; wait "$PROF" 2>/dev/null || true; }
    [ -z "$RPID" ] || { kill "$RPID" 2>/dev/null || true; wait "$RPID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
taskset -c "$SCPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
    >"$WORK/redis.log" 2>&1 &
RPID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$PORT" ping >/dev/null || { echo "live_redis: redis-server did not start" >&2; exit 1; }

# redis-server's run time so far, ns (every thread)
srv_ns() { cat /proc/$RPID/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# one redis-benchmark run on the client CPU: "requests/s cpu_ns_per_request"
# (requests/s: the mean of SET and GET)
bench() {
    local c0 c1 rps
    c0=$(srv_ns)
    rps=$(taskset -c "$CCPU" redis-benchmark -p "$PORT" -q -n "$REQUESTS" -c 4 -t set,get 2>/dev/null |
        tr '\r' '\n' | awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $(i+1) == "requests") { s += $i; n++ } }
                            END { if (n) printf "%.0f\n", s / n }')
    c1=$(srv_ns)
    echo "$rps $(((c1 - c0) / (2 * REQUESTS)))"
}

# Start a profiler in the background, in a subshell that writes its CPU time
# (user + system, seconds: bash's times once it has ended) to $WORK/cpu.
# PROF: the profiler's pid (it gets the SIGINT), WRAP: the subshell's.
profiled() {
    rm -f "$WORK/pid" "$WORK/cpu"
    (
        "$@" >/dev/null 2>&1 &
        echo $! >"$WORK/pid"
        wait $! || true
        times >"$WORK/times" # not in a pipe: a forked times would see no children
        awk 'function s(x, a) { split(x, a, "m"); sub("s", "", a[2]); return a[1] * 60 + a[2] }
             NR == 2 { printf "%.3f\n", s($1) + s($2) }' "$WORK/times" >"$WORK/cpu"
    ) &
    WRAP=$!
    until [ -s "$WORK/pid" ]; do sleep 0.01; done
    PROF=$(cat "$WORK/pid")
}

run_case() { # case -> "requests/s ns_per_request" in $WORK/out, "profiler_cpu_s report_cpu_s" in $WORK/pcpu
    echo "0 0" >"$WORK/pcpu"
    case $1 in
    none | none2) ;;
    hotspur) profiled "$HOTSPUR" record -p "$RPID" -F 100 -o "$WORK/h.pb.gz" ;;
    perf) profiled perf record -q -F 100 --call-graph dwarf,16384 -p "$RPID" -o "$WORK/perf.data" ;;
    esac
    [ -z "$PROF" ] || sleep 1 # attached before the load starts
    bench >"$WORK/out"
    if [ -n "$PROF" ]; then
        kill -INT "$PROF" 2>/dev/null || true
        wait "$WRAP" 2>/dev/null || true
        PROF=""
        local rep=0
        if [ "$1" = perf ]; then # perf record only copies the stacks: perf report unwinds and names them
            /usr/bin/time -f "%U %S" -o "$WORK/t" perf report -i "$WORK/perf.data" --stdio >/dev/null 2>&1 || true
            rep=$(awk '{ print $1 + $2 }' "$WORK/t")
        fi
        echo "$(cat "$WORK/cpu" 2>/dev/null || echo 0) $rep" >"$WORK/pcpu"
    fi
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date -u +%H:%M)
CASES=(none hotspur perf none2)
echo "round none hotspur perf none2 (requests/s ns/request)" >&2
: >"$WORK/rows"
: >"$WORK/pcpu_rows"
for ((r = 0; r < ROUNDS; r++)); do
    declare -A got=() pc=()
    for ((k = 0; k < 4; k++)); do
        c=${CASES[$(((k + r) % 4))]}
        run_case "$c"
        got[$c]=$(cat "$WORK/out")
        pc[$c]=$(cat "$WORK/pcpu")
    done
    echo "$r ${got[none]} ${got[hotspur]} ${got[perf]} ${got[none2]}" | tee -a "$WORK/rows" >&2
    echo "$r ${pc[hotspur]% *} ${pc[perf]}" | tee -a "$WORK/pcpu_rows" >&2 # hotspur record, perf record, perf report (s)
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
T1=$(date -u +%H:%M)
SEC=$WORK/section
awk -v rounds="$ROUNDS" -v req="$REQUESTS" -v l0="$LOAD0" -v l1="$LOAD1" -v t0="$T0" -v t1="$T1" \
    -v day="$(date -u +%F)" -v ncpu="$(nproc)" -v scpu="$SCPU" -v ccpu="$CCPU" '
function median(a, n,   i, j, t, b) { for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
function absv(x) { return x < 0 ? -x : x }
# the verdict on an effect (median ratio - 1) against the A/A spread
function verdict(e, aa) { return absv(e) <= aa ? "not measurable in this run (A/A spread " sprintf("%.1f %%", aa * 100) ")" : sprintf("%+.1f %%, beyond the A/A spread (%.1f %%)", e * 100, aa * 100) }
{ n++; rn[n] = $2; cn[n] = $3; rh[n] = $4; ch[n] = $5; rp[n] = $6; cp[n] = $7; r2[n] = $8; c2[n] = $9
  qh[n] = $4 / $2; qp[n] = $6 / $2; q2[n] = $8 / $2; kh[n] = $5 / $3; kp[n] = $7 / $3; k2[n] = $9 / $3
  if (absv(q2[n] - 1) > aar) aar = absv(q2[n] - 1); if (absv(k2[n] - 1) > aac) aac = absv(k2[n] - 1)
  rows = rows sprintf("%s%s / %s / %s / %s (%s / %s / %s / %s ns)", n > 1 ? ", " : "", $2, $4, $6, $8, $3, $5, $7, $9) }
END {
    printf "## record -p on a real daemon: redis-server\x27s throughput\n\n"
    printf "`BENCH_ROUNDS=%d BENCH_REQUESTS=%d bench/live_redis.sh build` (root; %d CPUs shared with other engineers\x27\n", rounds, req, ncpu
    printf "builds and "
    printf "tests), %s %s-%s UTC, load average %s at the start, %s at the end. redis-server pinned to CPU %s,\n", day, t0, t1, l0, l1, scpu
    printf "redis-benchmark (`-n %d -c 4 -t set,get`, requests/s = the mean of SET and GET) to CPU %s, the\n", req, ccpu
    printf "profilers unpinned, both at 100 Hz (`hotspur record -p PID -F 100`, `perf record -F 100 --call-graph\n"
    printf "dwarf,16384 -p PID`). Four cases per round, the order rotating: none, hotspur, perf and a second\n"
    printf "unprofiled run (none2: A/A). Ratios are to the unprofiled run of the same round, medians over the\n"
    printf "rounds; the A/A spread is the largest |none2/none - 1|. CPU/request: redis-server\x27s run time (all\n"
    printf "threads, schedstat) over the benchmark run divided by its %d requests, which includes the kernel\x27s\n", 2 * req
    printf "work of taking the samples in the target and which load disturbs much less than throughput.\n\n"
    printf "| case | requests/s (median) | vs none, same round | CPU per request (median) | vs none, same round |\n|---|---|---|---|---|\n"
    printf "| none | %.0f | | %.0f ns | |\n", median(rn, n), median(cn, n)
    printf "| none2 (A/A) | %.0f | %+.1f %% (spread %.1f %%) | %.0f ns | %+.1f %% (spread %.1f %%) |\n", median(r2, n), (median(q2, n) - 1) * 100, aar * 100, median(c2, n), (median(k2, n) - 1) * 100, aac * 100
    printf "| hotspur record -p | %.0f | %+.1f %% | %.0f ns | %+.1f %% |\n", median(rh, n), (median(qh, n) - 1) * 100, median(ch, n), (median(kh, n) - 1) * 100
    printf "| perf record --call-graph dwarf -p | %.0f | %+.1f %% | %.0f ns | %+.1f %% |\n", median(rp, n), (median(qp, n) - 1) * 100, median(cp, n), (median(kp, n) - 1) * 100
    printf "\nThroughput: hotspur %s; perf %s.\n", verdict(median(qh, n) - 1, aar), verdict(median(qp, n) - 1, aar)
    printf "CPU per request: hotspur %s; perf %s.\n", verdict(median(kh, n) - 1, aac), verdict(median(kp, n) - 1, aac)
    printf "\nRounds (none / hotspur / perf / none2, requests/s, then ns of redis-server CPU per request): %s.\n", rows
}' "$WORK/rows" >"$SEC"
# the profilers' own CPU, same runs: what the issue's "at most half of perf's" compares
awk -v req="$REQUESTS" '
function median(a, n,   i, j, t, b) { for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
{ n++; h[n] = $2; p[n] = $3; r[n] = $4; pr[n] = $3 + $4; q[n] = $3 > 0 ? $2 / $3 : 0; qr[n] = pr[n] > 0 ? $2 / pr[n] : 0
  rows = rows sprintf("%s%.2f / %.2f + %.2f", n > 1 ? ", " : "", $2, $3, $4) }
END {
    printf "\nThe profilers\x27 own CPU (user + system, the same runs: attached 1 s before the benchmark\x27s\n"
    printf "%d requests, stopped by SIGINT after it; medians): hotspur record -p %.2f s (sampling, unwinding\n", 2 * req, median(h, n)
    printf "and naming); perf record %.2f s, plus %.2f s of perf report, which unwinds and names what perf\n", median(p, n), median(r, n)
    printf "record copied. hotspur / (perf record + perf report): %.0f %%; hotspur / perf record alone: %.0f %%\n", 100 * median(qr, n), 100 * median(q, n)
    printf "(medians of the per-round ratios). Rounds (hotspur / perf record + perf report, s): %s.\n", rows
}' "$WORK/pcpu_rows" >>"$SEC"
cat "$SEC"
bench_write_section live_redis "record -p on a real daemon: redis-server's throughput" "$SEC" "$DOC"
