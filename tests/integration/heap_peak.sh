# heap_peak.sh — the peak companion: heap_peak climbs to a known in-use peak
# (144 MiB: site_ramp_a 96, site_ramp_b 48), frees most of it, then
# site_after allocates 60 MiB (below the peak). The peak profile must hold
# the peak within 2% in exact mode (8% sampled, with 2 MiB blocks: ~1.6%
# standard deviation), with site_ramp_a on top and each site near what it
# held; the final in-use profile must have site_after on top instead.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

check_peak() { # LABEL BLOCK_KIB TOLERANCE_PCT RECORD_ARGS...
    local label=$1 kib=$2 tol=$3
    shift 3
    "$PROGS/heap_peak" "$kib" > "$label.truth"
    "$HOTSPUR" record --heap "$@" -o "$label.pb.gz" -- "$PROGS/heap_peak" "$kib" > "$label.out" 2> "$label.err" ||
        fail "$label: record exited $?: $(cat "$label.err")"
    cmp -s "$label.truth" "$label.out" || fail "$label: output differs from a plain run"
    [ -s "$label.peak.pb.gz" ] || fail "$label: no peak file: $(ls)"
    local want got top
    want=$(awk '$1 == "peak_bytes" { print $2 }' "$label.truth")
    got=$(total_value "$label.peak.pb.gz" inuse_space)
    echo "$label: peak in the profile $got, true peak $want ($(pct "$got" "$want"))"
    within "$got" "$want" "$tol" || fail "$label: peak not within $tol% of the truth"
    for site in site_ramp_a site_ramp_b; do
        want=$(awk -v s=$site '$1 == "peak" && $2 == s { print $3 }' "$label.truth")
        got=$(site_values "$label.peak.pb.gz" inuse_space | value_of $site)
        within "$got" "$want" "$((tol * 2))" || fail "$label: $site held $got at the peak, want $want"
    done
    top=$("$HOTSPUR" convert --to collapsed --sample-index inuse_space "$label.peak.pb.gz" |
        collapsed_sites | sort -k2,2nr | head -n 1 | cut -d' ' -f1)
    [ "$top" = site_ramp_a ] || fail "$label: the peak's top site is $top, not site_ramp_a"
    top=$("$HOTSPUR" top -n 1 "$label.pb.gz" | tail -n 1 | awk '{ print $NF }')
    [ "$top" = site_after ] || fail "$label: the final in-use top is $top, not site_after"
    # the peak file has the in-use types and go tool pprof reads it
    go tool pprof -raw "$label.peak.pb.gz" 2>/dev/null | grep -Eq '^inuse_objects/count inuse_space/bytes' ||
        fail "$label: the peak file's sample types are not inuse_objects, inuse_space"
}

check_peak exact 1024 2 --heap-rate 1
check_peak sampled 2048 8
pass "peak: within tolerance of the true peak, site_ramp_a on top"
