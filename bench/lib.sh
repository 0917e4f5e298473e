# lib.sh — helpers sourced by the benchmark scripts (not a benchmark itself:
# bench/run.sh skips it).

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
