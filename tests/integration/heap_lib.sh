# heap_lib.sh — helpers shared by the heap profiler tests (heap_*.sh), which
# source it after lib.sh (ctest skips *_lib.sh). Run by itself,
# `bash heap_lib.sh` checks its own parsing on a hand-written
# collapsed-stack input.
#
# The attribution rule: a sample belongs to the site frame nearest its leaf
# (the first frame from the leaf matching ^site_), so a C site is charged its
# own malloc calls and a C++ site what it got through libstdc++'s operator
# new. Names are cut at the first '(' (C++ parameter lists).

# With an ASan build of the agent (make check SANITIZE=1), lib.sh preloads
# ASan's runtime first, and its malloc then wins over the agent's: no
# allocation reaches the heap hooks, so there is nothing of the heap
# profiler to test. Say so loudly and stop (the plain build runs them).
if [ -n "${asan_rt:-}" ] && [ "${BASH_SOURCE[0]}" != "$0" ]; then
    echo "SKIP: $(basename "$0"): the heap profiler cannot see allocations with ASan's runtime preloaded before the agent ($asan_rt); run the heap tests on the plain build"
    exit 0
fi

# leaks_three_runs WHAT LEAKS_LINE LOST KEPT SAYS -- PROGRAM [ARGS...]:
# `record --leaks` of PROGRAM, 3 runs: each time the program prints SAYS,
# the agent's "hotspur: leaks:" line starts with LEAKS_LINE, and the leaks
# profile holds the site LOST but not KEPT (a block still reachable). WHAT
# names the case in messages. Then, where valgrind is, it must find the
# same loss: its "definitely lost" line is VG_LOST (from the environment:
# leaks_vg_lost="3,000 bytes in 1 blocks"). Files l1..l3.pb.gz in the cwd.
leaks_three_runs() {
    local what=$1 want=$2 lost=$3 kept=$4 says=$5 run line
    shift 6
    for run in 1 2 3; do
        "$HOTSPUR" record --leaks -o "l$run.pb.gz" -- "$@" >out 2>err || fail "$what: record: $(cat err)"
        grep -q "$says" out || fail "$what: the program's output is missing: $(cat out)"
        line=$(grep '^hotspur: leaks:' err || true)
        [[ $line == "hotspur: leaks: $want"* ]] ||
            { cat err; fail "$what, run $run: '$line', want '$want...'"; }
        "$HOTSPUR" top --sample-index inuse_space "l$run.leaks.pb.gz" >top.txt 2>&1
        grep -q "$lost" top.txt || fail "$what: the lost block's site is not in the leaks profile: $(cat top.txt)"
        grep -q "$kept" top.txt && fail "$what: a block still reachable is reported: $(cat top.txt)"
    done
    if command -v valgrind >/dev/null; then
        valgrind --leak-check=full "$@" 2>vg.txt >/dev/null || true
        grep -q "definitely lost: $leaks_vg_lost" vg.txt ||
            fail "$what: valgrind disagrees: $(grep -E 'lost|reachable' vg.txt)"
    fi
    return 0
}

# collapsed_sites INDEX [REGEX]: stdin "a;b;leaf VALUE" lines -> "SITE SUM"
# for every site frame (nearest the leaf) matching REGEX (default ^site_);
# samples with no site frame go to "(none)".
collapsed_sites() {
    awk -v re="${1:-^site_}" '
    { v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); s = "(none)"
      for (i = n; i >= 1; i--) { name = f[i]; sub(/\(.*/, "", name); if (name ~ re) { s = name; break } }
      sum[s] += v }
    END { for (k in sum) printf "%s %.0f\n", k, sum[k] }' | sort
}

# collapsed_leaves: stdin collapsed lines -> "LEAF SUM" by leaf function.
collapsed_leaves() {
    awk '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); name = f[n]; sub(/\(.*/, "", name); sum[name] += v }
    END { for (k in sum) printf "%s %.0f\n", k, sum[k] }' | sort
}

# site_values FILE INDEX [REGEX]: per-site values of one sample type.
site_values() {
    "$HOTSPUR" convert --to collapsed --sample-index "$2" "$1" | collapsed_sites "${3:-^site_}"
}

# leaf_values FILE INDEX: per-leaf-function values of one sample type.
leaf_values() {
    "$HOTSPUR" convert --to collapsed --sample-index "$2" "$1" | collapsed_leaves
}

# total_value FILE INDEX: the sum of one sample type over all samples.
total_value() {
    "$HOTSPUR" convert --to collapsed --sample-index "$2" "$1" | awk '{ s += $NF } END { printf "%.0f\n", s }'
}

# truth_column NAME: the column of a truth-table line
# ("site NAME ALLOC_OBJ ALLOC_BYTES INUSE_OBJ INUSE_BYTES LEAK_OBJ LEAK_BYTES").
truth_column() {
    case $1 in
    alloc_objects) echo 3 ;; alloc_space) echo 4 ;; inuse_objects) echo 5 ;;
    inuse_space) echo 6 ;; leak_objects) echo 7 ;; leak_space) echo 8 ;;
    *) fail "no truth column $1" ;;
    esac
}

# truth_values TRUTHFILE NAME: "SITE VALUE" for sites whose value is > 0.
truth_values() {
    awk -v c="$(truth_column "$2")" '$1 == "site" && $c > 0 { print $2, $c }' "$1" | sort
}

# sites_equal_truth FILE TRUTHFILE WHAT: each site's four figures in FILE
# (alloc/inuse objects and bytes) equal the truth table, else fail with
# the difference.
sites_equal_truth() {
    local idx got want
    for idx in alloc_objects alloc_space inuse_objects inuse_space; do
        got=$(site_values "$1" "$idx" | { grep -v '^(none) ' || true; } | awk '$2 != 0')
        want=$(truth_values "$2" "$idx")
        if [ "$got" != "$want" ]; then
            echo "--- $3 $idx: truth vs profile (site value)" >&2
            diff <(echo "$want") <(echo "$got") >&2 || true
            fail "$3: $idx per site differs from the truth"
        fi
    done
}

# value_of NAME < "NAME VALUE" lines: the value (0 when absent).
value_of() {
    awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }'
}

# within GOT WANT PCT: |GOT - WANT| <= PCT% of WANT.
within() {
    awk -v g="$1" -v w="$2" -v p="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= w * p / 100) }'
}

# pct GOT WANT: the relative difference, for messages.
pct() {
    awk -v g="$1" -v w="$2" 'BEGIN { if (w == 0) print "n/a"; else printf "%+.2f%%\n", (g - w) * 100 / w }'
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    # Self-check of the attribution rule on a synthetic input.
    set -euo pipefail
    fail() { echo "FAIL: $*" >&2; exit 1; }
    got=$(printf '%s\n' \
        'main;site_a;malloc 10' \
        'main;site_a;site_b;__strdup 5' \
        'main;site_c(int, int);std::vector<long>::reserve(unsigned long);operator new(unsigned long) 7' \
        'main;site_c(int, int);operator new(unsigned long) 1' \
        'main;other 3' | collapsed_sites)
    want=$(printf '%s\n' '(none) 3' 'site_a 10' 'site_b 5' 'site_c 8' | sort)
    [ "$got" = "$want" ] || fail "collapsed_sites: [$got] != [$want]"
    got=$(printf '%s\n' 'main;op_x;malloc 2' 'main;child_op_y;op_z 3' | collapsed_sites '^(child_)?op_')
    [ "$got" = "$(printf 'child_op_y 0\nop_z 3\nop_x 2' | sort | awk '$2 > 0')" ] || fail "collapsed_sites REGEX: [$got]"
    got=$(printf '%s\n' 'a;b 4' 'c;b 2' 'x;operator new(unsigned long) 1' | collapsed_leaves)
    [ "$got" = "$(printf 'b 6\noperator new 1')" ] || fail "collapsed_leaves: [$got]"
    within 105 100 5 || fail "within 105 100 5"
    within 106 100 5 && fail "within 106 100 5"
    echo "PASS: heap_lib helpers"
fi
