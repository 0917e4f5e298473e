# continuous_heap.sh — the heap in continuous mode: heap_grow keeps one
# 1 MiB block every 100 ms (exact mode, HOTSPUR_HEAP_RATE=1). Each window's
# upload holds the allocations of that window only (alloc_space about
# 10 MiB per second of window: a delta) and the heap in use at the window's
# end (inuse_space about 10 MiB per second since the start, growing from
# window to window: a snapshot).
source "$(dirname "$0")/lib.sh"
needs_malloc_interposition
source "$(dirname "$0")/continuous_lib.sh"

fake_start
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_CPU=0 HOTSPUR_HEAP=1 \
    HOTSPUR_HEAP_RATE=1 LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/heap_grow" 5000 >out 2>err ||
    fail "heap_grow failed: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
sleep 0.3
fake_summary >sum
[ "$(cut -f4 sum | sort -u)" = heap ] || fail "types: $(cut -f4 sum | sort -u | tr '\n' ' ')"
MiB=1048576
prev=0 checked=0 prev_start=0 prev_recv=0 prev_t=-1
while IFS=$'\t' read -r k _ _ _ _ _ _ _ _ _ _ recv start dur _; do
    f="$FAKE_DIR/req.$k.body"
    alloc=$(through "$f" grow_one --sample-index alloc_space)
    inuse=$(through "$f" grow_one --sample-index inuse_space)
    t=$(awk -v s="$start" -v d="$dur" -v t0="$t0" 'BEGIN { printf "%.2f", (s + d) / 1e9 - t0 }')
    d=$(awk -v d="$dur" 'BEGIN { printf "%.2f", d / 1e9 }')
    echo "window ending at ${t} s (${d} s): allocated $((alloc / MiB)) MiB, in use $((inuse / MiB)) MiB"
    # Delta: 10 blocks per second of window, +-1 at each edge; fewer if
    # the machine is slow to wake the program.
    awk -v a="$alloc" -v d="$d" -v m="$MiB" 'BEGIN { exit !(a <= (10 * d + 2) * m) }' ||
        fail "window at ${t} s allocated $((alloc / MiB)) MiB in ${d} s: not a delta"
    awk -v a="$alloc" -v d="$d" -v m="$MiB" 'BEGIN { exit !(d < 0.4 || a >= (5 * d - 1) * m) }' ||
        fail "window at ${t} s allocated only $((alloc / MiB)) MiB in ${d} s"
    # Snapshot: everything kept so far, growing.
    awk -v u="$inuse" -v t="$t" -v m="$MiB" 'BEGIN { exit !(u <= (10 * t + 2) * m && u >= (5 * t - 2) * m) }' ||
        fail "window at ${t} s: $((inuse / MiB)) MiB in use, want about $(awk -v t="$t" 'BEGIN { print int(10 * t) }') MiB"
    # Growing by a block every 0.1 s: strictly, unless this window ended
    # within 0.15 s of the previous one's end (the exit's last window can
    # follow a periodic one at once, after the program's last block).
    if awk -v t="$t" -v p="$prev_t" 'BEGIN { exit !(t - p < 0.15) }'; then
        [ "$inuse" -ge "$prev" ] || fail "in use shrank: $inuse after $prev"
    else
        [ "$inuse" -gt "$prev" ] || fail "in use did not grow: $inuse after $prev (window ending at ${t} s)"
    fi
    # One window per 1 s period, at a random point of its first 0.5 s: the
    # next starts at least 0.5 s (a window) and at most 1.5 s after this
    # one, or, when encoding this one (symbolized in the process: a second
    # or more on a loaded machine) held the agent thread up, within 1.5 s
    # of its upload's arrival.
    [ "$checked" = 0 ] || awk -v s="$start" -v p="$prev_start" -v r="$prev_recv" 'BEGIN {
        d = (s - p) / 1e9; late = s / 1e9 - r; exit !(d >= 0.45 && (d <= 1.55 || late <= 1.55)) }' ||
        fail "window at ${t} s starts $(awk -v s="$start" -v p="$prev_start" 'BEGIN { print (s - p) / 1e9 }') s after the previous one"
    prev=$inuse prev_start=$start prev_recv=$recv prev_t=$t
    checked=$((checked + 1))
done <sum
# Each window followed the previous one in time (above); 3 show the growth.
[ "$checked" -ge 3 ] || fail "$checked heap windows in 5 s with 1 s periods"
pass "$checked heap windows: allocations per window, in use growing"
