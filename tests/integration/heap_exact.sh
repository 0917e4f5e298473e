# heap_exact.sh — exact mode (--heap-rate 1): heap_sites' allocation sites
# allocate known bytes and objects (malloc small and large, calloc, realloc
# chains, realloc of another site's blocks, reallocarray, posix_memalign,
# aligned_alloc, memalign, valloc, strdup inside libc, a linked list, leaks),
# some freed, some kept. Every site's alloc_objects, alloc_space,
# inuse_objects and inuse_space must EQUAL the program's own truth table,
# the site must be the leaf frame (or, for strdup, the frame above libc's
# strdup), and the same must hold through the agent's environment interface
# (LD_PRELOAD + HOTSPUR_* variables). go tool pprof must read the file.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

"$PROGS/heap_sites" exact > truth.txt
"$HOTSPUR" record --heap --heap-rate 1 -o exact.pb.gz -- "$PROGS/heap_sites" exact > rec.out 2> rec.err ||
    fail "record exited $?: $(cat rec.err)"
cmp -s truth.txt rec.out || fail "output under record differs from a plain run"
[ -s exact.pb.gz ] && [ -s exact.peak.pb.gz ] || fail "exact.pb.gz or exact.peak.pb.gz missing: $(ls)"

sites_equal_truth exact.pb.gz truth.txt "record --heap-rate 1"

# The allocating function is the leaf (the agent's frames are not in the
# stack); strdup's malloc shows libc's strdup as the leaf, the site above it.
leaves=$(leaf_values exact.pb.gz alloc_objects)
while read -r site n; do
    [ "$site" = site_strdup ] && continue
    got=$(value_of "$site" <<< "$leaves")
    [ "$got" = "$n" ] || fail "$site is the leaf of $got allocations, want $n: agent frames in the stack?"
done < <(truth_values truth.txt alloc_objects)
"$HOTSPUR" convert --to collapsed --sample-index alloc_objects exact.pb.gz |
    grep -Eq ';site_strdup;[^;]*strdup [0-9]+$' || fail "no site_strdup;*strdup stack"

# Sample types, period and default index as Go writes them.
go tool pprof -raw exact.pb.gz > raw.txt 2> raw.err || fail "go tool pprof -raw failed: $(cat raw.err)"
grep -q '^PeriodType: space bytes$' raw.txt || fail "period type is not space/bytes: $(head -3 raw.txt)"
grep -q '^Period: 1$' raw.txt || fail "period is not 1 in exact mode"
grep -Eq '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]$' raw.txt ||
    fail "sample types: $(grep -m1 /count raw.txt)"
# go tool pprof's own numbers for one site (objects print as plain integers)
want=$(truth_values truth.txt alloc_objects | value_of site_small)
go tool pprof -sample_index=alloc_objects -top -nodecount=100 exact.pb.gz 2>/dev/null |
    awk -v w="$want" '$6 == "site_small" && $1 == w { ok = 1 } END { exit !ok }' ||
    fail "go tool pprof does not see $want objects at site_small"

# The same through the environment interface, as a program linked or
# preloaded by hand would be profiled.
HOTSPUR_CPU=0 HOTSPUR_HEAP=1 HOTSPUR_HEAP_RATE=1 HOTSPUR_OUTPUT="$TMP/env.%p.pb.gz" \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/heap_sites" exact > env.out
cmp -s truth.txt env.out || fail "output under LD_PRELOAD differs"
envfile=""
for f in env.*.pb.gz; do
    case $f in *.peak.pb.gz) ;; *) [ -e "$f" ] && envfile=$f ;; esac
done
[ -n "$envfile" ] || fail "LD_PRELOAD with HOTSPUR_OUTPUT=env.%p.pb.gz wrote nothing: $(ls)"
sites_equal_truth "$envfile" truth.txt "LD_PRELOAD HOTSPUR_HEAP_RATE=1"

pass "exact mode: alloc and in-use objects and bytes equal the truth at all $(grep -c '^site ' truth.txt) sites"
