# heap_cxx.sh — C++ allocation sites in exact mode: new[]/delete[] of ints,
# new/delete of an object, new[] of a type with a destructor (the 8-byte
# array cookie counted), aligned new, nothrow new[], std::vector storage,
# a leaked new[]. Every site's four figures must equal the truth, and the
# allocations must show libstdc++'s operator new frame between the site and
# the leaf, as the agent's documentation says.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

"$PROGS/heap_sites_cxx" > truth.txt
"$HOTSPUR" record --heap --heap-rate 1 -o cxx.pb.gz -- "$PROGS/heap_sites_cxx" > rec.out 2> rec.err ||
    fail "record exited $?: $(cat rec.err)"
cmp -s truth.txt rec.out || fail "output under record differs from a plain run"
sites_equal_truth cxx.pb.gz truth.txt "C++ sites"
# every site's allocations went through operator new (the leaf), none
# reached malloc directly from the site
"$HOTSPUR" convert --to collapsed --sample-index alloc_objects cxx.pb.gz > stacks.txt
n=$(grep -c ';site_cxx_' stacks.txt)
m=$(grep ';site_cxx_' stacks.txt | grep -Ec ';operator new[^;]* [0-9]+$' || true)
[ "$n" -gt 0 ] && [ "$n" = "$m" ] || fail "$((n - m)) of $n C++ site stacks do not end in operator new: $(cat stacks.txt)"
# demangled names, readable by go tool pprof too
go tool pprof -sample_index=alloc_space -top -nodecount=100 cxx.pb.gz 2>/dev/null | grep -q 'site_cxx_new_array' ||
    fail "go tool pprof does not show site_cxx_new_array"
pass "C++: new/new[]/aligned/nothrow sites equal the truth"
