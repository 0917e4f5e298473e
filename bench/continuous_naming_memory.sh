#!/usr/bin/env bash
# continuous_naming_memory.sh BUILD_DIR — what the in-process agent costs in
# memory and CPU in continuous mode at the defaults, naming frames itself
# (HOTSPUR_SYMBOLIZE=agent) or leaving them to the server
# (HOTSPUR_SYMBOLIZE=server), side by side (issue 31).
#
# Three copies of the demo service (examples/shakesapp, version 4) run at
# the same time, each under its own client: one alone, one with the agent
# naming in the process, one with server naming; both agents upload to one
# local `hotspur serve` (not counted) with nothing set but HOTSPUR_SERVER,
# HOTSPUR_SERVICE and HOTSPUR_SYMBOLIZE (period 60 s, 10 s windows, CPU).
# A round is one period of warm-up and BENCH_NAMING_PERIODS counted ones
# (default 2); BENCH_NAMING_ROUNDS rounds (default 3; ~3 min each), all
# processes started afresh each round.
#
# Per round: VmRSS every second (median and highest over the counted
# periods, as a difference from the copy alone), the agent threads' CPU
# ("hotspur", "hotspur-up") as a share of their program's, and at the end
# /proc/PID/smaps of each copy, summed by where the extra pages are: anon
# (the agent's tables, thread stacks, malloc), the agent's own libraries,
# libraries only the agent loads (zlib, the symbolizer's elfutils and
# libstdc++), and more pages of libraries both copies map (libc...).
# Prints the table and writes the "## Agent memory, agent naming vs server
# naming" section of docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
# BENCH_SKIP_DEFAULTS=1 skips it, as it does continuous_defaults.sh.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/continuous_naming_memory.sh BUILD_DIR" >&2
    exit 2
fi
if [ "${BENCH_SKIP_DEFAULTS:-0}" = 1 ]; then
    echo "continuous_naming_memory: skipped (BENCH_SKIP_DEFAULTS=1)"
    exit 0
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
PERIODS=${BENCH_NAMING_PERIODS:-2}
ROUNDS=${BENCH_NAMING_ROUNDS:-3}
PERIOD=60
TITLE="Agent memory, agent naming vs server naming"
DOC=$ROOT/docs/BENCHMARKS.md
EX=$BUILD/examples
INVOCATION="bench/continuous_naming_memory.sh $1"
if [ "$PERIODS" != 2 ]; then INVOCATION="BENCH_NAMING_PERIODS=$PERIODS $INVOCATION"; fi
if [ "$ROUNDS" != 3 ]; then INVOCATION="BENCH_NAMING_ROUNDS=$ROUNDS $INVOCATION"; fi
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
bench_check_build continuous_naming_memory "$BUILD" "$ROUNDS" 1
for f in "$EX/shakesapp_server" "$EX/shakesapp_client"; do
    [ -x "$f" ] || { echo "continuous_naming_memory: $f is missing; build first (make)" >&2; exit 1; }
done
[ -d /usr/share/games/fortunes ] || { echo "continuous_naming_memory: the corpus is missing (Debian package fortunes)" >&2; exit 1; }
bench_tmpdir
TMP=$BENCH_TMP
CFGS=(none agent server)

# smaps_split ALONE AGENT: the agent copy's extra Rss in KiB, by kind:
# "anon libhotspur only_agent shared_more"
smaps_split() {
    python3 - "$1" "$2" <<'PY'
import re, sys
def load(path):
    rss = {}
    name = None
    for line in open(path):
        m = re.match(r'^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$', line)
        if m:
            name = m.group(1) or '[anon]'
            if name in ('[heap]', '[stack]') or name.startswith('[anon'):
                name = '[anon]'
            continue
        if line.startswith('Rss:'):
            rss[name] = rss.get(name, 0) + int(line.split()[1])
    return rss
alone, agent = load(sys.argv[1]), load(sys.argv[2])
base = lambda p: p.rsplit('/', 1)[-1]
alone_by_base = {}
for k, v in alone.items():
    alone_by_base[base(k)] = alone_by_base.get(base(k), 0) + v
out = {'anon': 0, 'hotspur': 0, 'only': 0, 'more': 0}
for k, v in agent.items():
    if k == '[anon]':
        out['anon'] += v - alone.get(k, 0)
    elif base(k).startswith('libhotspur'):
        out['hotspur'] += v
    elif k.startswith('['):
        out['more'] += v - alone.get(k, 0)
    elif base(k) not in alone_by_base:
        out['only'] += v
    else:
        out['more'] += v - alone_by_base[base(k)]
print(out['anon'], out['hotspur'], out['only'], out['more'])
PY
}

TOTAL=$(((PERIODS + 1) * PERIOD + 5))
echo "continuous_naming_memory: shakesapp three times (alone, agent naming, server naming), $ROUNDS rounds of $((PERIODS + 1)) periods of ${PERIOD} s (the first not counted)"
: >"$TMP/rounds"
for ((r = 1; r <= ROUNDS; r++)); do
    RT=$TMP/r$r
    mkdir -p "$RT"
    PIDS=()
    "$BUILD/bin/hotspur" serve --listen 127.0.0.1:0 --data "$RT/server" 2>"$RT/serve.log" &
    PIDS+=($!)
    BENCH_PIDS+=($!)
    URL=$(bench_serve_url "$RT/serve.log") || { echo "continuous_naming_memory: hotspur serve did not start: $(cat "$RT/serve.log")" >&2; exit 1; }
    declare -A APP=()
    for cfg in "${CFGS[@]}"; do
        if [ "$cfg" = none ]; then
            "$EX/shakesapp_server" -version 4 -port_file "$RT/port.$cfg" >"$RT/app.$cfg.log" 2>"$RT/app.$cfg.err" &
        else
            LD_PRELOAD="$BUILD/lib/libhotspur.so" HOTSPUR_SERVER="$URL" HOTSPUR_SERVICE="naming-$cfg-$$" HOTSPUR_SYMBOLIZE="$cfg" \
                "$EX/shakesapp_server" -version 4 -port_file "$RT/port.$cfg" >"$RT/app.$cfg.log" 2>"$RT/app.$cfg.err" &
        fi
        APP[$cfg]=$!
        PIDS+=($!)
        BENCH_PIDS+=($!)
    done
    for cfg in "${CFGS[@]}"; do bench_wait_file continuous_naming_memory "$RT/port.$cfg"; done
    CLIENTS=()
    for cfg in "${CFGS[@]}"; do
        "$EX/shakesapp_client" -server "http://127.0.0.1:$(cat "$RT/port.$cfg")" -duration "$TOTAL" -round_size 20 \
            >"$RT/client.$cfg.log" 2>"$RT/client.$cfg.err" &
        CLIENTS+=($!)
        BENCH_PIDS+=($!)
    done
    # One line a second: elapsed, then per copy RSS KiB, CPU ticks, agent threads' ticks.
    T0=$SECONDS
    : >"$RT/samples"
    while [ $((SECONDS - T0)) -lt $((TOTAL - 3)) ]; do
        line="$((SECONDS - T0))"
        for cfg in "${CFGS[@]}"; do
            line="$line $(bench_rss "${APP[$cfg]}") $(bench_ticks "${APP[$cfg]}") $(bench_agent_ticks "${APP[$cfg]}")"
        done
        echo "$line" >>"$RT/samples"
        sleep 1
    done
    for cfg in "${CFGS[@]}"; do cat "/proc/${APP[$cfg]}/smaps" >"$RT/smaps.$cfg"; done
    kill -TERM "${CLIENTS[@]}" 2>/dev/null || true
    wait "${CLIENTS[@]}" 2>/dev/null || true
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    for cfg in agent server; do
        if grep -q . "$RT/app.$cfg.err"; then
            echo "continuous_naming_memory: unexpected stderr from the agent ($cfg):" >&2
            cat "$RT/app.$cfg.err" >&2
            exit 1
        fi
    done
    split_agent=$(smaps_split "$RT/smaps.none" "$RT/smaps.agent")
    split_server=$(smaps_split "$RT/smaps.none" "$RT/smaps.server")
    # round: rss median/highest delta and CPU share, per agent copy; then the splits
    awk -v period="$PERIOD" -v tck="$(getconf CLK_TCK)" -v r="$r" -v sa="$split_agent" -v ss="$split_server" "$BENCH_AWK_MED"'
$1 >= period { n++; for (c = 0; c < 3; c++) { rss[c, n] = $(2 + 3 * c); cpu[c, n] = $(3 + 3 * c); ag[c, n] = $(4 + 3 * c)
                                                  if ($(2 + 3 * c) > hi[c]) hi[c] = $(2 + 3 * c) } }
END {
    for (c = 0; c < 3; c++) { for (i = 1; i <= n; i++) a[i] = rss[c, i]; m[c] = med(a, n) }
    printf "%d", r
    for (c = 1; c < 3; c++) {
        prog = cpu[c, n] - cpu[c, 1]; own = ag[c, n] - ag[c, 1]
        printf " %.2f %.2f %.3f", (m[c] - m[0]) / 1024, (hi[c] - hi[0]) / 1024, (prog > 0 ? 100 * own / prog : 0)
    }
    printf " %s %s\n", sa, ss
}' "$RT/samples" >>"$TMP/rounds"
    echo "continuous_naming_memory: round $r: $(tail -n 1 "$TMP/rounds")"
    rm -rf "$RT/server"
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
awk -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v nproc="$(nproc)" -v model="$cpu_model" -v load="$load" \
    -v cmd="$INVOCATION" -v periods="$PERIODS" -v rounds="$ROUNDS" -v title="$TITLE" '
function sortn(a, n,    i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
function med(col,    i, a) { for (i = 1; i <= NR; i++) a[i] = v[i, col]; sortn(a, NR); return NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }
function all(col, fmt,    i, s) { s = ""; for (i = 1; i <= NR; i++) s = s (i > 1 ? ", " : "") sprintf(fmt, v[i, col]); return s }
{ for (i = 1; i <= NF; i++) v[NR, i] = $i }
END {
    print "## " title
    print ""
    printf "Measured %s on %s cores of \"%s\"; load average at the end %s (a machine shared with other builds).\n", date, nproc, model, load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "Three copies of the demo service (examples/shakesapp, version 4) at once, each under its own client: alone, with the agent naming frames in the process (`HOTSPUR_SYMBOLIZE=agent`, the default) and with the server naming them (`HOTSPUR_SYMBOLIZE=server`), both in continuous mode at the defaults (60 s period, 10 s CPU windows) uploading to one local `hotspur serve` not counted here. %d rounds, each started afresh: one period of warm-up, then %d counted. Figures are the medians of the rounds (each round in brackets); RSS is the difference from the copy alone.\n", rounds, periods
    print ""
    print "| | agent naming | server naming |"
    print "|---|--:|--:|"
    printf "| VmRSS median, MiB | %+.2f (%s) | **%+.2f** (%s) |\n", med(2), all(2, "%+.2f"), med(5), all(5, "%+.2f")
    printf "| VmRSS highest sample, MiB | %+.2f (%s) | %+.2f (%s) |\n", med(3), all(3, "%+.2f"), med(6), all(6, "%+.2f")
    printf "| agent threads, %% of the program'\''s CPU | %.3f (%s) | **%.3f** (%s) |\n", med(4), all(4, "%.3f"), med(7), all(7, "%.3f")
    print ""
    print "Where the extra resident memory is at the end of a round (`/proc/PID/smaps` against the copy alone, KiB, median of the rounds):"
    print ""
    print "| | agent naming | server naming |"
    print "|---|--:|--:|"
    printf "| anonymous (tables, thread stacks, malloc) | %+d | %+d |\n", med(8), med(12)
    printf "| the agent'\''s own libraries (libhotspur*.so) | %+d | %+d |\n", med(9), med(13)
    printf "| libraries only the agent maps (zlib; elfutils, libstdc++ with the symbolizer) | %+d | %+d |\n", med(10), med(14)
    printf "| more pages of libraries both map (libc...) | %+d | %+d |\n", med(11), med(15)
    print ""
    print "The CPU signal handler is not in the agent threads'\'' share (see \"Continuous mode at the defaults\" for it: about 0.04% of the program'\''s CPU). Shared library pages count in each process'\''s RSS although the page cache holds them once."
}' "$TMP/rounds" >"$TMP/section.md"
echo
cat "$TMP/section.md"
bench_write_section continuous_naming_memory "$TITLE" "$TMP/section.md" "$DOC"
