#!/usr/bin/env bash
# live_redis.sh BUILD_DIR — `hotspur record -p` on a real daemon: the
# requests per second redis-benchmark gets from a redis-server that is not
# profiled, profiled by `hotspur record -p PID` and by `perf record
# --call-graph dwarf -p PID`, both at 100 Hz (issue 27's "target's
# throughput within noise of no profiler"). BENCH_ROUNDS rounds (default 5),
# each running the three cases in turn (the order rotates between rounds),
# each case one redis-benchmark run of BENCH_REQUESTS requests (default
# 200 000, -c 4, -t set,get, pipelining 1) while the profiler is attached.
# Prints per case the median requests/s over the rounds, the spread of the
# unprofiled runs (max/min - 1: what "noise" is here) and each case's
# median ratio to the unprofiled run of the same round. Needs root (perf
# events), redis-server and redis-benchmark (scripts/install-deps), perf.
# Not part of `make check`; the figures go to docs/BENCHMARKS.md by hand.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/live_redis.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HOTSPUR=$BUILD/bin/hotspur
ROUNDS=${BENCH_ROUNDS:-5}
REQUESTS=${BENCH_REQUESTS:-200000}
[ -x "$HOTSPUR" ] || { echo "live_redis: $HOTSPUR is missing; build first (make)" >&2; exit 1; }
for c in redis-server redis-benchmark perf; do
    command -v "$c" >/dev/null || { echo "live_redis: $c is not installed (scripts/install-deps)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "live_redis: run as root (perf events)" >&2; exit 1; }

WORK=$(mktemp -d)
RPID=""
cleanup() {
    [ -z "$RPID" ] || { kill "$RPID" 2>/dev/null || true; wait "$RPID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
RPID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

# one redis-benchmark run: requests per second (the mean of SET and GET)
bench() {
    redis-benchmark -p "$PORT" -q -n "$REQUESTS" -c 4 -t set,get 2>/dev/null |
        tr '\r' '\n' | awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $(i+1) == "requests") { s += $i; n++ } }
                            END { if (n) printf "%.0f\n", s / n }'
}

run_case() { # case -> requests/s
    local pid=""
    case $1 in
    none) ;;
    hotspur) "$HOTSPUR" record -p "$RPID" -F 100 -o "$WORK/h.pb.gz" >/dev/null 2>&1 & pid=$! ;;
    perf) perf record -q -F 100 --call-graph dwarf,16384 -p "$RPID" -o "$WORK/perf.data" >/dev/null 2>&1 & pid=$! ;;
    esac
    [ -z "$pid" ] || sleep 1 # attached before the load starts
    bench
    if [ -n "$pid" ]; then
        kill -INT "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}

CASES=(none hotspur perf)
echo "round none hotspur perf" >"$WORK/rows"
for ((r = 0; r < ROUNDS; r++)); do
    declare -A got=()
    for ((k = 0; k < 3; k++)); do
        c=${CASES[$(((k + r) % 3))]}
        got[$c]=$(run_case "$c")
    done
    echo "$r ${got[none]} ${got[hotspur]} ${got[perf]}" | tee -a "$WORK/rows" >&2
done
awk -v rounds="$ROUNDS" -v req="$REQUESTS" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                   return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
NR > 1 { n++; none[n] = $2; h[n] = $3; p[n] = $4; rh[n] = $3 / $2; rp[n] = $4 / $2
         if (n == 1 || $2 < lo) lo = $2; if (n == 1 || $2 > hi) hi = $2 }
END {
    printf "bench/live_redis.sh: redis-benchmark -n %d -c 4 -t set,get, %d rounds, load average at the end %s\n", req, rounds, load
    printf "| profiler (100 Hz, attached by pid) | requests/s (median) | vs none, same round (median) |\n|---|---|---|\n"
    printf "| none | %.0f | (spread of the unprofiled runs: %.1f %%) |\n", median(none, n), (hi / lo - 1) * 100
    printf "| hotspur record -p | %.0f | %+.1f %% |\n", median(h, n), (median(rh, n) - 1) * 100
    printf "| perf record --call-graph dwarf -p | %.0f | %+.1f %% |\n", median(p, n), (median(rp, n) - 1) * 100
}' "$WORK/rows"
