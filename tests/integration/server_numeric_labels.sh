#!/usr/bin/env bash
# server_numeric_labels.sh — numeric labels are stored with their units, so
# a tag filter on a query URL means what it means on the file: on a
# generated heap profile whose samples carry `bytes` (unit bytes), `tid`
# (no unit) and `thread_name`, each tagfocus/tagignore (a value, a range,
# a unit range like bytes=1kb:) gives /api/v1/functions the same matched
# total as `hotspur top` on the file, and a known value by construction.
# That is with `serve --drop-labels ''` (keep every label). By default the
# server does not store tid (each thread's stacks would be records of their
# own: docs/server.md has the cost): a tag filter on tid is then a 400 that
# says so, never a silent 0, and bytes still works.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

# A pprof written by hand (the wire format), samples:
# (stack leaf first, bytes per object, objects, tid)
python3 - >h.pb.gz <<'PY'
import gzip, sys
def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        if n: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def vint(num, v): return varint(num << 3) + varint(v)
def ld(num, b): return varint(num << 3 | 2) + varint(len(b)) + b
def packed(num, vs): return ld(num, b"".join(varint(v) for v in vs))
strs = [""]
def s(x):
    if x not in strs: strs.append(x)
    return strs.index(x)
prof = bytearray()
prof += ld(1, vint(1, s("space")) + vint(2, s("bytes")))
prof += ld(1, vint(1, s("objects")) + vint(2, s("count")))
funcs = ["main", "alloc_small", "alloc_big", "worker"]
for i, f in enumerate(funcs, 1):
    prof += ld(5, vint(1, i) + vint(2, s(f)) + vint(3, s(f)) + vint(4, s("a.c")))
    prof += ld(4, vint(1, i) + vint(3, 0x1000 * i) + ld(4, vint(1, i) + vint(2, 10 * i)))
samples = [([2, 4, 1], 64, 10, 101), ([2, 1], 512, 3, 102), ([3, 4, 1], 4096, 2, 101),
           ([3, 1], 2048, 5, 103), ([2, 4, 1], 1024, 7, 102)]
for st, size, n, tid in samples:
    lab = ld(3, vint(1, s("bytes")) + vint(3, size) + vint(4, s("bytes")))
    lab += ld(3, vint(1, s("tid")) + vint(3, tid))
    lab += ld(3, vint(1, s("thread_name")) + vint(2, s("w")))
    prof += ld(2, packed(1, st) + packed(2, [size * n, n]) + lab)
prof += ld(11, vint(1, s("space")) + vint(2, s("bytes")))
prof += vint(12, 524288)
for x in strs: prof += ld(6, x.encode())
prof += vint(9, 1700000000 * 10**9)
sys.stdout.buffer.write(gzip.compress(bytes(prof)))
PY
[ -s h.pb.gz ] || fail "generate the profile"

now=$(date +%s)
upload() {
    st=$(server_curl up.json --data-binary @h.pb.gz "$SERVER_URL/api/v1/ingest?service=h&type=heap&id=w1&from=$((now - 60))&until=$((now - 50))")
    [ "$st" = 200 ] || fail "upload: $st $(cat up.json)"
}
q="service=h&type=heap&from=now-1h&sample_index=space"
matched() { # KEY=FILTER -> the server's matched bytes
    st=$(server_curl f.json "$SERVER_URL/api/v1/functions?$q&$1")
    [ "$st" = 200 ] || fail "functions?$1: $st $(cat f.json)"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["matched"])' f.json
}
cli() { # --tagfocus|--tagignore FILTER -> `hotspur top`'s shown total on the file
    "$HOTSPUR" top --sample-index space --unit B "$1" "$2" h.pb.gz >top.txt 2>top.err || fail "top $*: $(cat top.err)"
    sed -n 's/^Showing nodes accounting for \([0-9]*\)B.*/\1/p' top.txt
}

server_start --drop-labels ''
upload
# filter, its URL form, the value by construction (bytes per object x objects)
checks=(
    "--tagfocus tid=101 tagfocus=tid%3D101 $((64 * 10 + 4096 * 2))"
    "--tagfocus tid=101:102 tagfocus=tid%3D101%3A102 $((64 * 10 + 512 * 3 + 4096 * 2 + 1024 * 7))"
    "--tagignore tid=103 tagignore=tid%3D103 $((64 * 10 + 512 * 3 + 4096 * 2 + 1024 * 7))"
    "--tagfocus bytes=1kb: tagfocus=bytes%3D1kb%3A $((4096 * 2 + 2048 * 5 + 1024 * 7))"
    "--tagfocus bytes=:512 tagfocus=bytes%3D%3A512 $((64 * 10 + 512 * 3))"
    "--tagfocus bytes=2kb tagfocus=bytes%3D2kb $((2048 * 5))"
)
for c in "${checks[@]}"; do
    read -r flag filter param want <<<"$c"
    got_cli=$(cli "$flag" "$filter")
    got_api=$(matched "$param")
    [ "$got_cli" = "$want" ] || fail "top $flag $filter: $got_cli, want $want"
    [ "$got_api" = "$want" ] || fail "/api/v1/functions?$param: $got_api, want $want (the CLI says $got_cli)"
done
server_stop

# the default: tid is not stored; filtering on it says so
server_start
upload
for p in tagfocus=tid%3D101 tagignore=tid%3D103; do
    st=$(server_curl t.json "$SERVER_URL/api/v1/functions?$q&$p")
    [ "$st" = 400 ] && grep -q "does not store the label 'tid'" t.json || fail "default server, $p: $st $(cat t.json)"
done
got=$(matched "tagfocus=bytes%3D2kb")
[ "$got" = $((2048 * 5)) ] || fail "default server: tagfocus=bytes=2kb matched $got"
got=$(matched "tagfocus=w")
[ "$got" = $((64 * 10 + 512 * 3 + 4096 * 2 + 2048 * 5 + 1024 * 7)) ] || fail "default server: tagfocus=w matched $got"
st=$(server_curl t.json "$SERVER_URL/api/v1/functions?$q&tagfocus=tid%3D101")
pass "--drop-labels '': tid and bytes (with its unit) filters on the URL = hotspur top on the file (${#checks[@]} filters); default: tid=... is a 400 ($(cat t.json)), bytes and value filters work"
