# heap_stress.sh — the heap agent must never break its host: heap_stress runs
# 8 threads doing malloc/calloc/posix_memalign/realloc/free with sizes from
# 1 B to 1 MiB (800k operations a run, 5 runs), checks every block's
# contents, and optionally forks children while the threads run (the
# children free blocks allocated before the fork, allocate, and exit).
# Under the agent, exact and sampled, with and without forks: the output
# (deterministic totals and the corruption count) equals a plain run's, the
# exit status is 0, every profile is valid with no negative in-use value,
# and the figures agree with the program's own counts: in exact mode
# alloc_objects at each op_* function equals its call count, alloc_space
# equals the bytes requested, nothing is left in use; sampled, the bytes
# are within 10%. A forked child keeps the figures it inherited (as
# docs/agent.md says) and adds its own: the children's child_op_*
# allocations are counted exactly in their profiles, none in the parent's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

ARGS=(8 100000 3) # threads, operations per thread, phases
"$PROGS/heap_stress" "${ARGS[@]}" 0 > plain.out 2> /dev/null || fail "plain run failed: $(cat plain.out)"
grep -q '^corrupt 0$' plain.out || fail "heap_stress finds corruption without the agent"
# With forks the output is the same but for the children's line, which must
# say that all of them succeeded (their counts are compared further down).
same_but_children() { # OUT: equal to plain.out but for the children line
    cmp -s <(grep -v '^children ' plain.out) <(grep -v '^children ' "$1") || return 1
    awk '$1 == "children" && $2 == $4 && $2 > 0 { ok = 1 } END { exit !ok }' "$1"
}

count_of() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

check_exact() { # FILE OUT LABEL: op_* figures equal the program's counts
    local file=$1 out=$2 label=$3 fn want got objs bytes
    objs=$(site_values "$file" alloc_objects '^op_')
    for fn in op_malloc op_calloc op_memalign op_realloc; do
        want=$(count_of "$fn" "$out")
        got=$(value_of "$fn" <<< "$objs")
        [ "$got" = "$want" ] || fail "$label: alloc_objects at $fn = $got, the program made $want calls"
    done
    want=$(awk '$1 == "allocations" { print $6 }' "$out")
    bytes=$(site_values "$file" alloc_space '^op_' | awk '$1 ~ /^op_/ { s += $2 } END { printf "%.0f\n", s }')
    [ "$bytes" = "$want" ] || fail "$label: alloc_space at op_* = $bytes, the program requested $want"
    got=$(site_values "$file" inuse_space '^op_' | awk '$1 ~ /^op_/ { s += $2 } END { printf "%.0f\n", s }')
    [ "$got" = 0 ] || fail "$label: $got bytes in use at op_* though every block was freed"
}

check_sampled() { # FILE OUT LABEL: op_* bytes within 10%
    local file=$1 out=$2 label=$3 want got
    want=$(awk '$1 == "allocations" { print $6 }' "$out")
    got=$(site_values "$file" alloc_space '^op_' | awk '$1 ~ /^op_/ { s += $2 } END { printf "%.0f\n", s }')
    echo "$label: allocated at op_* $got, the program requested $want ($(pct "$got" "$want"))"
    within "$got" "$want" 10 || fail "$label: sampled bytes not within 10%"
}

no_negative() { # FILE: no sample has a negative in-use value
    local idx
    for idx in inuse_objects inuse_space; do
        "$HOTSPUR" convert --to collapsed --sample-index $idx "$1" | awk '$NF < 0 { bad = 1 } END { exit bad }' ||
            fail "$1 has negative $idx values"
    done
}

# 1. exact, no forks, under record
"$HOTSPUR" record --heap --heap-rate 1 -o exact.pb.gz -- "$PROGS/heap_stress" "${ARGS[@]}" 0 > exact.out 2> exact.err ||
    fail "exact: exit status $?: $(cat exact.err)"
cmp -s plain.out exact.out || fail "exact: output differs: $(diff plain.out exact.out)"
check_exact exact.pb.gz exact.out "exact"
no_negative exact.pb.gz
echo "exact: $(count_of allocations exact.out) allocations counted exactly"

# 2. sampled, no forks, under record
"$HOTSPUR" record --heap -o sampled.pb.gz -- "$PROGS/heap_stress" "${ARGS[@]}" 0 > sampled.out 2> sampled.err ||
    fail "sampled: exit status $?: $(cat sampled.err)"
cmp -s plain.out sampled.out || fail "sampled: output differs: $(diff plain.out sampled.out)"
check_sampled sampled.pb.gz sampled.out "sampled"
no_negative sampled.pb.gz

# 3 and 4. with forks, exact and sampled, every process writing its own
# profile (HOTSPUR_OUTPUT with %p) through the environment interface. As
# docs/agent.md says, a child keeps the figures it inherited (its heap holds
# the parent's blocks) and adds its own: its child_op_* allocations.
for mode in exact sampled; do
    rate=524288
    [ $mode = exact ] && rate=1
    mkdir "fork_$mode"
    status=0
    HOTSPUR_CPU=0 HOTSPUR_HEAP=1 HOTSPUR_HEAP_RATE=$rate HOTSPUR_OUTPUT="$TMP/fork_$mode/p.%p.pb.gz" \
        LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/heap_stress" "${ARGS[@]}" 2 > "fork_$mode.out" 2> "fork_$mode.err" || status=$?
    [ $status = 0 ] || fail "fork $mode: exit status $status: $(cat "fork_$mode.out" "fork_$mode.err")"
    same_but_children "fork_$mode.out" || fail "fork $mode: output differs: $(diff plain.out "fork_$mode.out")"
    pid=$(sed -n 's/^heap_stress: pid //p' "fork_$mode.err")
    parent=fork_$mode/p.$pid.pb.gz
    [ -s "$parent" ] || fail "fork $mode: the parent wrote no $parent: $(ls "fork_$mode")"
    children=$(awk '$1 == "children" { print $2 }' "fork_$mode.out")
    child_allocs=0 nchild=0
    for f in fork_$mode/p.*.pb.gz; do
        case $f in *.peak.pb.gz) continue ;; esac
        "$HOTSPUR" top "$f" > /dev/null 2>&1 || fail "fork $mode: $f is not a valid profile"
        "$HOTSPUR" top "${f%.pb.gz}.peak.pb.gz" > /dev/null 2>&1 || fail "fork $mode: no valid peak file for $f"
        no_negative "$f"
        [ "$f" = "$parent" ] && continue
        nchild=$((nchild + 1))
        vals=$(site_values "$f" alloc_objects '^(child_)?op_')
        child_allocs=$((child_allocs + $(value_of child_op_malloc <<< "$vals") + $(value_of child_op_realloc <<< "$vals")))
        # what a child inherited is at most what the parent made in all
        for fn in op_malloc op_calloc op_memalign op_realloc; do
            [ "$(value_of $fn <<< "$vals")" -le "$(count_of $fn plain.out)" ] ||
                fail "fork $mode: $f has more $fn allocations than the parent made"
        done
    done
    [ "$nchild" = "$children" ] || fail "fork $mode: $nchild child profiles for $children children"
    vals=$(site_values "$parent" alloc_objects '^child_op_')
    [ "$(value_of child_op_malloc <<< "$vals")" = 0 ] || fail "fork $mode: a child's allocations are in the parent's profile"
    if [ $mode = exact ]; then
        check_exact "$parent" "fork_$mode.out" "fork exact (parent)"
        want=$(awk '$1 == "children" { print $6 }' "fork_$mode.out")
        [ "$child_allocs" = "$want" ] || fail "fork exact: children's profiles count $child_allocs allocations, they made $want"
    else
        check_sampled "$parent" "fork_$mode.out" "fork sampled (parent)"
    fi
    echo "fork $mode: output identical, parent profile + $nchild child profiles valid"
done
cmp -s fork_exact.out fork_sampled.out || fail "the runs with forks differ: $(diff fork_exact.out fork_sampled.out)"
pass "heap_stress: output identical and counts consistent, exact and sampled, with and without forks"
