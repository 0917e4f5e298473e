# heap_leaks.sh — `record --heap --leaks`: the leaks profile and the report
# on stderr list exactly the deliberately leaked sites of heap_sites
# (site_leak_malloc, site_leak_calloc, and site_leak_list, a list lost with
# its head, so its inner nodes are unreachable too) with their exact blocks
# and bytes, and nothing else: not the blocks kept in globals, not the ones
# reachable only through other heap blocks (site_list_kept), not stdio's
# buffers. Same for C++ (heap_sites_cxx): only site_cxx_leak_array, though
# kept `new T[]` arrays of a T with a destructor are reached only through an
# interior pointer (past the array cookie).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

check_leaks() { # NAME PROGRAM [ARGS...]
    local name=$1 got want total_b total_n
    shift
    "$PROGS/$@" > "$name.truth"
    "$HOTSPUR" record --heap --leaks -o "$name.pb.gz" -- "$PROGS/$@" > "$name.out" 2> "$name.err" ||
        fail "$name: record exited $?: $(cat "$name.err")"
    cmp -s "$name.truth" "$name.out" || fail "$name: output differs from a plain run"
    for f in "$name.pb.gz" "$name.peak.pb.gz" "$name.leaks.pb.gz"; do
        [ -s "$f" ] || fail "$name: $f missing: $(ls)"
    done
    for idx in inuse_objects inuse_space; do
        got=$(site_values "$name.leaks.pb.gz" "$idx")
        want=$(truth_values "$name.truth" "${idx/inuse/leak}")
        if [ "$got" != "$want" ]; then
            echo "--- $name $idx in the leaks profile vs the truth" >&2
            diff <(echo "$want") <(echo "$got") >&2 || true
            "$HOTSPUR" convert --to collapsed --sample-index "$idx" "$name.leaks.pb.gz" >&2
            fail "$name: the leaks profile is not exactly the leaked sites"
        fi
    done
    # the report: the total line, then the sites biggest first
    total_n=$(truth_values "$name.truth" leak_objects | awk '{ s += $2 } END { print s }')
    total_b=$(truth_values "$name.truth" leak_space | awk '{ s += $2 } END { print s }')
    grep -q "leaks: $total_n blocks, " "$name.err" ||
        fail "$name: no 'leaks: $total_n blocks' line in the report: $(cat "$name.err")"
    want=$(truth_values "$name.truth" leak_space | sort -k2,2nr | cut -d' ' -f1 | tr '\n' ' ')
    got=$(grep -Eo '^ +site_[a-z_]+' "$name.err" | tr -d ' ' | tr '\n' ' ')
    [ "$got" = "$want" ] || fail "$name: report lists sites [$got], want biggest first [$want]"
    echo "$name: $total_n blocks, $total_b bytes leaked, at: $want"
}

check_leaks c heap_sites exact
check_leaks cxx heap_sites_cxx
pass "leaks: exactly the leaked sites, exact blocks and bytes"
