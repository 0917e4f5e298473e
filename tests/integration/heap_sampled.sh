# heap_sampled.sh — sampled mode at the default rate (512 KiB): heap_sites
# allocates ~880 MB at four sites (24 B mallocs, 4000 B callocs, 2 MiB
# mallocs, realloc chains 16 B..64 KiB) and keeps ~243 MB. The unbiased
# estimates must give the total allocated within 10%, each site's share of
# it within 5 points, the total in use at exit within 10%, exactly nothing
# in use at a site that freed everything, and the 24-byte site's object
# count within 20%. (Standard deviations by construction: ~1.5% for the
# total allocated, <= 1.1 points for a share, ~2% for the in-use total,
# ~5% for the 24 B site's objects: the tolerances are >= 4 sigma.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

"$PROGS/heap_sites" sampled > truth.txt
"$HOTSPUR" record --heap -o sampled.pb.gz -- "$PROGS/heap_sites" sampled > rec.out 2> rec.err ||
    fail "record exited $?: $(cat rec.err)"
cmp -s truth.txt rec.out || fail "output under record differs from a plain run"
go tool pprof -raw sampled.pb.gz 2>/dev/null | grep -q '^Period: 524288$' || fail "period is not 524288"

alloc_truth=$(awk '$1 == "total" { print $3 }' truth.txt)
inuse_truth=$(awk '$1 == "total" { print $5 }' truth.txt)
alloc_got=$(total_value sampled.pb.gz alloc_space)
inuse_got=$(total_value sampled.pb.gz inuse_space)
echo "allocated: profile $alloc_got, truth $alloc_truth ($(pct "$alloc_got" "$alloc_truth"))"
echo "in use at exit: profile $inuse_got, truth $inuse_truth ($(pct "$inuse_got" "$inuse_truth"))"
within "$alloc_got" "$alloc_truth" 10 || fail "total allocated is not within 10% of the truth"
within "$inuse_got" "$inuse_truth" 10 || fail "total in use is not within 10% of the truth"

got=$(site_values sampled.pb.gz alloc_space)
while read -r site bytes; do
    g=$(value_of "$site" <<< "$got")
    awk -v g="$g" -v gt="$alloc_got" -v w="$bytes" -v wt="$alloc_truth" -v s="$site" 'BEGIN {
        a = g * 100 / gt; b = w * 100 / wt; d = a - b; if (d < 0) d = -d
        printf "%-20s share %6.2f%% (truth %6.2f%%)\n", s, a, b; exit !(d <= 5) }' ||
        fail "$site: share not within 5 points of the truth"
done < <(truth_values truth.txt alloc_space)

# Everything site_realloc_chain allocated was freed (or moved by realloc):
# whatever was sampled there must have been subtracted again.
chain=$(site_values sampled.pb.gz inuse_space | value_of site_realloc_chain)
[ "$chain" = 0 ] || fail "site_realloc_chain freed everything but shows $chain bytes in use"

objs=$(site_values sampled.pb.gz alloc_objects | value_of site_small)
want=$(truth_values truth.txt alloc_objects | value_of site_small)
echo "site_small objects: profile $objs, truth $want ($(pct "$objs" "$want"))"
within "$objs" "$want" 20 || fail "site_small's object count is not within 20%"

# hotspur top prints bytes with pprof's units
"$HOTSPUR" top --sample-index alloc_space -n 5 sampled.pb.gz > top.txt
grep -q '^Type: alloc_space' top.txt || fail "top: no 'Type: alloc_space' header: $(head -5 top.txt)"
grep -Eq '^ *[0-9.]+MB +[0-9.]+% .* site_large$' top.txt || fail "top does not print site_large in MB: $(cat top.txt)"
pass "sampled mode: totals and shares within tolerance of the truth"
