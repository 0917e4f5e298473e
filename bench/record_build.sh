#!/usr/bin/env bash
# record_build.sh BUILD_DIR — what `hotspur record` costs a fork/exec-heavy
# command: a clean `make -j2` of this project (a fresh copy of the source,
# configured once with CMake's Makefiles generator, `make clean` before each
# build), with no profiler and under `hotspur record -- make -j2`, in
# interleaved rounds (the order rotates each round); and a shell loop of 200
# `/bin/true` with no profiler, with the agent alone (LD_PRELOAD, the exit
# write left unsymbolized, as under record) and under `hotspur record`.
# Reports medians, min-max and per-round ratios of wall and CPU time (user+sys
# of the whole process tree, record's own symbolization included), the number
# of profiles written, prints the table and writes it into the "## record on
# a fork/exec-heavy build" section of docs/BENCHMARKS.md.
#
# With BENCH_BASELINE=DIR (another build, e.g. of main) its `hotspur record`
# runs too, in the same rounds, so a change is compared side by side.
#
# Environment: BENCH_ROUNDS (build rounds, default 3, at least 2),
# BENCH_TARGET (the make target built, default all), BENCH_LOOP_ROUNDS
# (rounds of the /bin/true loop, default 7), BENCH_NO_DOC=1 (print only).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/record_build.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-3}
LOOP_ROUNDS=${BENCH_LOOP_ROUNDS:-7}
TARGET=${BENCH_TARGET:-all}
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
INVOCATION="bench/record_build.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi
if [ "$TARGET" != all ]; then INVOCATION="BENCH_TARGET=$TARGET $INVOCATION"; fi
if [ -n "${BENCH_BASELINE:-}" ]; then INVOCATION="BENCH_BASELINE=$BENCH_BASELINE $INVOCATION"; fi
INVOCATION="BENCH_ROUNDS=$ROUNDS BENCH_LOOP_ROUNDS=$LOOP_ROUNDS $INVOCATION"
bench_check_build record_build "$BUILD" "$ROUNDS" 2
BASE=""
if [ -n "${BENCH_BASELINE:-}" ]; then
    BASE=$(cd "$BENCH_BASELINE" && pwd)
    bench_check_build record_build "$BASE" "$ROUNDS" 2
fi
# Under `make bench` the outer make's jobserver must not reach ours.
unset MAKEFLAGS MFLAGS MAKELEVEL

BIN=$BUILD/bench
mkdir -p "$BIN"
"${CC:-cc}" -O2 -g -Wall -Wextra -Werror -o "$BIN/runstat" "$HERE/runstat.c"
RUNSTAT=$BIN/runstat

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-recbuild.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# ---- the project to build: a copy of this source tree, configured once ----
mkdir -p "$TMP/src" "$TMP/prof"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ROOT" archive HEAD | tar -x -C "$TMP/src"
    REV=$(git -C "$ROOT" rev-parse --short HEAD)
else
    (cd "$ROOT" && tar --exclude='./build*' -cf - .) | tar -x -C "$TMP/src"
    REV="(not a git checkout)"
fi
cmake -S "$TMP/src" -B "$TMP/b" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/configure.log" 2>&1 || {
    echo "record_build: cmake configure failed:" >&2
    tail -n 20 "$TMP/configure.log" >&2
    exit 1
}

# ---- one measured run: appends "config round wall user sys profiles" ----
run_one() { # CONFIG ROUND(0 = warm-up, not recorded)
    local cfg=$1 round=$2 cmd profiles=0
    local loop='for i in $(seq 200); do /bin/true; done'
    case $cfg in
    build-*) make -C "$TMP/b" clean >/dev/null 2>&1 ;;
    esac
    case $cfg in
    build-none) cmd=(make -C "$TMP/b" -j2 "$TARGET") ;;
    build-record) cmd=("$HOTSPUR" record -o "$TMP/prof/build.pb.gz" -- make -C "$TMP/b" -j2 "$TARGET") ;;
    loop-none) cmd=(bash -c "$loop") ;;
    loop-agent) cmd=(env "LD_PRELOAD=$BUILD/lib/libhotspur.so" "HOTSPUR_OUTPUT=$TMP/prof/loop.%p.pb.gz"
                     HOTSPUR_DEFER_SYMBOLS=1 bash -c "$loop") ;;
    loop-record) cmd=("$HOTSPUR" record -o "$TMP/prof/loop.pb.gz" -- bash -c "$loop") ;;
    build-baseline) cmd=("$BASE/bin/hotspur" record -o "$TMP/prof/build.pb.gz" -- make -C "$TMP/b" -j2 "$TARGET") ;;
    loop-baseline) cmd=("$BASE/bin/hotspur" record -o "$TMP/prof/loop.pb.gz" -- bash -c "$loop") ;;
    esac
    rm -rf "$TMP/prof" && mkdir -p "$TMP/prof"
    if ! "$RUNSTAT" "$TMP/rs" -- "${cmd[@]}" >"$TMP/out" 2>"$TMP/err"; then
        echo "record_build: $cfg failed (round $round):" >&2
        grep -v '^hotspur: wrote' "$TMP/err" | tail -n 30 >&2
        # A run under a profiler that fails (the program broke under it) is
        # reported in the table and left out of the medians; the run goes on.
        case $cfg in *-none) exit 1 ;; esac
        echo "$cfg $round" >>"$TMP/failed"
        return 0
    fi
    case $cfg in
    *-record | *-baseline | loop-agent) profiles=$(find "$TMP/prof" -name '*.pb.gz' | wc -l) ;;
    esac
    if [ "$round" -gt 0 ]; then
        read -r wall user sys _ <"$TMP/rs"
        echo "$cfg $round $wall $user $sys $profiles" >>"$TMP/results"
    fi
}

start=$SECONDS
: >"$TMP/results"
: >"$TMP/failed"
echo "record_build: warm-up build (page cache)"
run_one build-none 0
BUILDS=(build-none build-record)
LOOPS=(loop-none loop-agent loop-record)
if [ -n "$BASE" ]; then BUILDS+=(build-baseline); LOOPS+=(loop-baseline); fi
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < ${#BUILDS[@]}; i++)); do run_one "${BUILDS[$(((i + r - 1) % ${#BUILDS[@]}))]}" "$r"; done
    echo "record_build: build round $r/$ROUNDS done ($((SECONDS - start)) s)"
done
for ((r = 1; r <= LOOP_ROUNDS; r++)); do
    for ((i = 0; i < ${#LOOPS[@]}; i++)); do run_one "${LOOPS[$(((i + r - 1) % ${#LOOPS[@]}))]}" "$r"; done
done
echo "record_build: measured in $((SECONDS - start)) s"

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
awk -v rounds="$ROUNDS" -v lrounds="$LOOP_ROUNDS" -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" \
    -v nproc="$(nproc)" -v cpu="$cpu_model" -v kernel="$(uname -r)" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
    -v cmd="$INVOCATION" -v target="$TARGET" -v rev="$REV" -v failed="$(tr '\n' ';' <"$TMP/failed")" -v base="$BASE" -v baserev="${BENCH_BASELINE_NAME:-$BASE}" "$BENCH_AWK_MED"'
{ w[$1, $2] = $3; c[$1, $2] = $4 + $5; p[$1, $2] = $6 }
function stats(cfg, n, base,    r, k, a, b, q, x) {
    k = 0
    for (r = 1; r <= n; r++) if ((cfg, r) in w) { k++; a[k] = w[cfg, r]; b[k] = c[cfg, r]; q[k] = p[cfg, r] }
    got = k
    if (!k) { wm = wlo = whi = cm = clo = chi = pm = rw = rwlo = rwhi = rc = rclo = rchi = 0; return }
    wm = med(a, k); wlo = a[1]; whi = a[k]; cm = med(b, k); clo = b[1]; chi = b[k]; pm = med(q, k)
    if (base != "") {
        k = 0
        for (r = 1; r <= n; r++) if ((cfg, r) in w) { k++; a[k] = w[cfg, r] / w[base, r]; b[k] = c[cfg, r] / c[base, r] }
        rw = med(a, k); rwlo = a[1]; rwhi = a[k]; rc = med(b, k); rclo = b[1]; rchi = b[k]
    }
}
function row(label, cfg, n, base, unit) {
    stats(cfg, n, base)
    if (got < n) label = label sprintf(" (%d of %d runs failed)", n - got, n)
    if (!got) { printf "| %s | - | - | - | - | - |\n", label; return }
    if (base == "") printf "| %s | - | %.2f (%.2f-%.2f) | 1 | %.2f (%.2f-%.2f) | 1 |\n", label, wm, wlo, whi, cm, clo, chi
    else printf "| %s | %d | %.2f (%.2f-%.2f) | **%.2fx** (%.2f-%.2f) | %.2f (%.2f-%.2f) | **%.2fx** (%.2f-%.2f) |\n", label, pm, wm, wlo, whi, rw, rwlo, rwhi, cm, clo, chi, rc, rclo, rchi
}
END {
    print "## record on a fork/exec-heavy build"
    print ""
    printf "Measured %s on %s cores of \"%s\", Linux %s; load average at the end %s (a machine shared with other builds).\n", date, nproc, cpu, kernel, load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "A clean `make -j2 %s` of this project (source of %s, configured once with CMake, `make clean` before each build), without a profiler and as `hotspur record -- make -j2 %s` (CPU profile of every process make starts, each symbolized by record at the end), %d interleaved rounds (the order rotates each round); then a shell loop of 200 `/bin/true`, %d rounds with the configurations in rotated order. Wall = elapsed; CPU = user+sys of the whole process tree (record included), from getrusage. Ratios are medians of the per-round ratios (min-max).\n", target, rev, target, rounds, lrounds
    print ""
    print "| configuration | profiles | wall median (min-max) s | wall vs none | CPU median (min-max) s | CPU vs none |"
    print "|---|--:|--:|--:|--:|--:|"
    row("make -j2, no profiler", "build-none", rounds, "")
    row("hotspur record -- make -j2", "build-record", rounds, "build-none")
    if (base != "") row("baseline (" baserev ") hotspur record -- make -j2", "build-baseline", rounds, "build-none")
    row("200 x /bin/true, no profiler", "loop-none", lrounds, "")
    row("200 x /bin/true, agent alone (LD_PRELOAD, unsymbolized)", "loop-agent", lrounds, "loop-none")
    row("hotspur record -- 200 x /bin/true", "loop-record", lrounds, "loop-none")
    if (base != "") row("baseline (" baserev ") hotspur record -- 200 x /bin/true", "loop-baseline", lrounds, "loop-none")
    print ""
    stats("build-none", rounds, ""); bw = (whi - wlo) / wm
    stats("build-record", rounds, "build-none")
    printf "Noise: the unprofiled builds spread %.1f%% in wall time (max-min over median). ", bw * 100
    if (rwlo > 1 + bw) verdict = "every round is slower than that spread"
    else verdict = "some rounds are within that spread, so the wall ratio is not measurable in this run beyond it"
    printf "Under record, %s. The goal of issue 13 is a wall ratio of at most 1.2x for this build: %s.\n", verdict, (rw <= 1.2 ? "met in this run (median " sprintf("%.2f", rw) "x)" : "not met in this run (median " sprintf("%.2f", rw) "x)")
    stats("loop-none", lrounds, ""); lb = wm
    stats("loop-agent", lrounds, "loop-none")
    if (failed != "") printf "\nFailed runs, left out of the medians (config round): %s the command'\''s messages were printed on stderr.\n", failed
    printf "\nPer process start under the agent: (loop with agent - loop without) / 200 = %.2f ms of wall time (medians).\n", (wm - lb) / 200 * 1000
}' "$TMP/results" >"$TMP/section.md"

echo
cat "$TMP/section.md"
bench_write_section record_build "record on a fork/exec-heavy build" "$TMP/section.md" "$DOC"
