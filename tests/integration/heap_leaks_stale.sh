#!/usr/bin/env bash
# heap_leaks_stale.sh — `record --leaks` against valgrind's answer on a
# program built -O0 (issue 30): four 2000-byte blocks lost from main are
# all reported in every run (stale copies of their pointers in dead stack
# slots under exit()'s frames used to hide one or two); when a function
# calls exit(), the frames above it are live: the block it keeps and the
# last lost pointer, which -O0 keeps in main's frame, are reachable (3
# lost, as valgrind says); three created and joined threads add no "leak"
# of glibc's TLS blocks (kept for reuse).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

leaks_of() { sed -n 's/^hotspur: leaks: \([0-9]*\) blocks, .*/\1/p' "$1"; }
want_of() { [ "$1" = deep ] && echo 3 || echo 4; }
for mode in "" deep threads; do
    want=$(want_of "$mode")
    for run in 1 2 3; do
        "$HOTSPUR" record --leaks -o "l$run$mode.pb.gz" -- "$PROGS/leak_stale" $mode >out 2>err ||
            fail "record ($mode): $(cat err)"
        n=$(leaks_of err)
        [ "$n" = "$want" ] || { cat err; fail "leak_stale $mode run $run: $n leaked blocks reported, $want lost"; }
        "$HOTSPUR" top --sample-index inuse_space "l$run$mode.leaks.pb.gz" >top.txt 2>&1
        grep -q leak_stale_make top.txt || fail "no leak_stale_make in the leaks profile: $(cat top.txt)"
        grep -q "_dl_allocate_tls\|allocate_dtv\|leak_stale_deep" top.txt && fail "a block that is not lost reported: $(cat top.txt)"
    done
    if command -v valgrind >/dev/null; then
        valgrind --leak-check=full "$PROGS/leak_stale" $mode 2>vg.txt >/dev/null || true
        grep -q "definitely lost: [0-9,]* bytes in $want blocks" vg.txt ||
            fail "valgrind disagrees ($mode): $(grep lost vg.txt)"
    fi
    echo "leak_stale $mode: $want of $want lost blocks in 3 runs$(command -v valgrind >/dev/null && echo ', as valgrind')"
done
pass "lost blocks found in every run (main returns; exit from a live frame; after 3 joined threads), no glibc TLS block"
