# heap_fastpath.sh — the cost of the heap hooks' fast path, in instructions
# (issue 13, "Cost"; issue 30): heap_pairs (malloc/free pairs of 16..527 B,
# 2 threads) runs under callgrind with no agent, with the agent loaded and
# the heap profile off, and with the heap profile on at a rate so high that
# nothing is sampled (every call takes the fast path). Only the workers'
# loop is counted (callgrind's --toggle-collect=run: the thread function of
# heap_pairs, with the malloc and free it calls), so the count is the same
# in every run (3 of 3 identical to the instruction). Counted whole, with
# start-up, threads starting and ending and the exit, the same build varied
# by a few hundred instructions from run to run, and a fresh-clone CI run
# measured 0.04 per pair more than other runs of the same commit (not
# reproduced; what runs around the loop is what can vary: a thread waiting
# in a loop for another runs as long as valgrind's scheduler, which the
# machine's load drives, lets it). The extra
# instructions per pair are the difference between two runs of N1 and N2
# pairs per thread, over the pairs between them, so what does not grow
# with N cancels out.
#
# Budgets: measured counts plus a margin of one instruction, so that a
# compiler's choice of one instruction more does not fail the test but a
# change of the hooks' design does: heap profile off, measured 11.01, budget
# 12; on, fast path, measured 11.00, budget 12. free reads its filter byte
# in every mode and jumps once (until issue 30's last change it jumped
# to a function for the state that read it: 5.01 off, 11.99 on, one taken
# jump more per free with the profile on, which measured 1.11x against
# 1.08x in time and the same with it off: docs/agent.md). malloc counts down
# even with the profile off (a test of a flag before the countdown took 4
# off and 14 on, and measured slower in every mode). The hooks of a200564
# took 45 and 90; issue 13's budgets were 5 and 15. The default rate (512
# KiB) is run too, to see that the profile records and to print what
# samples add on average.
source "$(dirname "$0")/lib.sh"
source "$SRC/bench/lib.sh"
needs_malloc_interposition
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/install-deps)"
# The budget is that of optimized code: an agent built -O0 (a Debug build)
# takes ~30 instructions where -O2 takes 2. Its compiler flags are in the
# DWARF of heap.c's unit.
flags=$(readelf --debug-dump=info "$HOTSPUR_LIB" 2>/dev/null |
    awk '/DW_AT_producer/ { p = $0 } /DW_AT_name.*agent\/heap\.c/ && !done { print p; done = 1 }' || true)
if [ -n "$flags" ] && ! grep -Eq -- ' -O[123s]( |$)' <<< "$flags"; then
    echo "NOT APPLICABLE: the agent is built without optimization (${flags##*: }); the budget is checked in an optimized build"
    exit 0
fi

N1=50000
N2=250000
THREADS=2
AGENT=(LD_PRELOAD="$AGENT_PRELOAD" HOTSPUR_CPU=0 HOTSPUR_CONTROL=0 HOTSPUR_DEFER_SYMBOLS=1)
declare -A IR PAIRS
run() { # NAME N ENV...
    local name=$1 n=$2 ir
    shift 2
    ir=$(bench_callgrind_ir_in run "$TMP/cg.$name.$n" env "$@" "$PROGS/heap_pairs" "$n" "$THREADS") ||
        fail "$name: callgrind run failed"
    IR[$name.$n]=$ir
    PAIRS[$name.$n]=$(awk '/^pairs / { print $2 }' "$TMP/cg.$name.$n.stdout")
    # the agent must not change the program's work
    if [ "$name" != none ]; then
        cmp -s "$TMP/cg.none.$n.stdout" "$TMP/cg.$name.$n.stdout" ||
            fail "$name: output differs from the plain run: $(cat "$TMP/cg.$name.$n.stdout")"
    fi
}
for n in $N1 $N2; do
    run none "$n" HOTSPUR_UNUSED=1
    run off "$n" "${AGENT[@]}" HOTSPUR_OUTPUT="$TMP/off.$n.pb.gz"
    run fast "$n" "${AGENT[@]}" HOTSPUR_HEAP=1 HOTSPUR_HEAP_RATE=1099511627776 HOTSPUR_OUTPUT="$TMP/fast.$n.pb.gz"
    run sampled "$n" "${AGENT[@]}" HOTSPUR_HEAP=1 HOTSPUR_OUTPUT="$TMP/sampled.$n.pb.gz"
done
pairs=$((PAIRS[none.$N2] - PAIRS[none.$N1]))
[ "$pairs" = $((THREADS * (N2 - N1))) ] || fail "heap_pairs did $pairs pairs, not $((THREADS * (N2 - N1)))"
# Two counts per step: the agent's own instructions (what runs in its
# library, exclusive: the same in every run) against budgets of measured
# + 1, and everything the program runs beside the no-agent run, which also
# holds glibc's: that can move between runs (calloc's count per call 520.86
# vs 523.12 in two no-agent runs; fresh-clone CI runs measured +20.17 and
# +9.35 for calloc, a local one +14.58 for realloc off, against the agent's
# own 15 and 8-10), so it gets the agent's budget plus SLACK, which the old
# slow paths (below) still fail.
SLACK=6
lib_base=$(basename "$HOTSPUR_LIB")
agent_ir() { # CALLGRIND_FILE: exclusive instructions in the agent's library
    callgrind_annotate --inclusive=no --threshold=100 "$1" 2>/dev/null |
        awk -v lib="$lib_base" '/^ *[0-9,]+ / && index($NF, lib "]") { n = $1; gsub(/,/, "", n); s += n } END { print s + 0 }'
}
own_per_pair() { # NAME: the agent's own instructions per pair
    awk -v a="$(agent_ir "$TMP/cg.$1.$N1")" -v b="$(agent_ir "$TMP/cg.$1.$N2")" -v p="$pairs" 'BEGIN { printf "%.2f", (b - a) / p }'
}
check_budget() { # WHAT OWN EXTRA BUDGET
    awk -v x="$2" 'BEGIN { exit !(x > 0) }' ||
        fail "$1: no instructions counted in $lib_base (is the agent loaded?)"
    awk -v x="$2" -v b="$4" 'BEGIN { exit !(x <= b) }' ||
        fail "$1: the agent runs $2 instructions per step (budget $4)"
    awk -v x="$3" -v b="$4" -v s=$SLACK 'BEGIN { exit !(x <= b + s) }' ||
        fail "$1: $3 extra instructions per step in all (budget $4 + $SLACK for glibc's own variation)"
}
per_pair() { # NAME: instructions per pair between the two runs
    awk -v a="${IR[$1.$N1]}" -v b="${IR[$1.$N2]}" -v p="$pairs" 'BEGIN { printf "%.2f", (b - a) / p }'
}
base=$(per_pair none)
echo "no agent: $base instructions per malloc/free pair"
for cfg in off fast sampled; do
    extra=$(awk -v x="$(per_pair "$cfg")" -v b="$base" 'BEGIN { printf "%.2f", x - b }')
    own=$(own_per_pair "$cfg")
    eval "extra_$cfg=$extra own_$cfg=$own"
    echo "$cfg: +$extra instructions per pair, $own of them the agent's own"
done

# The heap profile was really on: both runs wrote one, the sampled one has
# samples (~160 MB allocated at 512 KiB: ~300), the fast one has none.
for n in $N1 $N2; do
    [ -s "$TMP/fast.$n.pb.gz" ] || fail "heap on (rate 2^40): no heap profile written"
    [ -s "$TMP/sampled.$n.pb.gz" ] || fail "heap on: no heap profile written"
    [ ! -e "$TMP/off.$n.pb.gz" ] || fail "heap off: a profile was written"
done
# (valgrind's launcher, exec'd with the program's environment, loads the
# agent too and writes a NAME.PID.exec1 file of its own: not looked at.)
raw_samples() {
    go tool pprof -raw "$1" 2>/dev/null |
        awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+$/ { n++ } END { print n + 0 }'
}
[ "$(raw_samples "$TMP/sampled.$N2.pb.gz")" -gt 0 ] || fail "heap on at 512 KiB: the profile has no samples"
[ "$(raw_samples "$TMP/fast.$N2.pb.gz")" = 0 ] || fail "heap on at rate 2^40: the profile has samples"

# malloc goes straight to the allocator's malloc: no function of the
# agent's in between (e7a2bb5's malloc jumped to one chosen by the state,
# which jumped to the allocator: a second indirect jump at every call).
# Callgrind's call graph of the unsampled run: what the agent's malloc
# calls, and how often.
hops=$(callgrind_annotate --tree=calling --inclusive=yes "$TMP/cg.fast.$N2" 2>/dev/null | awk -v lib="$(basename "$HOTSPUR_LIB")" '
    /^ *[0-9,]+ .*\*  / { inmalloc = ($0 ~ /heap\.c:malloc \[/ && index($0, lib)) ; next }
    inmalloc && /^ *[0-9,]+ .*>  / && index($0, lib) { n = $0; sub(/.*\(/, "", n); sub(/x\).*/, "", n); gsub(/,/, "", n); if (n + 0 > 1000) print $0 }')
[ -z "$hops" ] || fail "the agent's malloc calls another function of the agent's at (nearly) every call (a second jump per malloc): $hops"
# budgets: measured 11.01 and 11.00, + 1
check_budget "heap profile off, per malloc/free pair" "$own_off" "$extra_off" 12
check_budget "heap profile on, fast path, per malloc/free pair" "$own_fast" "$extra_fast" 12

# calloc and realloc have fast paths like malloc's: they count down and
# jump to the allocator (before 2026-12-04 they called it and returned
# through the agent, checking the state: +25 / +41.83 instructions per
# calloc/free pair off / on, +43 / +60.40 per realloc). heap_pairs' calloc
# mode allocates with calloc(1, n), its realloc mode reallocs the block to
# the new size in place of free + malloc.
# The agent's own, measured: calloc 14.01 off / 14.00 on (its free reads
# the filter in both), realloc 10.01 / 10.00.
declare -A BUDGET=([calloc.off]=15 [calloc.fast]=15 [realloc.off]=11 [realloc.fast]=11)
extra_modes=""
for mode in calloc realloc; do
    declare -A MIR=() AIR=()
    for n in $N1 $N2; do
        for cfg in none off fast; do
            case $cfg in
            none) env_cfg=(HOTSPUR_UNUSED=1) ;;
            off) env_cfg=("${AGENT[@]}" HOTSPUR_OUTPUT="$TMP/$mode.off.$n.pb.gz") ;;
            fast) env_cfg=("${AGENT[@]}" HOTSPUR_HEAP=1 HOTSPUR_HEAP_RATE=1099511627776 HOTSPUR_OUTPUT="$TMP/$mode.fast.$n.pb.gz") ;;
            esac
            MIR[$cfg.$n]=$(bench_callgrind_ir_in run "$TMP/cg.$mode.$cfg.$n" env "${env_cfg[@]}" "$PROGS/heap_pairs" "$n" "$THREADS" "$mode") ||
                fail "$mode $cfg: callgrind run failed"
            AIR[$cfg.$n]=$(agent_ir "$TMP/cg.$mode.$cfg.$n")
            cmp -s "$TMP/cg.none.$n.stdout" "$TMP/cg.$mode.$cfg.$n.stdout" ||
                fail "$mode $cfg: output differs from the malloc run's: $(cat "$TMP/cg.$mode.$cfg.$n.stdout")"
        done
    done
    [ -s "$TMP/$mode.fast.$N2.pb.gz" ] || fail "$mode, heap on: no heap profile written"
    mbase=$(awk -v a="${MIR[none.$N1]}" -v b="${MIR[none.$N2]}" -v p="$pairs" 'BEGIN { printf "%.2f", (b - a) / p }')
    for cfg in off fast; do
        extra=$(awk -v a="${MIR[$cfg.$N1]}" -v b="${MIR[$cfg.$N2]}" -v p="$pairs" -v m="$mbase" 'BEGIN { printf "%.2f", (b - a) / p - m }')
        own=$(awk -v a="${AIR[$cfg.$N1]}" -v b="${AIR[$cfg.$N2]}" -v p="$pairs" 'BEGIN { printf "%.2f", (b - a) / p }')
        echo "$mode $cfg: +$extra instructions per step, $own of them the agent's own (no agent: $mbase)"
        extra_modes="$extra_modes, $mode $cfg +$extra ($own own)"
        check_budget "$mode, heap profile $cfg" "$own" "$extra" "${BUDGET[$mode.$cfg]}"
    done
done
pass "fast path: +$extra_off ($own_off own) instructions per pair with the heap profile off, +$extra_fast ($own_fast own) on (unsampled), +$extra_sampled at 512 KiB with its samples$extra_modes"
