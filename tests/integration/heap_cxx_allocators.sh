# heap_cxx_allocators.sh — with tcmalloc or jemalloc linked, which define
# C++ operator new/delete themselves (they never reach malloc), every C++
# allocation is still seen (issue 13): in exact mode each site's four
# figures equal the truth, as with libstdc++ (heap_cxx.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

for alloc in tcmalloc jemalloc; do
    prog="$PROGS/heap_sites_cxx_$alloc"
    "$prog" > "truth.$alloc" || fail "$alloc: the program fails alone"
    "$HOTSPUR" record --heap --heap-rate 1 -o "$alloc.pb.gz" -- "$prog" > "rec.$alloc" 2> "err.$alloc" ||
        fail "$alloc: record exited $?: $(cat "err.$alloc")"
    cmp -s "truth.$alloc" "rec.$alloc" || fail "$alloc: output under record differs"
    sites_equal_truth "$alloc.pb.gz" "truth.$alloc" "$alloc: C++ sites"
    echo "$alloc: every site's figures equal the truth"
done
pass "C++ sites exact with tcmalloc and jemalloc"
