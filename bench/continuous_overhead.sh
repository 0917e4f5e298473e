#!/usr/bin/env bash
# continuous_overhead.sh BUILD_DIR — what continuous mode costs a real program.
#
# The program: sqlite3 (Debian's) running a fixed SQL workload in memory
# (200 000 inserted rows, an index, then BENCH_WORK rounds of LIKE scans,
# GROUP BY and COUNT DISTINCT). Configurations, interleaved round by round
# (order rotated each round), each run of the same work:
#   none        sqlite3 alone
#   agent-file  the agent preloaded as `hotspur record` runs it (CPU profile
#               written at exit, symbolized outside): what any profiling
#               costs, for comparison
#   cont-cpu    the agent preloaded in continuous mode (CPU profile, the
#               default), uploading to a local `hotspur serve`
#   cont-heap   the same with the heap profile too (HOTSPUR_HEAP=1)
# with HOTSPUR_PERIOD=5s HOTSPUR_DURATION=2s, so a run of ~20 s reaches
# steady state (several windows uploaded, the symbolizer warm).
#
# Measured per run: CPU (user+sys of sqlite3, agent threads included,
# getrusage), wall time, RSS (VmRSS sampled every 0.5 s; the median over the
# second half of the run is the steady state), the CPU time of the agent's
# own threads ("hotspur", "hotspur-up": window encoding, symbolization and
# upload, from /proc/PID/task/*/stat) and the windows the server stored.
# The server's own cost (another process) is not counted.
#
# The defaults (HOTSPUR_PERIOD=60s, HOTSPUR_DURATION=10s) are not run: the
# CPU sampler records only inside windows (2 s of 5 here, 10 s of 60 at the
# defaults) and the agent threads' work per window is measured directly, so
# the defaults' figure is that work once per 60 s plus the sampler during
# a sixth of the time. The report says so.
#
# Prints the table and writes the "## Continuous mode overhead" section of
# docs/BENCHMARKS.md. Environment: BENCH_ROUNDS (default 3, at least 3),
# BENCH_WORK (query rounds, default 200), BENCH_NO_DOC=1 (print only).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/continuous_overhead.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-3}
WORK=${BENCH_WORK:-200}
PERIOD=5
DURATION=2
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
INVOCATION="bench/continuous_overhead.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi

bench_check_build continuous_overhead "$BUILD" "$ROUNDS" 3
SQLITE=$(command -v sqlite3 || true)
if [ -z "$SQLITE" ]; then
    echo "continuous_overhead: sqlite3 is missing (Debian package sqlite3; scripts/install-deps)" >&2
    exit 1
fi
BIN=$BUILD/bench
mkdir -p "$BIN"
CC=${CC:-cc}
"$CC" -O2 -g -Wall -Wextra -Werror -o "$BIN/runstat" "$HERE/runstat.c"
RUNSTAT=$BIN/runstat

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-bench.XXXXXX")
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT

# ---- the workload ----
{
    echo "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c INTEGER);"
    echo "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 200000)"
    echo "INSERT INTO t SELECT i, printf('%08x-%d', (i * 2654435761) % 4294967296, i % 97), (i * 7919) % 1000 FROM r;"
    echo "CREATE INDEX tc ON t(c);"
    for ((i = 1; i <= WORK; i++)); do
        echo "SELECT c % 10, count(*), sum(length(b)) FROM t WHERE b LIKE '%$((i % 10))a%' GROUP BY c % 10 ORDER BY 1 LIMIT 1;"
        echo "SELECT count(DISTINCT substr(b, 1, 3)) FROM t WHERE c BETWEEN $i AND $((i + 400));"
    done
} >"$TMP/work.sql"

# ---- the collector ----
"$HOTSPUR" serve --listen 127.0.0.1:0 --data "$TMP/server" >"$TMP/server.out" 2>"$TMP/server.log" &
SERVER_PID=$!
if ! URL=$(bench_serve_url "$TMP/server.log"); then
    echo "continuous_overhead: hotspur serve did not start: $(cat "$TMP/server.log")" >&2
    exit 1
fi

# ---- one run: appends "cfg round wall cpu rss_kib agent_s windows" ----
REF_OUT=""
run_one() { # CONFIG ROUND (0: warm-up, not recorded)
    local cfg=$1 round=$2 cmd service="bench-$1-$2"
    case $cfg in
    none) cmd=("$SQLITE" :memory:) ;;
    agent-file) cmd=(env "LD_PRELOAD=$BUILD/lib/libhotspur.so" "HOTSPUR_OUTPUT=$TMP/file.pb.gz" HOTSPUR_DEFER_SYMBOLS=1
                     HOTSPUR_CONTROL=0 "$SQLITE" :memory:) ;;
    cont-cpu) cmd=(env "LD_PRELOAD=$BUILD/lib/libhotspur.so" "HOTSPUR_SERVER=$URL" "HOTSPUR_SERVICE=$service"
                   "HOTSPUR_PERIOD=${PERIOD}s" "HOTSPUR_DURATION=${DURATION}s" HOTSPUR_CONTROL=0 "$SQLITE" :memory:) ;;
    cont-heap) cmd=(env "LD_PRELOAD=$BUILD/lib/libhotspur.so" "HOTSPUR_SERVER=$URL" "HOTSPUR_SERVICE=$service"
                    "HOTSPUR_PERIOD=${PERIOD}s" "HOTSPUR_DURATION=${DURATION}s" HOTSPUR_CONTROL=0 HOTSPUR_HEAP=1
                    "$SQLITE" :memory:) ;;
    esac
    "$RUNSTAT" "$TMP/rs" -- "${cmd[@]}" <"$TMP/work.sql" >"$TMP/out" 2>"$TMP/err" &
    local rs=$! pid="" t0=$SECONDS
    : >"$TMP/samples"
    while kill -0 "$rs" 2>/dev/null; do
        if [ -z "$pid" ]; then
            pid=$(cat "/proc/$rs/task/$rs/children" 2>/dev/null | awk '{ print $1 }')
            # env execs sqlite3 in place: same pid.
        fi
        if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
            local rss agent
            rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
            agent=$(bench_agent_ticks "$pid")
            [ -n "$rss" ] && echo "$(date +%s.%N) $rss $agent" >>"$TMP/samples"
        fi
        sleep 0.5
    done
    if ! wait "$rs"; then
        echo "continuous_overhead: $cfg failed:" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
    local out
    out=$(md5sum <"$TMP/out")
    if [ -z "$REF_OUT" ]; then REF_OUT=$out; fi
    if [ "$out" != "$REF_OUT" ]; then
        echo "continuous_overhead: $cfg changed sqlite3's output" >&2
        exit 1
    fi
    if [ -s "$TMP/err" ]; then
        echo "continuous_overhead: $cfg: unexpected stderr:" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
    [ "$round" -gt 0 ] || return 0
    local wall user sys windows=0 tck
    read -r wall user sys _ <"$TMP/rs"
    tck=$(getconf CLK_TCK)
    # Steady state: the median RSS over the second half of the samples;
    # the agent threads' CPU: the last sample (ticks).
    read -r rss agent < <(awk -v tck="$tck" '{ r[NR] = $2; a = $3 } END {
        n = 0; for (i = int(NR / 2) + 1; i <= NR; i++) s[++n] = r[i]
        for (i = 2; i <= n; i++) { t = s[i]; for (j = i - 1; j >= 1 && s[j] > t; j--) s[j + 1] = s[j]; s[j + 1] = t }
        printf "%d %.3f\n", (n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2), a / tck }' "$TMP/samples")
    if [ "$cfg" != none ] && [ "$cfg" != agent-file ]; then
        sleep 0.5
        windows=$(curl -s --max-time 10 "$URL/api/v1/profiles?service=$service&type=cpu&from=now-1h&until=now&limit=1000" |
                  grep -o '"id"' | wc -l)
    fi
    echo "$cfg $round $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rss $agent $windows $((SECONDS - t0))" >>"$TMP/results"
}

CONFIGS=(none agent-file cont-cpu cont-heap)
nconf=${#CONFIGS[@]}
echo "continuous_overhead: $ROUNDS interleaved rounds of ${CONFIGS[*]}; sqlite3, $WORK query rounds; windows ${DURATION} s every ${PERIOD} s"
start=$SECONDS
run_one none 0
run_one cont-cpu 0
: >"$TMP/results"
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < nconf; i++)); do
        run_one "${CONFIGS[$(((i + r - 1) % nconf))]}" "$r"
    done
    echo "continuous_overhead: round $r/$ROUNDS done ($((SECONDS - start)) s)"
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
awk -v rounds="$ROUNDS" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v nproc="$(nproc)" -v model="$cpu_model" \
    -v kernel="$(uname -r)" -v load="$load" -v cmd="$INVOCATION" -v work="$WORK" -v period="$PERIOD" \
    -v duration="$DURATION" -v sqlite="$("$SQLITE" --version | cut -d' ' -f1)" "$BENCH_AWK_MED"'
{ wall[$1, $2] = $3; cpu[$1, $2] = $4; rss[$1, $2] = $5; agent[$1, $2] = $6; win[$1, $2] = $7 }
END {
    n = split("none agent-file cont-cpu cont-heap", cfgs, " ")
    for (k = 1; k <= n; k++) {
        c = cfgs[k]
        for (r = 1; r <= rounds; r++) a[r] = cpu[c, r]; cm[c] = med(a, rounds); cmin[c] = a[1]; cmax[c] = a[rounds]
        for (r = 1; r <= rounds; r++) a[r] = wall[c, r]; wm[c] = med(a, rounds)
        for (r = 1; r <= rounds; r++) a[r] = rss[c, r] / 1024; rm[c] = med(a, rounds); rmin[c] = a[1]; rmax[c] = a[rounds]
        if (c == "none") continue
        for (r = 1; r <= rounds; r++) a[r] = cpu[c, r] / cpu["none", r]; pr[c] = med(a, rounds); pmin[c] = a[1]; pmax[c] = a[rounds]
        for (r = 1; r <= rounds; r++) a[r] = (rss[c, r] - rss["none", r]) / 1024; dr[c] = med(a, rounds); dmin[c] = a[1]; dmax[c] = a[rounds]
        for (r = 1; r <= rounds; r++) a[r] = win[c, r] > 0 ? agent[c, r] / win[c, r] : 0; pw[c] = med(a, rounds)
        for (r = 1; r <= rounds; r++) a[r] = win[c, r]; wn[c] = med(a, rounds)
        for (r = 1; r <= rounds; r++) a[r] = agent[c, r]; ag[c] = med(a, rounds)
    }
    noise = (cmax["none"] - cmin["none"]) / cm["none"]
    print "## Continuous mode overhead"
    print ""
    printf "Measured %s on %s cores of \"%s\", Linux %s; load average at the end %s (a machine shared with other builds: read the spreads).\n", date, nproc, model, kernel, load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "Program: Debian'\''s sqlite3 %s, in memory: 200 000 rows inserted, an index, %d rounds of LIKE scans, GROUP BY and COUNT DISTINCT (same work and output in every run). Continuous mode uploads to a local `hotspur serve` (not counted) with %d s windows every %d s to reach steady state in a ~20 s run. %d rounds, configurations interleaved. CPU = user+sys of sqlite3 with the agent'\''s threads; RSS = median VmRSS over the second half of the run; agent threads = CPU of the threads \"hotspur\" and \"hotspur-up\" (window encoding, symbolization, upload).\n", sqlite, work, duration, period, rounds
    print ""
    print "| configuration | CPU median (min-max) s | CPU vs none, per-round median (min-max) | wall median s | RSS median (min-max) MiB | extra RSS, per-round median (min-max) MiB | windows | agent threads CPU s | per window ms |"
    print "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
    printf "| sqlite3 alone | %.2f (%.2f-%.2f) | spread %.1f%% | %.2f | %.1f (%.1f-%.1f) | - | - | - | - |\n", cm["none"], cmin["none"], cmax["none"], noise * 100, wm["none"], rm["none"], rmin["none"], rmax["none"]
    for (k = 2; k <= n; k++) {
        c = cfgs[k]
        lab = c == "cont-cpu" ? "continuous, CPU (default types)" : c == "cont-heap" ? "continuous, CPU + heap" : "agent, file at exit (as under record)"
        printf "| %s | %.2f (%.2f-%.2f) | %+.2f%% (%+.2f .. %+.2f%%) | %.2f | %.1f (%.1f-%.1f) | %+.1f (%+.1f .. %+.1f) | %d | %.2f | %.0f |\n", lab, cm[c], cmin[c], cmax[c], (pr[c] - 1) * 100, (pmin[c] - 1) * 100, (pmax[c] - 1) * 100, wm[c], rm[c], rmin[c], rmax[c], dr[c], dmin[c], dmax[c], wn[c], ag[c], pw[c] * 1000
    }
    print ""
    for (k = 3; k <= n; k++) {
        c = cfgs[k]
        lab = c == "cont-cpu" ? "CPU" : "CPU + heap"
        over = pr[c] - 1
        if (pmin[c] - 1 > noise) total = sprintf("%+.2f%% CPU (beyond the baseline'\''s spread of %.1f%%)", over * 100, noise * 100)
        else total = sprintf("%+.2f%% CPU, within the baseline'\''s own spread of %.1f%%: not measurable in this run", over * 100, noise * 100)
        # The agent threads are measured directly: one window'\''s work
        # (encode, symbolize, upload), once per period. At the defaults
        # that is once per 60 s, and the CPU sampler records during 10 s
        # of 60 (see "CPU profiler overhead" for its cost while on).
        printf "- %s, a %d s window every %d s: %s. The agent threads took %.0f ms of CPU per window (%.2f%% of one core at this period); at the defaults (10 s every 60 s) that is %.2f%% of one core, plus the CPU sampler'\''s cost during a sixth of the time. RSS %+.1f MiB (%+.1f MiB more than the agent writing a file at exit).\n", lab, duration, period, total, pw[c] * 1000, pw[c] / period * 100, pw[c] / 60 * 100, dr[c], dr[c] - dr["agent-file"]
    }
}' "$TMP/results" >"$TMP/section.md"
cat "$TMP/section.md"
bench_write_section continuous_overhead "Continuous mode overhead" "$TMP/section.md" "$DOC"
