#!/usr/bin/env bash
# cpu_overhead.sh BUILD_DIR — the CPU profiler overhead benchmark.
#
# Runs bench/cpu_workload.c (fixed work, 2 threads) with no profiler, under
# `hotspur record` at 100 and 1000 Hz, gperftools' libprofiler at 100 and
# 1000 Hz and `perf record -g` at 100 and 1000 Hz, interleaved round by round
# (the order rotates each round) so that the load of a shared machine falls on
# all of them alike. Reports medians, min-max spread and ratios to the
# no-profiler median for wall time and for CPU time (user+sys of the whole
# process tree, profiler included), the cost of one sample in ns, prints the
# table and writes it into the "## CPU profiler overhead" section of
# docs/BENCHMARKS.md (other sections are kept).
#
# Environment: BENCH_ROUNDS (rounds, default 5, at least 5), BENCH_WORK (the
# workload's batches per thread, default 500, ~1.5 s on two idle cores),
# BENCH_NO_DOC=1 (print only, leave docs/BENCHMARKS.md alone).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/cpu_overhead.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-5}
WORK=${BENCH_WORK:-500}
THREADS=2
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
INVOCATION="bench/cpu_overhead.sh $1"
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi

bench_check_build cpu_overhead "$BUILD" "$ROUNDS" 5

# ---- build the workload and the measuring helper into the build dir ----
BIN=$BUILD/bench
mkdir -p "$BIN"
CC=${CC:-cc}
"$CC" -O2 -g -Wall -Wextra -Werror -pthread -o "$BIN/cpu_workload" "$HERE/cpu_workload.c" -lm
"$CC" -O2 -g -Wall -Wextra -Werror -o "$BIN/runstat" "$HERE/runstat.c"
WL=("$BIN/cpu_workload" "$WORK" "$THREADS")
RUNSTAT=$BIN/runstat

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# ---- which profilers are here ----
GPLIB=""
for d in "/usr/lib/$("$CC" -print-multiarch 2>/dev/null || true)" /usr/lib64 /usr/lib /usr/local/lib; do
    for n in libprofiler.so libprofiler.so.0; do
        if [ -z "$GPLIB" ] && [ -e "$d/$n" ]; then GPLIB="$d/$n"; fi
    done
done
GP_NOTE=""
if [ -z "$GPLIB" ]; then GP_NOTE="gperftools: not available here (libprofiler.so not found; Debian package libgoogle-perftools-dev)"; fi

PERF_NOTE=""
PERF_EVENT=""
if ! command -v perf >/dev/null 2>&1; then
    PERF_NOTE="perf: not available here (no perf command; Debian package linux-perf)"
elif perf record -g -F 100 -o "$TMP/probe.data" -- true >"$TMP/probe.out" 2>&1; then
    PERF_EVENT=$(perf evlist -i "$TMP/probe.data" 2>/dev/null | head -n 1 || true)
else
    err=$(grep -v '^\s*$' "$TMP/probe.out" | head -n 3 | tr '\n' ' ')
    if perf record -e cpu-clock -g -F 100 -o "$TMP/probe.data" -- true >"$TMP/probe.out" 2>&1; then
        PERF_EVENT="cpu-clock"
        PERF_NOTE="perf: the default event was refused (${err}); used -e cpu-clock"
    else
        err2=$(grep -v '^\s*$' "$TMP/probe.out" | head -n 3 | tr '\n' ' ')
        PERF_NOTE="perf: not available here: \`perf record -g\` said: ${err} — and with -e cpu-clock: ${err2}"
    fi
fi
PERF_ARGS=(-g)
if [ "$PERF_EVENT" = "cpu-clock" ] && [ -n "$PERF_NOTE" ]; then PERF_ARGS=(-e cpu-clock -g); fi

CONFIGS=(none agent-100 hotspur-100 hotspur-1000)
if [ -n "$GPLIB" ]; then CONFIGS+=(gperftools-100 gperftools-1000); fi
if [ -n "$PERF_EVENT" ]; then CONFIGS+=(perf-100 perf-1000); fi

# ---- one measured run: appends "config round wall user sys samples" ----
REF_OUT=""
run_one() { # CONFIG ROUND(0 = warm-up, not recorded)
    local cfg=$1 round=$2 hz=${1##*-} samples=NA cmd
    case $cfg in
    none) cmd=("${WL[@]}") ;;
    hotspur-*) cmd=("$HOTSPUR" record -F "$hz" -o "$TMP/hs.pb.gz" -- "${WL[@]}") ;;
    # The agent alone: what the program pays while it runs (symbolization,
    # which record does after the program exits, left out).
    agent-*) cmd=(env "LD_PRELOAD=$BUILD/lib/libhotspur.so" "HOTSPUR_OUTPUT=$TMP/hs.pb.gz" "HOTSPUR_CPU_HZ=$hz"
                  HOTSPUR_DEFER_SYMBOLS=1 HOTSPUR_STATS=1 "${WL[@]}") ;;
    gperftools-*) cmd=(env "LD_PRELOAD=$GPLIB" "CPUPROFILE=$TMP/gp.prof" "CPUPROFILE_FREQUENCY=$hz" "${WL[@]}") ;;
    perf-*) cmd=(perf record "${PERF_ARGS[@]}" -F "$hz" -o "$TMP/perf.data" -- "${WL[@]}") ;;
    esac
    rm -f "$TMP/hs.pb.gz" "$TMP/gp.prof" "$TMP/perf.data"
    if ! "$RUNSTAT" "$TMP/rs" -- "${cmd[@]}" >"$TMP/out" 2>"$TMP/err"; then
        echo "cpu_overhead: $cfg failed:" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
    local out
    out=$(cat "$TMP/out")
    if [ -z "$REF_OUT" ]; then REF_OUT=$out; fi
    if [ "$out" != "$REF_OUT" ]; then
        echo "cpu_overhead: $cfg changed the workload's output: '$out' != '$REF_OUT'" >&2
        exit 1
    fi
    case $cfg in
    hotspur-*) samples=$(sed -n 's/^hotspur: wrote .* (\([0-9]*\) samples.*/\1/p' "$TMP/err" | tail -n 1) ;;
    agent-*) samples=$(sed -n 's/^hotspur: \([0-9]*\) samples, .*/\1/p' "$TMP/err" | tail -n 1) ;;
    gperftools-*) samples=$("$RUNSTAT" --gperf-samples "$TMP/gp.prof" | cut -d' ' -f1) ;;
    perf-*) samples=$(sed -n 's/.*perf record: Captured and wrote .*(\([0-9]*\) samples).*/\1/p' "$TMP/err" | tail -n 1) ;;
    esac
    if [ -z "$samples" ]; then
        echo "cpu_overhead: $cfg: cannot read the number of samples from:" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
    if [ "$cfg" = gperftools-1000 ]; then
        "$RUNSTAT" --gperf-samples "$TMP/gp.prof" | cut -d' ' -f2 >"$TMP/gp1000.period"
    fi
    if [ "$round" -gt 0 ]; then
        read -r wall user sys _ <"$TMP/rs"
        echo "$cfg $round $wall $user $sys $samples" >>"$TMP/results"
    fi
}

nconf=${#CONFIGS[@]}
echo "cpu_overhead: ${CONFIGS[*]}"
echo "cpu_overhead: $ROUNDS interleaved rounds of $nconf runs, workload: cpu_workload $WORK $THREADS"
start=$SECONDS
run_one none 0 # warm-up: page cache, CPU frequency
run_one hotspur-100 0
: >"$TMP/results"
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < nconf; i++)); do
        cfg=${CONFIGS[$(((i + r - 1) % nconf))]}
        run_one "$cfg" "$r"
    done
    echo "cpu_overhead: round $r/$ROUNDS done ($((SECONDS - start)) s)"
done

# ---- the agent's own per-sample figure (HOTSPUR_STATS=1), 3 extra runs ----
: >"$TMP/stats"
for _ in 1 2 3; do
    HOTSPUR_STATS=1 "$HOTSPUR" record -F 1000 -o "$TMP/hs.pb.gz" -- "${WL[@]}" >/dev/null 2>"$TMP/err"
    calls=$(sed -n 's/^hotspur: \([0-9]*\) samples, \([0-9.]*\) ns per sample in the handler.*/\1 \2/p' "$TMP/err" | tail -n 1)
    samples=$(sed -n 's/^hotspur: wrote .* (\([0-9]*\) samples.*/\1/p' "$TMP/err" | tail -n 1)
    if [ -z "$calls" ] || [ -z "$samples" ]; then
        echo "cpu_overhead: HOTSPUR_STATS=1 printed no statistics:" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
    echo "$calls $samples" >>"$TMP/stats"
done
echo "cpu_overhead: measured in $((SECONDS - start)) s"

# ---- statistics and the report ----
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
kernel_hz=""
if [ -r /proc/config.gz ]; then
    kernel_hz=$(zcat /proc/config.gz 2>/dev/null | sed -n 's/^CONFIG_HZ=//p' || true)
elif [ -r "/boot/config-$(uname -r)" ]; then
    kernel_hz=$(sed -n 's/^CONFIG_HZ=//p' "/boot/config-$(uname -r)")
fi
gp_period=$(cat "$TMP/gp1000.period" 2>/dev/null || true)
load=$(cut -d' ' -f1-3 /proc/loadavg)

awk -v rounds="$ROUNDS" -v statsfile="$TMP/stats" \
    -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" -v nproc="$(nproc)" -v cpu="$cpu_model" \
    -v kernel="$(uname -r)" -v khz="$kernel_hz" -v load="$load" -v cmd="$INVOCATION" \
    -v work="cpu_workload $WORK $THREADS" -v gp_note="$GP_NOTE" -v perf_note="$PERF_NOTE" \
    -v perf_event="$PERF_EVENT" -v perf_args="${PERF_ARGS[*]}" -v gp_period="$gp_period" \
    -v order="${CONFIGS[*]}" "$BENCH_AWK_MED"'
function collect(cfg, col, out,    r) { for (r = 1; r <= rounds; r++) out[r] = val[cfg, r, col]; return rounds }
function label(c,    p, h) { if (c == "none") return "no profiler"; p = c; sub(/-[0-9]+$/, "", p); h = c; sub(/^.*-/, "", h)
    if (p == "hotspur") p = "hotspur record"; else if (p == "agent") p = "hotspur agent alone (LD_PRELOAD; no exit-time symbolization)"; else if (p == "gperftools") p = "gperftools (libprofiler)"; else if (p == "perf") p = "perf record " perf_args
    return p " @ " h " Hz" }
function pct(x) { return sprintf("%+.2f%%", (x - 1) * 100) }
{ val[$1, $2, "wall"] = $3; val[$1, $2, "cpu"] = $4 + $5; val[$1, $2, "n"] = $6 }
END {
    nc = split(order, cfgs, " ")
    for (k = 1; k <= nc; k++) {
        c = cfgs[k]
        n = collect(c, "wall", a); wmed[c] = med(a, n); wmin[c] = a[1]; wmax[c] = a[n]
        n = collect(c, "cpu", a); cmed[c] = med(a, n); cmin[c] = a[1]; cmax[c] = a[n]
        if (c != "none") {
            n = collect(c, "n", a); smed[c] = med(a, n)
            for (r = 1; r <= rounds; r++) a[r] = val[c, r, "cpu"] / val["none", r, "cpu"]
            pmed[c] = med(a, rounds); pmin[c] = a[1]; pmax[c] = a[rounds]
        }
    }
    # noise: the baseline own spread, and whether a config is outside it
    noise = (cmax["none"] - cmin["none"]) / cmed["none"]
    wnoise = (wmax["none"] - wmin["none"]) / wmed["none"]
    print "## CPU profiler overhead"
    print ""
    printf "Measured %s on %s cores of \"%s\", Linux %s%s; load average at the end %s (a machine shared with other builds).\n", date, nproc, cpu, kernel, (khz != "" ? " (CONFIG_HZ=" khz ")" : ""), load
    print ""
    print "Produced by: `" cmd "`"
    print ""
    printf "Workload: `bench/cpu_workload.c` (`%s`: 2 threads, fixed work; string building, `qsort` with a `strcmp` comparator, `memcpy`/`memchr` + FNV hashing, a small n-body loop; built `-O2 -g`, no frame pointers). %d rounds; each round runs every configuration once, in an order rotated each round. CPU = user+sys of the whole process tree (the profiler'\''s own process and its exit-time work included), from getrusage; wall = elapsed.\n", work, rounds
    print ""
    print "| configuration | samples | wall median (min-max) s | wall vs none | CPU median (min-max) s | CPU vs none | per-round CPU ratio median (min-max) | CPU beyond noise? | (CPU - CPU none) / samples, ns |"
    print "|---|--:|--:|--:|--:|--:|--:|:-:|--:|"
    for (k = 1; k <= nc; k++) {
        c = cfgs[k]
        if (c == "none") {
            printf "| %s | - | %.3f (%.3f-%.3f) | 1 | %.3f (%.3f-%.3f) | 1 | - | spread %.1f%% | - |\n", label(c), wmed[c], wmin[c], wmax[c], cmed[c], cmin[c], cmax[c], noise * 100
            continue
        }
        if (cmin[c] > cmax["none"]) verdict = "yes, slower"
        else if (cmax[c] < cmin["none"]) verdict = "yes, faster"
        else verdict = "no"
        nsps = smed[c] > 0 ? sprintf("%.0f", (cmed[c] - cmed["none"]) / smed[c] * 1e9) : "-"
        printf "| %s | %d | %.3f (%.3f-%.3f) | %s | %.3f (%.3f-%.3f) | %s | %s (%s .. %s) | %s | %s |\n", label(c), smed[c], wmed[c], wmin[c], wmax[c], pct(wmed[c] / wmed["none"]), cmed[c], cmin[c], cmax[c], pct(cmed[c] / cmed["none"]), pct(pmed[c]), pct(pmin[c]), pct(pmax[c]), verdict, nsps
    }
    print ""
    printf "Noise: the no-profiler runs alone spread %.1f%% in CPU time and %.1f%% in wall time (max-min over median). \"CPU beyond noise?\" is yes only when all %d runs of a configuration are outside the range of all %d no-profiler runs (for 5 vs 5 runs that is a two-sided Mann-Whitney p = 0.008); otherwise the difference cannot be told from noise in this run.\n", noise * 100, wnoise * 100, rounds, rounds
    print ""
    # per-sample cost
    ns = 0; while ((getline line < statsfile) > 0) { split(line, f, " "); ns++; scalls[ns] = f[1]; sns[ns] = f[2]; ssamp[ns] = f[3] }
    for (i = 1; i <= ns; i++) { a[i] = sns[i]; b[i] = scalls[i]; d[i] = ssamp[i] }
    hns = med(a, ns); hcalls = med(b, ns); hsamp = med(d, ns)
    print "Cost of one hotspur sample at 1000 Hz:"
    print ""
    printf "- (a) the agent'\''s own figure (`HOTSPUR_STATS=1`, median of %d extra runs): **%.0f ns** per handler call (CLOCK_MONOTONIC around unwind + intern, so it also counts any time the thread was preempted inside the handler); %d handler calls for %d samples in the profile.\n", ns, hns, hcalls, hsamp
    printf "- From (a), load-independent: at 100 Hz a thread takes 100 signals per CPU second, so the handler costs 100 x %.0f ns = **%.2f%%** of CPU time (kernel signal delivery not included).\n", hns, 100 * hns / 1e9 * 100
    if ("hotspur-1000" in smed) {
        b1 = (cmed["hotspur-1000"] - cmed["none"]) / smed["hotspur-1000"] * 1e9
        printf "- (b) (CPU @1000 Hz - CPU without profiler) / samples = (%.3f - %.3f) s / %d = **%.0f ns** per sample", cmed["hotspur-1000"], cmed["none"], smed["hotspur-1000"], b1
        if (hcalls > 0 && hsamp > 0) printf ", i.e. %.0f ns per signal actually delivered (%.2f samples per signal)", b1 * hsamp / hcalls, hsamp / hcalls
        print "; includes signal delivery, the handler, and the agent'\''s start-up and exit-time symbolization and writing."
        if (smed["hotspur-1000"] > smed["hotspur-100"]) {
            b2 = (cmed["hotspur-1000"] - cmed["hotspur-100"]) / (smed["hotspur-1000"] - smed["hotspur-100"]) * 1e9
            printf "- (b'\'') the same from the difference between 1000 Hz and 100 Hz, which cancels the fixed start/exit cost: (%.3f - %.3f) s / (%d - %d) = **%.0f ns** per sample.\n", cmed["hotspur-1000"], cmed["hotspur-100"], smed["hotspur-1000"], smed["hotspur-100"], b2
            if (b2 <= 0) print "  It is negative: the extra samples at 1000 Hz cost less than this run'\''s noise, so (b'\'') and the fixed cost are not measurable here."
            else {
                fixed = (cmed["hotspur-100"] - cmed["none"]) - smed["hotspur-100"] * b2 / 1e9
                printf "- Fixed cost per run implied by (b'\''): (CPU @100 Hz - CPU without profiler) - samples @100 Hz x (b'\'') = %.1f ms (agent start, symbolization and writing at exit; `hotspur record` itself).\n", fixed * 1e3
            }
        }
        printf "- Resolution of (b): the baseline CPU spread (%.3f s) divided by the samples is %.0f ns, so (b) is only meaningful well above that.\n", cmax["none"] - cmin["none"], (cmax["none"] - cmin["none"]) / smed["hotspur-1000"] * 1e9
    }
    print ""
    print "Notes:"
    print ""
    if (khz != "") printf "- The kernel ticks at %s Hz and checks CPU-time timers on the tick, so a thread gets at most ~%s timer signals a second: at 1000 Hz hotspur receives fewer signals and weights each by its overrun count (`si_overrun`), so its sample count still matches CPU time.\n", khz, khz
    if (gp_period != "") printf "- gperftools honours CPUPROFILE_FREQUENCY=1000 in its header (period %d us), but its process-wide `setitimer(ITIMER_PROF)` delivers at most about one signal per tick and has no overrun count, so it records far fewer samples than 1000 per CPU second (see the samples column).\n", gp_period
    if (perf_event != "") printf "- perf samples event `%s`; `-g` unwinds by frame pointers, so through this `-O2` code without frame pointers its stacks are shallower than hotspur'\''s DWARF stacks (cheaper, less correct); its CPU includes the perf process and its post-processing (build-ids).\n", perf_event
    if (gp_note != "") print "- " gp_note
    if (perf_note != "") print "- " perf_note
}' "$TMP/results" >"$TMP/section.md"

echo
cat "$TMP/section.md"

bench_write_section cpu_overhead "CPU profiler overhead" "$TMP/section.md" "$DOC"
