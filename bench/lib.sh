# lib.sh — helpers sourced by the benchmark scripts (not a benchmark itself:
# bench/run.sh skips it).

# bench_serve_url LOG [TRIES]: print the http://HOST:PORT that `hotspur
# serve` announced in LOG ("listening on ..."), waiting for it up to TRIES x
# 0.1 s (default 100); status 1, printing nothing, if it never does.
bench_serve_url() {
    local u="" i
    for ((i = 0; i < ${2:-100}; i++)); do
        u=$(sed -n 's|.*listening on \(http://[^ /]*\).*|\1|p' "$1" | head -n 1)
        if [ -n "$u" ]; then
            echo "$u"
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# bench_big_folded OUT: write the 100 000-node flame graph's input that
# web_ui.sh and flame_callgrind.sh both time: 100 000 distinct folded
# stacks 4-21 frames deep over 3000 function names (seeded: the same file
# every time).
bench_big_folded() {
    python3 - "$1" <<'PY'
import random, sys
random.seed(11)
fns = ["big_%d" % i for i in range(3000)]
with open(sys.argv[1], "w") as out:
    seen = set()
    while len(seen) < 100000:
        st = ";".join(["main"] + [random.choice(fns[: 30 * k + 30]) for k in range(random.randint(3, 20))])
        if st not in seen:
            seen.add(st)
            out.write("%s %d\n" % (st, random.randint(1, 1000)))
PY
}

# bench_write_section NAME TITLE SECTION_FILE DOC: replace the "## TITLE"
# section of DOC (docs/BENCHMARKS.md) with SECTION_FILE, keeping the other
# sections, or append it; creates DOC if needed. BENCH_NO_DOC=1: do nothing.
bench_write_section() {
    local name=$1 title=$2 section=$3 doc=$4
    if [ "${BENCH_NO_DOC:-0}" = 1 ]; then return 0; fi
    mkdir -p "$(dirname "$doc")"
    if [ ! -e "$doc" ]; then
        # shellcheck disable=SC2016 # the backquotes are Markdown
        printf '# Benchmarks\n\nResults of `make bench` (bench/run.sh). Each section is rewritten by the benchmark that owns it.\n\n' >"$doc"
    fi
    awk -v secfile="$section" -v head="## $title" '
function emit(   l) { while ((getline l < secfile) > 0) print l; print ""; done = 1 }
{ line = $0; sub(/[[:space:]]+$/, "", line) }
line == head { emit(); skip = 1; next }
skip && /^## / { skip = 0 }
!skip { print; last = $0 }
END { if (!done) { if (NR > 0 && last != "") print ""; emit() } }' "$doc" >"$doc.tmp.$$"
    mv "$doc.tmp.$$" "$doc"
    echo "$name: wrote the \"$title\" section of $doc"
}

# bench_tmpdir: a fresh temporary directory (printed), removed at exit with
# the processes registered in BENCH_PIDS (killed, then waited for). Sets the
# EXIT trap: a script with its own cleanup calls bench_cleanup in it.
BENCH_PIDS=()
BENCH_TMP=""
bench_cleanup() {
    local p
    for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BENCH_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -z "$BENCH_TMP" ] || rm -rf "$BENCH_TMP"
}
bench_tmpdir() {
    BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hotspur-bench.XXXXXX")
    trap bench_cleanup EXIT
}

# bench_median: the median of the numbers on stdin, one a line (the lower
# middle one for an even count).
bench_median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# bench_ticks PID / bench_rss PID: a process's CPU (user + system, clock
# ticks) and its VmRSS in KiB, 0 once it is gone.
bench_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
bench_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# bench_agent_ticks PID: the CPU (clock ticks) of the agent's own threads in
# process PID ("hotspur": windows, encoding, naming; "hotspur-up": uploads).
bench_agent_ticks() {
    local t c
    for t in /proc/"$1"/task/*; do
        c=$(cat "$t/comm" 2>/dev/null || true)
        case $c in hotspur | hotspur-up) awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null || true ;; esac
    done | awk '{ s += $1 } END { print s + 0 }'
}

# bench_wait_file NAME FILE: until FILE is non-empty (10 s), else a one-line
# error and exit.
bench_wait_file() {
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$2" ] && return 0; sleep 0.1; done
    echo "$1: $2 did not appear" >&2
    exit 1
}

# BENCH_AWK_MED: awk functions to put before a program ("$BENCH_AWK_MED"'...'):
# sortn(a, n) sorts a[1..n] numerically in place, med(a, n) is its median.
# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_AWK_MED='
function sortn(a, n,    i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
function med(a, n) { sortn(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'

# bench_check_build NAME BUILD ROUNDS MIN: the built CLI and agent exist and
# ROUNDS is at least MIN, else a one-line error and exit.
bench_check_build() {
    local name=$1 build=$2 rounds=$3 min=$4 f
    if [ "$rounds" -lt "$min" ]; then
        echo "$name: BENCH_ROUNDS must be at least $min" >&2
        exit 2
    fi
    for f in "$build/bin/hotspur" "$build/lib/libhotspur.so"; do
        if [ ! -e "$f" ]; then
            echo "$name: $f is missing; build first (make)" >&2
            exit 1
        fi
    done
}

# bench_callgrind_ir OUT_FILE CMD...: run CMD under valgrind's callgrind and
# print the instructions it executed (all threads, the program's and every
# library's: the "totals" line). CMD's stdout goes to OUT_FILE.stdout, its
# and valgrind's stderr to OUT_FILE.stderr. Callgrind's counts are the same
# from run to run (within a few hundred instructions for a threaded program),
# so differences of a few instructions per operation are measurable where
# timings on a shared machine are not. Environment for CMD only: prefix it
# with `env VAR=...` (children are traced, and the file written at the exec
# is replaced by the program's own at its exit; env's few hundred
# instructions are in the count).
bench_callgrind_ir() {
    bench_callgrind_ir_in "" "$@"
}

# bench_callgrind_ir_in FUNCTION OUT_FILE CMD...: bench_callgrind_ir, counting
# only what runs inside FUNCTION (in any thread, with what it calls:
# callgrind's --toggle-collect; empty: everything). A workload's own loop
# counted this way is exactly the same from run to run: what runs around
# it (start-up, threads starting and ending, the exit) may not be, e.g.
# when a thread waits in a loop for another that valgrind's scheduler has
# not let run yet.
bench_callgrind_ir_in() {
    local fn=$1 out=$2
    shift 2
    local toggle=()
    if [ -n "$fn" ]; then toggle=(--toggle-collect="$fn"); fi
    rm -f "$out"
    if ! valgrind --tool=callgrind --trace-children=yes "${toggle[@]}" --callgrind-out-file="$out" "$@" >"$out.stdout" 2>"$out.stderr"; then
        echo "callgrind: '$*' failed:" >&2
        tail -n 20 "$out.stderr" >&2
        return 1
    fi
    awk '/^totals:/ { print $2; found = 1 } END { exit !found }' "$out"
}

# bench_large_profile BUILD SAMPLES LOCATIONS: print the path of bench's
# large CPU profile (bench/gen_large_profile.c, built against BUILD's static
# profile library), $BUILD/bench/large-SAMPLES-LOCATIONS.pb.gz, generating
# it first when it is not there.
bench_large_profile() {
    local build=$1 samples=$2 locs=$3 here tmp
    local profile=$build/bench/large-$samples-$locs.pb.gz
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    if [ ! -s "$profile" ]; then
        mkdir -p "$build/bench"
        tmp=$(mktemp -d)
        # shellcheck disable=SC2046 # pkg-config prints several flags
        if ! cc -O2 -I"$here/../src" -o "$tmp/gen" "$here/gen_large_profile.c" \
            "$build/lib/static/libhs_profile.a" "$build/lib/static/libhs_base.a" $(pkg-config --libs libprotobuf-c zlib libdeflate libisal) >&2 ||
            ! "$tmp/gen" "$profile.tmp" "$samples" "$locs" >&2; then
            rm -rf "$tmp"
            return 1
        fi
        rm -rf "$tmp"
        mv "$profile.tmp" "$profile"
    fi
    echo "$profile"
}

# bench_callgrind_builds NAME DIR...: for the callgrind benchmarks that
# compare builds — valgrind is installed and each DIR has bin/hotspur, else
# a one-line error and exit; sets BUILDS to the DIRs made absolute.
bench_callgrind_builds() {
    local name=$1 b
    shift
    command -v valgrind >/dev/null || { echo "$name: valgrind is needed" >&2; exit 1; }
    BUILDS=()
    for b in "$@"; do
        b=$(cd "$b" && pwd)
        [ -x "$b/bin/hotspur" ] || { echo "$name: $b/bin/hotspur is missing; build first" >&2; exit 1; }
        BUILDS+=("$b")
    done
}

# bench_wide_unnamed_profile HOTSPUR DIR: DIR/raw.pb.gz, a CPU profile of
# 10 000 frames spread over HOTSPUR's own functions, with addresses only
# (its mapping carries HOTSPUR's path and build ID, nothing is named): the
# profile the server-naming benchmarks name (server_names.sh,
# server_names_query.sh). Prints the number of frames.
bench_wide_unnamed_profile() {
    local hotspur=$1 t=$2 bid here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    nm --defined-only "$hotspur" | awk '$2 ~ /^[tT]$/ { print $1 }' | sort -u >"$t/funcs"
    bid=$(readelf -n "$hotspur" | awk '/Build ID/ { print $3 }')
    SRC=$(dirname "$here") python3 - "$t/funcs" "$hotspur" "$bid" "$t/raw.pb" <<'PY' || return 1
import os, sys
sys.path.insert(0, os.environ["SRC"] + "/tests/integration")
from pbwire import varint, ldelim, vfield, packed
funcs = [int(l, 16) for l in open(sys.argv[1]) if l.strip()]
n = 10000
step = max(1, len(funcs) // n)
addrs = sorted(set(funcs[i * step % len(funcs)] + 1 + (i // len(funcs)) * 2 for i in range(n)))[:n]
base = 0x555500000000
strings = ["", "samples", "count", "cpu", "nanoseconds", sys.argv[2], sys.argv[3]]
out = bytearray()
out += ldelim(1, vfield(1, 1) + vfield(2, 2))
out += ldelim(1, vfield(1, 3) + vfield(2, 4))
for i, a in enumerate(addrs):
    out += ldelim(2, packed(1, [i + 1]) + packed(2, [1, 10000000]))
out += ldelim(3, vfield(1, 1) + vfield(2, base) + vfield(3, base + (1 << 32)) + vfield(4, 0) + vfield(5, 5) + vfield(6, 6))
for i, a in enumerate(addrs):
    out += ldelim(4, vfield(1, i + 1) + vfield(2, 1) + vfield(3, base + a))
for s in strings:
    out += ldelim(6, s.encode())
out += ldelim(11, vfield(1, 3) + vfield(2, 4)) + vfield(12, 10000000)
open(sys.argv[4], "wb").write(out)
print(len(addrs))
PY
    gzip -c "$t/raw.pb" >"$t/raw.pb.gz"
}
