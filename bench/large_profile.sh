#!/usr/bin/env bash
# large_profile.sh BUILD_DIR — analysis speed on a large profile, hotspur
# against `go tool pprof` on the same file, side by side.
#
# bench/gen_large_profile.c (built here against BUILD_DIR's static profile
# library) writes a CPU profile of BENCH_SAMPLES samples (default 1 000 000)
# over BENCH_LOCATIONS locations (default 200 000). Then, BENCH_RUNS times
# each (default 3, interleaved so machine load falls on all alike), it times
#   hotspur top, hotspur flame, hotspur convert --to collapsed (and --to
#   speedscope, callgrind and pprof: every convert output),
#   go tool pprof -top, go tool pprof -traces
# with /usr/bin/time (wall seconds, user+sys CPU seconds and peak RSS), and
# prints medians and the ratios go/hotspur (top vs -top; flame and convert
# vs -top and -traces: each is one full pass over every sample, as -traces
# is). Peak RSS is also given as a multiple of the profile's decoded
# (gunzipped) size. BENCH_BASE=OTHER_BUILD_DIR adds that build's hotspur
# commands to the same interleaved runs ("before" rows, and the
# speedup of BUILD over it). Writes the "## Analysis speed on a large
# profile" section of docs/BENCHMARKS.md (other sections are kept) unless
# BENCH_NO_DOC=1. Not part of `make check`.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/large_profile.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
DOC=$ROOT/docs/BENCHMARKS.md
HOTSPUR=$BUILD/bin/hotspur
RUNS=${BENCH_RUNS:-3}
SAMPLES=${BENCH_SAMPLES:-1000000}
LOCATIONS=${BENCH_LOCATIONS:-200000}
BASE_BUILD=${BENCH_BASE:-}
INVOCATION="bench/large_profile.sh $1"
if [ -n "$BASE_BUILD" ]; then
    INVOCATION="BENCH_BASE=$BASE_BUILD $INVOCATION"
    BASE_BUILD=$(cd "$BASE_BUILD" && pwd)
    [ -x "$BASE_BUILD/bin/hotspur" ] || { echo "large_profile: $BASE_BUILD/bin/hotspur is missing" >&2; exit 1; }
fi
if [ -n "${BENCH_RUNS:-}" ]; then INVOCATION="BENCH_RUNS=$RUNS $INVOCATION"; fi
if [ -n "${MAKELEVEL:-}" ]; then INVOCATION="make bench  (runs $INVOCATION)"; fi

for f in "$HOTSPUR" "$BUILD/lib/static/libhs_profile.a"; do
    [ -e "$f" ] || { echo "large_profile: $f is missing; build first (make)" >&2; exit 1; }
done
command -v go >/dev/null || { echo "large_profile: go (golang-go) is not installed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "large_profile: /usr/bin/time is not installed" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PROFILE=$(bench_large_profile "$BUILD" "$SAMPLES" "$LOCATIONS")
FILE_MB=$(awk -v b="$(stat -c %s "$PROFILE")" 'BEGIN { printf "%.1f", b / 1048576 }')
RAW_BYTES=$(gzip -dc "$PROFILE" | wc -c)
RAW_MB=$(awk -v b="$RAW_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "large_profile: $PROFILE ($FILE_MB MiB gzipped, $RAW_MB MiB decoded)"

# name|command (run with bash -c; output discarded)
CASES=(
    "hotspur top|'$HOTSPUR' top '$PROFILE'"
    "hotspur flame|'$HOTSPUR' flame '$PROFILE' -o '$TMP/f.html'"
    "hotspur convert --to collapsed|'$HOTSPUR' convert '$PROFILE' --to collapsed -o '$TMP/c.txt'"
    "hotspur convert --to speedscope|'$HOTSPUR' convert '$PROFILE' --to speedscope -o '$TMP/c.json'"
    "hotspur convert --to callgrind|'$HOTSPUR' convert '$PROFILE' --to callgrind -o '$TMP/c.out'"
    "hotspur convert --to pprof|'$HOTSPUR' convert '$PROFILE' --to pprof -o '$TMP/c.pb.gz'"
    "go tool pprof -top|go tool pprof -top '$PROFILE'"
    "go tool pprof -traces|go tool pprof -traces '$PROFILE'"
)
if [ -n "$BASE_BUILD" ]; then
    # Each "before" case right after the same command of this build, so
    # both meet the same state of the machine (run after go tool pprof,
    # which leaves 1.5 GiB to reclaim, the "before" cases came out 5-15%
    # slower even for commands the two builds share).
    B=$BASE_BUILD/bin/hotspur
    PAIRED=()
    for c in "${CASES[@]}"; do
        PAIRED+=("$c")
        case $c in
        hotspur*) PAIRED+=("before: ${c//\'$HOTSPUR\'/\'$B\'}") ;;
        esac
    done
    CASES=("${PAIRED[@]}")
fi
# warm up: page cache, go's tool binary
go tool pprof -top "$PROFILE" >/dev/null 2>&1 || { echo "large_profile: go tool pprof cannot read the profile" >&2; exit 1; }
"$HOTSPUR" top "$PROFILE" >/dev/null

: >"$TMP/results"
for ((r = 0; r < RUNS; r++)); do
    for c in "${CASES[@]}"; do
        name=${c%%|*}
        cmd=${c#*|}
        /usr/bin/time -f "%e %M %U %S" -o "$TMP/t" bash -c "$cmd >/dev/null 2>&1" ||
            { echo "large_profile: '$name' failed" >&2; exit 1; }
        echo "$name|$(cat "$TMP/t")" >>"$TMP/results"
        echo "  run $((r + 1))/$RUNS  $name: $(cat "$TMP/t") (wall s, KiB, user s, sys s)"
    done
done

# medians and ratios
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
awk -F'|' -v raw="$RAW_BYTES" -v file_mb="$FILE_MB" -v raw_mb="$RAW_MB" -v runs="$RUNS" \
    -v samples="$SAMPLES" -v locs="$LOCATIONS" -v inv="$INVOCATION" -v load="$LOAD" \
    -v base="$BASE_BUILD" '
function median(list,   n, i, j, t, a) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function maxrss(name,   n, i, a, m) {
    n = split(rss[name], a, " "); m = 0
    for (i = 1; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0
    return m
}
{ split($2, f, " "); times[$1] = times[$1] " " f[1]; rss[$1] = rss[$1] " " f[2]; cpu[$1] = cpu[$1] " " (f[3] + f[4])
  if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
END {
    print "## Analysis speed on a large profile"
    print ""
    printf "Command: `%s`. A generated CPU profile (bench/gen_large_profile.c) of %d samples over %d locations, %s MiB gzipped, %s MiB decoded; median of %d runs each, interleaved, on this machine (2 cores shared; load average at the end %s). CPU = user+sys. Peak RSS from `/usr/bin/time` %%M (the largest of the runs), also as a multiple of the decoded profile size.", inv, samples, locs, file_mb, raw_mb, runs, load
    if (base != "") printf " Rows \"before\" are the build in %s, run in the same rounds.", base
    print "\n"
    print "| command | median wall (s) | median CPU (s) | peak RSS (MiB) | RSS / decoded size |"
    print "|---|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        m = median(times[order[i]]); med[order[i]] = m; mc[order[i]] = median(cpu[order[i]])
        printf "| %s | %.2f | %.2f | %.0f | %.2fx |\n", order[i], m, mc[order[i]], maxrss(order[i]) / 1024, maxrss(order[i]) * 1024 / raw
    }
    print ""
    gt = med["go tool pprof -top"]; gr = med["go tool pprof -traces"]
    printf "Ratios of median wall times (go tool pprof / hotspur; goals: each hotspur command <= 1.0 s, <= 3x the decoded size in RSS, >= 20x faster than go tool pprof):\n\n"
    printf "- `top` vs `pprof -top`: **%.1fx**\n", gt / med["hotspur top"]
    printf "- `flame` vs `pprof -top`: **%.1fx**; vs `pprof -traces`: **%.1fx**\n", gt / med["hotspur flame"], gr / med["hotspur flame"]
    split("collapsed speedscope callgrind pprof", fmts, " ")
    for (i = 1; i <= 4; i++) {
        c = "hotspur convert --to " fmts[i]
        printf "- `convert --to %s` vs `pprof -top`: **%.1fx**; vs `pprof -traces`: **%.1fx**\n", fmts[i], gt / med[c], gr / med[c]
    }
    if (base != "") {
        printf "\nThis build vs before (median wall; median CPU):\n\n"
        split("hotspur top|hotspur flame|hotspur convert --to collapsed|hotspur convert --to speedscope|hotspur convert --to callgrind|hotspur convert --to pprof", cs, "|")
        for (i = 1; i <= 6; i++)
            printf "- `%s`: **%.2fx** faster; CPU %.2fx\n", substr(cs[i], 9), med["before: " cs[i]] / med[cs[i]], mc["before: " cs[i]] / mc[cs[i]]
    }
}' "$TMP/results" >"$TMP/section.md"

echo
cat "$TMP/section.md"

bench_write_section large_profile "Analysis speed on a large profile" "$TMP/section.md" "$DOC"
