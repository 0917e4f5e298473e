#!/usr/bin/env bash
# agent_start.sh BUILD_DIR — what the agent costs one process that starts
# and ends at once, with `hotspur record`'s settings (CPU profile, symbols
# deferred, children followed): the instructions of `/bin/true` under
# callgrind (deterministic: the loader mapping and relocating the agent's
# libraries, the agent's start, the exit write), and the wall and CPU time
# of 200 `/bin/true` started from a shell loop with the agent preloaded in
# each (`env LD_PRELOAD=... /bin/true`: the shell and env are not
# profiled), in interleaved rounds against no agent. Prints the table and
# writes it into the "## agent start cost" section of docs/BENCHMARKS.md.
#
# With BENCH_BASELINE=DIR (another build, e.g. of main) its agent is
# measured too, side by side. Environment: BENCH_ROUNDS (timed rounds,
# default 7, at least 3), BENCH_NO_DOC=1 (print only).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/agent_start.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-7}
DOC=$ROOT/docs/BENCHMARKS.md
INVOCATION="BENCH_ROUNDS=$ROUNDS ${BENCH_BASELINE:+BENCH_BASELINE=$BENCH_BASELINE }bench/agent_start.sh $1"
bench_check_build agent_start "$BUILD" "$ROUNDS" 3
BASE=""
if [ -n "${BENCH_BASELINE:-}" ]; then
    BASE=$(cd "$BENCH_BASELINE" && pwd)
    bench_check_build agent_start "$BASE" "$ROUNDS" 3
fi
command -v valgrind >/dev/null || { echo "agent_start: valgrind is missing (scripts/install-deps)" >&2; exit 1; }

BIN=$BUILD/bench
mkdir -p "$BIN"
"${CC:-cc}" -O2 -g -Wall -Wextra -Werror -o "$BIN/runstat" "$HERE/runstat.c"
RUNSTAT=$BIN/runstat
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-agentstart.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# `hotspur record`'s environment for its children (src/cli/cmd_record.c).
record_env=(HOTSPUR_OUTPUT="$TMP/prof/p.%p.pb.gz" HOTSPUR_ROOT_PID=1 HOTSPUR_CPU_HZ=100 HOTSPUR_WALL_HZ=0
            HOTSPUR_HEAP_RATE=524288 HOTSPUR_CPU=1 HOTSPUR_HEAP=0 HOTSPUR_LEAKS=0 HOTSPUR_LOCK=0
            HOTSPUR_FOLLOW=1 HOTSPUR_DEFER_SYMBOLS=1)
export "${record_env[@]}"
mkdir -p "$TMP/prof"

CONFIGS=(none agent)
declare -A LIB=([agent]="$BUILD/lib/libhotspur.so")
if [ -n "$BASE" ]; then CONFIGS+=(baseline); LIB[baseline]="$BASE/lib/libhotspur.so"; fi

# ---- instructions (callgrind) ----
declare -A IR
for cfg in "${CONFIGS[@]}"; do
    if [ "$cfg" = none ]; then
        IR[$cfg]=$(bench_callgrind_ir "$TMP/cg.$cfg" /bin/true)
    else
        IR[$cfg]=$(bench_callgrind_ir "$TMP/cg.$cfg" env LD_PRELOAD="${LIB[$cfg]}" /bin/true)
    fi
    rm -f "$TMP"/prof/*
done

# ---- timed: 200 starts per run, interleaved rounds ----
: >"$TMP/results"
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
        cfg=${CONFIGS[$(((i + r - 1) % ${#CONFIGS[@]}))]}
        pre=${LIB[$cfg]:-}
        "$RUNSTAT" "$TMP/rs" -- env HS_PRE="$pre" bash -c \
            'for i in $(seq 200); do env ${HS_PRE:+LD_PRELOAD=$HS_PRE} /bin/true; done' ||
            { echo "agent_start: $cfg failed (round $r)" >&2; exit 1; }
        read -r wall user sys _ <"$TMP/rs"
        echo "$cfg $r $wall $user $sys" >>"$TMP/results"
        rm -f "$TMP"/prof/*
    done
done

ir_lines=""
for cfg in "${CONFIGS[@]}"; do ir_lines="$ir_lines$cfg=${IR[$cfg]} "; done
awk -v rounds="$ROUNDS" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v nproc="$(nproc)" \
    -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v cmd="$INVOCATION" -v irs="$ir_lines" -v base="${BENCH_BASELINE_NAME:-$BASE}" "$BENCH_AWK_MED"'
{ w[$1, $2] = $3; c[$1, $2] = $4 + $5 }
# per-start cost over none: medians of the per-round differences / 200, in ms
function cost(cfg,    r, a, b) {
    for (r = 1; r <= rounds; r++) { a[r] = (w[cfg, r] - w["none", r]) / 200 * 1000; b[r] = (c[cfg, r] - c["none", r]) / 200 * 1000 }
    wm = med(a, rounds); wlo = a[1]; whi = a[rounds]; cm = med(b, rounds); clo = b[1]; chi = b[rounds]
}
function row(label, cfg,    r, a) {
    if (cfg == "none") { printf "| %s | %d | - | - |\n", label, ir[cfg]; return }
    cost(cfg)
    printf "| %s | %d | %.2f (%.2f to %.2f) | %.2f (%.2f to %.2f) |\n", label, ir[cfg], wm, wlo, whi, cm, clo, chi
}
END {
    n = split(irs, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); ir[p[1]] = p[2] }
    print "## agent start cost"
    print ""
    printf "Measured %s on %s cores; load average at the end %s (a machine shared with other work).\n", date, nproc, load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "One `/bin/true` with `hotspur record`'\''s settings for its children (CPU profile, symbols deferred to record). Instructions: callgrind, the whole process (loader, agent start, exit write). Time: 200 `env LD_PRELOAD=AGENT /bin/true` from a shell loop minus the same loop without the agent, per start; medians (min to max) of %d interleaved rounds; CPU = user+sys of the whole tree.\n", rounds
    print ""
    print "| agent | instructions | wall per start, ms | CPU per start, ms |"
    print "|---|--:|--:|--:|"
    row("none", "none")
    row("this build", "agent")
    if (base != "") row("baseline (" base ")", "baseline")
}' "$TMP/results" >"$TMP/section.md"

echo
cat "$TMP/section.md"
bench_write_section agent_start "agent start cost" "$TMP/section.md" "$DOC"
