#!/usr/bin/env bash
# attach_agent.sh BUILD_DIR — `hotspur attach` with the agent (issue 32):
# (1) how long attach and detach stop the target's thread (goal: under 50 ms
# each), over BENCH_N attach/detach cycles (default 20) of `--exact` on
# tests/programs/attach_daemon blocked in read() on a FIFO; the first attach
# maps and relocates the agent and its symbolizer; (2) the cost of the heap
# hooks after an attach beside the preloaded agent's on the same workload:
# the daemon's "bench N" (N malloc/free pairs, timed by the daemon itself),
# per pair, in one run side by side: no agent, preloaded sampled, attached
# sampled, preloaded exact, attached exact; BENCH_ROUNDS rounds (default 5),
# (1b) the wall time of a detach command, --exact beside --leaks;
# medians. Prints the load average (timing on a shared box is noisy: the
# ratios are what to read). Callgrind cannot follow an attach (valgrind's
# process is not ptrace-able that way): time only.
set -euo pipefail
BUILD=${1:-build}
N=${BENCH_N:-20}
ROUNDS=${BENCH_ROUNDS:-5}
PAIRS=${BENCH_PAIRS:-2000000}
H="$BUILD/bin/hotspur"
LIB=$(realpath "$BUILD/lib/libhotspur.so")
D="$BUILD/tests/programs/attach_daemon"
T=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT

# start NAME [ENV...]: a daemon reading $T/NAME.in (written through fds[NAME]), answers in
# $T/NAME.out; its pid in $last
declare -A fds
start() {
    local name=$1
    shift
    mkfifo "$T/$name.in"
    env "$@" "$D" <"$T/$name.in" >"$T/$name.out" 2>"$T/$name.err" &
    pids+=($!)
    disown
    eval "exec {fd}>\"$T/$name.in\""
    fds[$name]=$fd
    for _ in $(seq 100); do grep -q ready "$T/$name.out" && break; sleep 0.05; done
    last=$(awk '/^ready/ { print $2 }' "$T/$name.out")
}
ask() { # ask NAME LINE: the answer
    local n
    n=$(wc -l <"$T/$1.out")
    echo "$2" >&"${fds[$1]}"
    for _ in $(seq 2000); do [ "$(wc -l <"$T/$1.out")" -gt "$n" ] && break; sleep 0.01; done
    tail -1 "$T/$1.out"
}
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# (1) stop times
start stop
pid=$last
for i in $(seq "$N"); do
    "$H" attach "$pid" --exact -o "$T/s.pb.gz" | sed -n 's/.*stopped \([0-9.]*\) ms.*/attach \1/p'
    ask stop "round 10" >/dev/null
    "$H" attach "$pid" --detach | sed -n 's/.*stopped \([0-9.]*\) ms.*/detach \1/p'
done >"$T/stops"
first=$(awk '$1 == "attach" { print $2; exit }' "$T/stops")
am=$(awk '$1 == "attach" && n++ { print $2 }' "$T/stops" | med)
ax=$(awk '$1 == "attach" && n++ { print $2 }' "$T/stops" | sort -n | tail -1)
dm=$(awk '$1 == "detach" { print $2 }' "$T/stops" | med)
dx=$(awk '$1 == "detach" { print $2 }' "$T/stops" | sort -n | tail -1)
echo "attach/detach stop time (ms) over $N cycles (--exact, daemon blocked in read):"
echo "  first attach ${first}; later attaches median ${am}, max ${ax}; detaches median ${dm}, max ${dx}"

# (1b) the detach command's wall time, --exact against --leaks (its leak
# scan stops the other threads and reads the live table), alternating
for i in $(seq 5); do
    for k in exact leaks; do
        "$H" attach "$pid" --$k -o "$T/w.pb.gz" >/dev/null
        ask stop "round 10" >/dev/null
        t0=$(date +%s%N)
        "$H" attach "$pid" --detach >/dev/null
        echo "$k $((($(date +%s%N) - t0) / 1000000))"
    done
done >"$T/walls"
echo "detach command wall time (ms), median of 5 side by side: --exact $(awk '$1 == "exact" { print $2 }' "$T/walls" | med), --leaks $(awk '$1 == "leaks" { print $2 }' "$T/walls" | med)"

# (2) hook cost, ns per malloc/free pair
start none
start pres HOTSPUR_CPU=0 HOTSPUR_HEAP=1 HOTSPUR_CONTROL=0 HOTSPUR_OUTPUT="$T/pres.pb.gz" LD_PRELOAD="$LIB"
start pree HOTSPUR_CPU=0 HOTSPUR_HEAP=1 HOTSPUR_HEAP_RATE=1 HOTSPUR_CONTROL=0 HOTSPUR_OUTPUT="$T/pree.pb.gz" LD_PRELOAD="$LIB"
start atts
atts=$last
start atte
atte=$last
"$H" attach "$atts" -o "$T/atts.pb.gz" >/dev/null
"$H" attach "$atte" --exact -o "$T/atte.pb.gz" >/dev/null
for r in $(seq "$ROUNDS"); do
    for k in none pres atts pree atte; do
        echo "$k $(ask "$k" "bench $PAIRS" | awk '{ print $2 }')"
    done
done >"$T/cost"
m() { awk -v k="$1" '$1 == k { print $2 }' "$T/cost" | med; }
printf "heap hooks, ns per malloc/free pair (%d pairs, median of %d rounds side by side):\n" "$PAIRS" "$ROUNDS"
printf "  no agent %s; sampled: preloaded %s, attached %s; exact: preloaded %s, attached %s\n" \
    "$(m none)" "$(m pres)" "$(m atts)" "$(m pree)" "$(m atte)"
awk -v n="$(m none)" -v ps="$(m pres)" -v as="$(m atts)" -v pe="$(m pree)" -v ae="$(m atte)" 'BEGIN {
    printf "  vs no agent: sampled preloaded %.2fx, attached %.2fx; exact preloaded %.2fx, attached %.2fx\n", ps / n, as / n, pe / n, ae / n }'
"$H" attach "$atts" --detach >/dev/null
"$H" attach "$atte" --detach >/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
