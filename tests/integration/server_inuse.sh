#!/usr/bin/env bash
# server_inuse.sh — in-use heap figures are levels, not flows (issue 28):
# four equal heap windows (each: 40 MB in use, 10 MB allocated) merged by
# `hotspur serve` show 40 MB in use — the average, not 160 MB — and 40 MB
# allocated (the sum), in the JSON answers (agg says "avg" / "sum"), in
# /api/v1/profile and so in `hotspur top URL`. agg=sum given explicitly
# still sums.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

python3 - <<'PY'
import gzip, os, sys
sys.path.insert(0, os.environ["SRC"] + "/tests/integration")
from pbwire import ldelim, vfield, packed
# strings: 0 "", 1 alloc_objects, 2 count, 3 alloc_space, 4 bytes, 5 inuse_objects, 6 inuse_space, 7 main, 8 grow
strs = [b"", b"alloc_objects", b"count", b"alloc_space", b"bytes", b"inuse_objects", b"inuse_space", b"main", b"grow"]
st = b"".join(ldelim(1, vfield(1, t) + vfield(2, u)) for t, u in ((1, 2), (3, 4), (5, 2), (6, 4)))
fns = ldelim(5, vfield(1, 1) + vfield(2, 7)) + ldelim(5, vfield(1, 2) + vfield(2, 8))
locs = ldelim(4, vfield(1, 1) + ldelim(4, vfield(1, 1))) + ldelim(4, vfield(1, 2) + ldelim(4, vfield(1, 2)))
samples = ldelim(2, packed(1, [2, 1]) + packed(2, [100, 10000000, 400, 40000000]))
open("heap.pb.gz", "wb").write(gzip.compress(st + samples + locs + fns + b"".join(ldelim(6, x) for x in strs)))
PY
server_start
now=$(date +%s)
for i in 1 2 3 4; do
    st=$(server_curl up.json --data-binary @heap.pb.gz "$SERVER_URL/api/v1/ingest?service=h&type=heap&id=w$i&from=$((now - 60 * i))&until=$((now - 60 * i + 10))")
    [ "$st" = 200 ] || fail "upload $i: $st $(cat up.json)"
done
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[sys.argv[2]])' "$1" "$2"; }
q="service=h&type=heap&from=now-1h"
server_curl in.json "$SERVER_URL/api/v1/functions?$q&sample_index=inuse_space" >/dev/null
server_curl al.json "$SERVER_URL/api/v1/functions?$q&sample_index=alloc_space" >/dev/null
server_curl ins.json "$SERVER_URL/api/v1/functions?$q&sample_index=inuse_space&agg=sum" >/dev/null
echo "inuse: $(field in.json agg) $(field in.json total) of $(field in.json profiles); alloc: $(field al.json agg) $(field al.json total); inuse agg=sum: $(field ins.json total)"
[ "$(field in.json profiles)" = 4 ] || fail "not 4 profiles: $(cat in.json)"
[ "$(field in.json agg)" = avg ] && [ "$(field in.json total)" = 40000000 ] || fail "in-use of 4 equal windows: $(cat in.json)"
[ "$(field al.json agg)" = sum ] && [ "$(field al.json total)" = 40000000 ] || fail "allocated: $(cat al.json)"
[ "$(field ins.json total)" = 160000000 ] || fail "agg=sum given: $(cat ins.json)"
server_curl fg.json "$SERVER_URL/api/v1/flamegraph?$q&sample_index=inuse_space" >/dev/null
grep -q '"agg":"avg"' fg.json || fail "flamegraph: $(head -c 300 fg.json)"

# The merged pprof, as `hotspur top URL` reads it: in-use averaged, allocations summed.
"$HOTSPUR" convert --to collapsed --sample-index inuse_space "$SERVER_URL/api/v1/profile?$q" >in.txt 2>err ||
    fail "convert URL: $(cat err)"
"$HOTSPUR" convert --to collapsed --sample-index alloc_space "$SERVER_URL/api/v1/profile?$q" >al.txt 2>err ||
    fail "convert URL: $(cat err)"
[ "$(awk '{s += $NF} END {print s}' in.txt)" = 40000000 ] || fail "profile in-use: $(cat in.txt)"
[ "$(awk '{s += $NF} END {print s}' al.txt)" = 40000000 ] || fail "profile alloc: $(cat al.txt)"
"$HOTSPUR" top --sample-index inuse_space "$SERVER_URL/api/v1/profile?$q" >top.txt 2>&1 || fail "top URL: $(cat top.txt)"
grep -q "Total samples = 38.15MB" top.txt || fail "top URL (40 000 000 B = 38.15MB): $(cat top.txt)"
pass "4 equal heap windows: in-use 40 MB (avg, not 160), allocated 40 MB (sum); /api/v1/profile and top URL alike"
