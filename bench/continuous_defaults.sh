#!/usr/bin/env bash
# continuous_defaults.sh BUILD_DIR — what continuous mode costs a real
# program at the real defaults (HOTSPUR_PERIOD=60s, HOTSPUR_DURATION=10s,
# CPU profile), run, not derived.
#
# The program: the demo service (examples/shakesapp, version 4: an HTTP
# server on libmicrohttpd answering phrase counts over Debian's fortunes),
# driven by its own client (sequential queries, as fast as it answers). Two
# copies run at the same time, each with its own client, so both see the
# same machine: one alone, one preloaded with the agent in continuous mode
# uploading to a local `hotspur serve` (not counted) with nothing set but
# HOTSPUR_SERVER, HOTSPUR_SERVICE and HOTSPUR_STATS=1. They run
# BENCH_DEFAULTS_PERIODS periods (default 5, so 5 windows) after a first
# period of warm-up that is not counted; ~6 min in all.
#
# Measured over the counted periods, every second from /proc:
#   - the agent's own threads ("hotspur": windows, encoding, symbolization;
#     "hotspur-up": uploads) from /proc/PID/task/TID/stat: the most direct
#     figure, as a share of the program's CPU and of one core;
#   - the CPU signal handler (on the program's threads, during windows):
#     HOTSPUR_STATS=1 prints samples and mean ns per sample at exit;
#   - each server's CPU (/proc/PID/stat utime+stime) per request answered;
#   - VmRSS: the median over the counted periods, and the highest sample.
# Prints the table and writes the "## Continuous mode at the defaults"
# section of docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
# BENCH_SKIP_DEFAULTS=1 skips it (make bench then takes 6 min less).
# BENCH_DEFAULTS_SYMBOLIZE=server runs the agent copy with
# HOTSPUR_SYMBOLIZE=server (addresses uploaded, named by the server) and
# writes the section "## Continuous mode at the defaults, server
# symbolization" instead; make bench runs both.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/continuous_defaults.sh BUILD_DIR" >&2
    exit 2
fi
if [ "${BENCH_SKIP_DEFAULTS:-0}" = 1 ]; then
    echo "continuous_defaults: skipped (BENCH_SKIP_DEFAULTS=1)"
    exit 0
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
PERIODS=${BENCH_DEFAULTS_PERIODS:-5}
SYMBOLIZE=${BENCH_DEFAULTS_SYMBOLIZE:-agent}
TITLE="Continuous mode at the defaults"
SYMNOTE="symbolized in the agent"
if [ "$SYMBOLIZE" = server ]; then
    TITLE="Continuous mode at the defaults, server symbolization"
    SYMNOTE="HOTSPUR_SYMBOLIZE=server: addresses and build IDs uploaded, frames named by the server"
fi
PERIOD=60
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
EX=$BUILD/examples
INVOCATION="bench/continuous_defaults.sh $1"
if [ "$PERIODS" != 5 ]; then INVOCATION="BENCH_DEFAULTS_PERIODS=$PERIODS $INVOCATION"; fi
if [ "$SYMBOLIZE" = server ]; then INVOCATION="BENCH_DEFAULTS_SYMBOLIZE=server $INVOCATION"; fi
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
bench_check_build continuous_defaults "$BUILD" 1 1
for f in "$EX/shakesapp_server" "$EX/shakesapp_client"; do
    [ -x "$f" ] || { echo "continuous_defaults: $f is missing; build first (make)" >&2; exit 1; }
done
[ -d /usr/share/games/fortunes ] || { echo "continuous_defaults: the corpus is missing (Debian package fortunes)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-bench.XXXXXX")
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

"$HOTSPUR" serve --listen 127.0.0.1:0 --data "$TMP/server" 2>"$TMP/serve.log" &
PIDS+=($!)
URL=$(bench_serve_url "$TMP/serve.log") || { echo "continuous_defaults: hotspur serve did not start: $(cat "$TMP/serve.log")" >&2; exit 1; }

SERVICE=defaults-$$
"$EX/shakesapp_server" -version 4 -port_file "$TMP/port.none" >"$TMP/app.none.log" 2>&1 &
APP_NONE=$!
PIDS+=("$APP_NONE")
LD_PRELOAD="$BUILD/lib/libhotspur.so" HOTSPUR_SERVER="$URL" HOTSPUR_SERVICE="$SERVICE" HOTSPUR_STATS=1 HOTSPUR_SYMBOLIZE="$SYMBOLIZE" \
    "$EX/shakesapp_server" -version 4 -port_file "$TMP/port.agent" >"$TMP/app.agent.log" 2>"$TMP/app.agent.err" &
APP_AGENT=$!
PIDS+=("$APP_AGENT")
bench_wait_file continuous_defaults "$TMP/port.none"
bench_wait_file continuous_defaults "$TMP/port.agent"
TOTAL=$(((PERIODS + 1) * PERIOD + 5))
CLIENTS=()
for cfg in none agent; do
    "$EX/shakesapp_client" -server "http://127.0.0.1:$(cat "$TMP/port.$cfg")" -duration "$TOTAL" -round_size 20 \
        >"$TMP/client.$cfg.log" 2>"$TMP/client.$cfg.err" &
    CLIENTS+=($!)
    PIDS+=($!)
done
echo "continuous_defaults: shakesapp (version 4) twice, with and without the agent at the defaults, $((PERIODS + 1)) periods of ${PERIOD} s (the first one not counted)"

# One line a second: time, then per server CPU ticks and VmRSS KiB, then
# the agent threads' ticks.
ticks() { bench_ticks "$1"; }
rss() { bench_rss "$1"; }
requests() { awk '/^Simulated/ { n += $2 } END { print n + 0 }' "$1"; }
T0=$SECONDS
: >"$TMP/samples"
mark_req_none="" mark_req_agent="" shown=0
while [ $((SECONDS - T0)) -lt $((TOTAL - 3)) ]; do
    el=$((SECONDS - T0))
    echo "$el $(ticks "$APP_NONE") $(rss "$APP_NONE") $(ticks "$APP_AGENT") $(rss "$APP_AGENT") $(bench_agent_ticks "$APP_AGENT")" >>"$TMP/samples"
    if [ -z "$mark_req_none" ] && [ "$el" -ge "$PERIOD" ]; then
        mark_req_none=$(requests "$TMP/client.none.log")
        mark_req_agent=$(requests "$TMP/client.agent.log")
    fi
    if [ $((el / 60)) -gt "$shown" ]; then
        shown=$((el / 60))
        echo "continuous_defaults: ${el} s of $TOTAL"
    fi
    sleep 1
done
req_none=$(($(requests "$TMP/client.none.log") - mark_req_none))
req_agent=$(($(requests "$TMP/client.agent.log") - mark_req_agent))
kill -TERM "${CLIENTS[@]}" 2>/dev/null || true
wait "${CLIENTS[@]}" 2>/dev/null || true
kill -TERM "$APP_NONE" "$APP_AGENT"
wait "$APP_NONE" || true
wait "$APP_AGENT" || true
sleep 0.5
windows=$(curl -s --max-time 10 "$URL/api/v1/profiles?service=$SERVICE&type=cpu&from=now-1h&until=now&limit=1000" |
          grep -o '"id"' | wc -l)
# "hotspur: N samples, X ns per sample in the handler" (HOTSPUR_STATS=1)
read -r hsamples hns < <(sed -n 's/^hotspur: \([0-9]*\) samples, \([0-9.]*\) ns per sample in the handler.*/\1 \2/p' \
                         "$TMP/app.agent.err" | tail -n 1 | awk '{ print $1 + 0, $2 + 0 }')
if grep -v -e '^hotspur: [0-9]* samples' -e '^hotspur: uploads to' "$TMP/app.agent.err" | grep -q .; then
    echo "continuous_defaults: unexpected stderr from the agent:" >&2
    cat "$TMP/app.agent.err" >&2
    exit 1
fi

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
awk -v period="$PERIOD" -v periods="$PERIODS" -v tck="$(getconf CLK_TCK)" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" \
    -v nproc="$(nproc)" -v model="$cpu_model" -v load="$load" -v cmd="$INVOCATION" -v windows="$windows" \
    -v rn="$req_none" -v ra="$req_agent" -v hs="$hsamples" -v hns="$hns" -v title="$TITLE" -v symnote="$SYMNOTE" "$BENCH_AWK_MED"'
$1 >= period { n++; t[n] = $1; cn[n] = $2; rn_[n] = $3; ca[n] = $4; ra_[n] = $5; ag[n] = $6
               if ($3 > maxn) maxn = $3; if ($5 > maxa) maxa = $5 }
END {
    secs = t[n] - t[1]
    cpu_none = (cn[n] - cn[1]) / tck; cpu_agent = (ca[n] - ca[1]) / tck; agent = (ag[n] - ag[1]) / tck
    for (i = 1; i <= n; i++) { a[i] = rn_[i] }; mn = med(a, n) / 1024
    for (i = 1; i <= n; i++) { a[i] = ra_[i] }; ma = med(a, n) / 1024
    handler = hs * hns / 1e9 * periods / (periods + 1) # samples of the counted periods (windows are alike)
    msn = rn ? 1000 * cpu_none / rn : 0; msa = ra ? 1000 * cpu_agent / ra : 0
    print "## " title
    print ""
    printf "Measured %s on %s cores of \"%s\"; load average at the end %s (a machine shared with other builds).\n", date, nproc, model, load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "Program: the demo service (examples/shakesapp, version 4: libmicrohttpd, phrase counts over Debian'\''s fortunes) under its own client (sequential queries, as fast as it answers). Two copies at once, each with its own client: one alone, one with the agent preloaded in continuous mode at the defaults (`HOTSPUR_PERIOD=60s HOTSPUR_DURATION=10s`, CPU profile, %s, uploaded to a local `hotspur serve` not counted here). Counted: %d periods of %d s after a first one of warm-up (%.0f s); %d windows stored in all.\n", symnote, periods, period, secs, windows
    print ""
    print "| | alone | with the agent |"
    print "|---|--:|--:|"
    printf "| requests answered | %d | %d |\n", rn, ra
    printf "| server CPU, s | %.2f | %.2f |\n", cpu_none, cpu_agent
    printf "| server CPU per request, ms | %.3f | %.3f (%+.1f%%) |\n", msn, msa, (msn > 0 ? (msa / msn - 1) * 100 : 0)
    printf "| VmRSS median, MiB | %.1f | %.1f (%+.1f) |\n", mn, ma, ma - mn
    printf "| VmRSS highest sample, MiB | %.1f | %.1f (%+.1f) |\n", maxn / 1024, maxa / 1024, (maxa - maxn) / 1024
    print ""
    printf "Measured directly: the agent'\''s threads (windows, encoding, symbolization, uploads) took **%.3f s of CPU in %.0f s** (%.0f ms per period), %.3f%% of one core and **%.2f%% of the program'\''s CPU**; the CPU signal handler took about %.3f s (%d samples in the whole run at %.0f ns each, counted pro rata), %.2f%% of the program'\''s CPU. Together: **%.2f%%** (goal: under 1%%).\n", agent, secs, 1000 * agent / periods, 100 * agent / secs, 100 * agent / cpu_agent, handler, hs, hns, 100 * handler / cpu_agent, 100 * (agent + handler) / cpu_agent
    print ""
    printf "The per-request comparison of the two copies is the indirect check: on this shared machine two processes side by side differ by a few percent from each other without any agent, so a difference of %+.1f%% is %s. Memory: **%+.1f MiB** RSS at steady state (median; goal: under 10 MiB), %+.1f MiB at the highest sample (a window being encoded and symbolized).\n", (msn > 0 ? (msa / msn - 1) * 100 : 0), ((msa / msn - 1) * 100 < 3 && (msa / msn - 1) * 100 > -3 ? "not measurable in this run" : "what this run shows, noise included"), ma - mn, (maxa - maxn) / 1024
}' "$TMP/samples" >"$TMP/section.md"
echo
cat "$TMP/section.md"
bench_write_section continuous_defaults "$TITLE" "$TMP/section.md" "$DOC"
