# record_stacks.sh — stacks through code without frame pointers and inline
# frames. `stacks` is built with -O2 -fomit-frame-pointer; Debian's libc has
# no frame pointers either, so only DWARF CFI unwinding gets these right.
source "$(dirname "$0")/lib.sh"

"$HOTSPUR" record -F 500 -o qsort.pb.gz -- "$PROGS/stacks" qsort 1000 2>/dev/null
# Every sample whose leaf is slow_compare must go up through qsort to
# sort_caller and main, in that order.
go tool pprof -traces qsort.pb.gz 2>/dev/null > traces.txt
awk '
    /^-----/ { if (n) check(); n = 0; next }
    /^ +[0-9.]+[mun]?s / { n = 0; leaf = $2; stack[n++] = $2; next }
    n > 0 && NF == 1 { stack[n++] = $1; next }
    function check(   i, q, s, m) {
        if (leaf != "slow_compare") return
        total++
        for (i = 1; i < n; i++) {
            if (stack[i] ~ /qsort/ && !q) q = i
            if (stack[i] == "sort_caller" && q && !s) s = i
            if (stack[i] == "main" && s && !m) m = i
        }
        if (q && s && m) good++
    }
    END { if (n) check(); printf "%d of %d slow_compare stacks complete\n", good, total
          exit !(total > 0 && good == total) }' traces.txt || fail "incomplete stacks through qsort"

"$HOTSPUR" record -o inline.pb.gz -- "$PROGS/stacks" inline 600 2>/dev/null
"$HOTSPUR" top inline.pb.gz > top.txt
# The inlined hot function is its own frame and holds the flat time; its
# caller, into which it was inlined, holds the cum time.
awk '$6 == "hot_inline" { sub("%", "", $2); ok = $2 + 0 >= 90 } END { exit !ok }' top.txt || fail "hot_inline is not the hot frame: $(cat top.txt)"
awk '$6 == "inline_outer" { sub("%", "", $5); ok = $5 + 0 >= 90 } END { exit !ok }' top.txt || fail "inline_outer lacks cum: $(cat top.txt)"
pass "complete stacks through libc without frame pointers; inline frames"
