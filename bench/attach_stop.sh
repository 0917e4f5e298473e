#!/usr/bin/env bash
# attach_stop.sh BUILD_DIR — how long `hotspur attach --load` stops the
# target's thread (issue 32's goal: under 50 ms): a process blocked in read()
# on a pipe (tests/programs/attach_reader) gets a small library loaded
# (tests/programs/libattach_probe.so, first load: mapping, relocation,
# constructor) and then N-1 more loads of the same library (the loader finds
# it loaded: the cost of the stop itself), each with a call into it. Prints
# the first load's stop and the median / max of the others, as printed by
# attach itself (CLOCK_MONOTONIC from PTRACE_SEIZE to PTRACE_DETACH), and the
# load average. Environment: BENCH_N (default 50).
set -euo pipefail
BUILD=${1:-build}
N=${BENCH_N:-50}
H="$BUILD/bin/hotspur"
PROGS="$BUILD/tests/programs"
T=$(mktemp -d)
trap 'exec 7>&- 2>/dev/null || true; kill "$rpid" 2>/dev/null || true; rm -rf "$T"' EXIT
mkfifo "$T/fifo"
"$PROGS/attach_reader" <"$T/fifo" >"$T/out" 2>&1 &
rpid=$!
exec 7>"$T/fifo"
for _ in $(seq 50); do grep -q ready "$T/out" && break; sleep 0.1; done
for i in $(seq "$N"); do
    "$H" attach "$rpid" --load "$(realpath "$PROGS/libattach_probe.so")" --call attach_probe_mark \
        --arg "$T/mark" | sed -n 's/.*stopped \([0-9.]*\) ms, \([0-9.]*\) ms of it.*/\1 \2/p'
done >"$T/times"
first=$(head -1 "$T/times")
tail -n +2 "$T/times" | sort -n >"$T/rest"
med=$(awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' "$T/rest")
max=$(tail -1 "$T/rest" | cut -d' ' -f1)
echo "attach --load stop time (ms), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  first load: stopped ${first% *} ms (${first#* } ms in the calls)"
echo "  $((N - 1)) loads of the loaded library: median ${med} ms, max ${max} ms"
