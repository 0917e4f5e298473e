#!/bin/bash
# demo_story.sh — `make demo`'s story, shortened (a few seconds per version),
# with its findings asserted through the query API of the hotspur serve it
# started:
#  - version 1: the request handler has most of the CPU, and compiling
#    regular expressions (regcomp, regfree) most of the handler's;
#  - version 2 serves several times more requests per second than 1 (as the
#    client simulator measured them);
#  - version 4 allocates far less per second of profile than 3, and the
#    allocator's share of CPU is lower in 4 than in 3;
#  - every version ran as two instances whose profiles carry zone=a and
#    zone=b, each with its share of the work (the client alternates).
source "$(dirname "$0")/lib.sh"
build=$(cd "$(dirname "$HOTSPUR")/.." && pwd)
[ -x "$build/examples/shakesapp_server" ] || fail "examples not built in $build/examples"
[ -d /usr/share/games/fortunes ] || fail "the corpus (Debian package fortunes) is not installed"
needs_malloc_interposition

server_pid=""
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

SECONDS_PER_VERSION=8 HOTSPUR_PERIOD=4s HOTSPUR_DURATION=4s KEEP=1 DEMO_DIR="$TMP/demo" \
    bash "$SRC/examples/shakesapp/demo.sh" "$build" > demo.out 2>&1 || { cat demo.out; fail "demo.sh failed"; }
server_pid=$(sed -n 's/^hotspur serve keeps running (pid \([0-9]*\)).*/\1/p' demo.out)
url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' demo.out | head -1)
[ -n "$server_pid" ] && [ -n "$url" ] || { cat demo.out; fail "no server URL/pid in the demo's output"; }

api() { curl -sf "$url/api/v1/$1" || fail "GET /api/v1/$1 failed"; }
range="service=shakesapp&from=now-1h"
# matched/total of a filtered function table, as a fraction
share() { api "functions?$range&$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["matched"]/d["total"] if d["total"] else 0)'; }
ge() { python3 -c "import sys; sys.exit(0 if $1 >= $2 else 1)"; }

handler=$(share "type=cpu&version=1&focus=%5Ehandle_query%24")
regex=$(share "type=cpu&version=1&focus=regcomp%24%7Cregfree%24")
search=$(share "type=cpu&version=1&focus=regexec%24")
echo "version 1: handler $handler of CPU, compiling (regcomp+regfree) $regex, matching (regexec) $search"
ge "$handler" 0.6 || fail "version 1's handler has $handler of the CPU, expected most"
ge "$regex" "0.5 * $handler" || fail "compiling regexes is $regex of CPU, not most of the handler's $handler"
ge "$regex" "1.5 * $search" || fail "compiling ($regex) does not dominate matching ($search)"
pass "version 1: the handler has most of the CPU, compiling regexes most of that"

rate() { sed -n "s/^version $1: \([0-9.]*\) reqs \/ sec$/\1/p" demo.out; }
r1=$(rate 1) r2=$(rate 2)
echo "rates: version 1 $r1, version 2 $r2 reqs/s"
[ -n "$r1" ] && [ -n "$r2" ] || fail "no request rates in the demo's output"
ge "$r2" "2 * $r1" || fail "version 2 ($r2 reqs/s) is not several times faster than 1 ($r1)"
pass "version 2 serves more than twice the requests per second of version 1"

# allocated bytes per second of profile: sum of totals / sum of durations
alloc_rate() {
    api "profiles?$range&type=heap&version=$1&sample_index=alloc_space" | python3 -c '
import json, sys
ps = json.load(sys.stdin)["profiles"]
d = sum(p["duration"] for p in ps)
print(sum(p["total"] for p in ps) / d if d else 0)'
}
a3=$(alloc_rate 3) a4=$(alloc_rate 4)
echo "allocated: version 3 $a3 B/s, version 4 $a4 B/s"
ge "$a3" 1e6 || fail "version 3 allocates only $a3 B/s"
ge "$a3" "10 * $a4" || fail "version 4 ($a4 B/s) does not allocate far less than version 3 ($a3 B/s)"
pass "version 4 allocates far less per second than version 3"

alloc_re='%5E(__libc_)%3F(malloc%7Cfree%7Ccalloc%7Crealloc%7Ccfree)%24%7C%5E_int_(malloc%7Cfree%7Crealloc)%24%7C%5E(malloc_consolidate%7Cunlink_chunk%7Csysmalloc)%24'
s3=$(share "type=cpu&version=3&focus=$alloc_re") s4=$(share "type=cpu&version=4&focus=$alloc_re")
echo "allocator share of CPU: version 3 $s3, version 4 $s4"
ge "$s3" 0.05 || fail "the allocator's share in version 3 is only $s3"
ge "$s3" "1.5 * $s4" || fail "the allocator's share did not drop from version 3 ($s3) to 4 ($s4)"
pass "the allocator's share of CPU is lower in version 4 than in 3"

# Zones: the two instances of each version, labelled, each with about half
# of the version's CPU (the client sends its queries to each in turn).
zones=$(api "labels?service=shakesapp&type=cpu&from=now-1h" | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["labels"].get("zone", []))))' 2>&1)
[ "$zones" = "a b" ] || fail "the demo's zone labels: '$zones', want 'a b': $(api "labels?service=shakesapp&type=cpu&from=now-1h")"
for v in 1 2 3 4; do
    za=$(api "functions?$range&type=cpu&version=$v&label=zone=a&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
    zb=$(api "functions?$range&type=cpu&version=$v&label=zone=b&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
    echo "version $v: zone a $za ns of CPU, zone b $zb ns"
    ge "$za" "$zb / 3" && ge "$zb" "$za / 3" || fail "version $v: zones a ($za) and b ($zb) did not share the work"
done
grep -q '^\$ .*diff .*label=zone=a.*label=zone=b' demo.out || fail "the demo does not print the zone diff"
pass "every version ran in zones a and b (labels), each instance with a share of the work"

# One slow request of version 1 was sent with a traceparent: its span's
# samples (span_id label, set through the agent's hotspur_set_label) are
# there, and they are the request handler's.
span=00f067aa0ba902b7
api "functions?$range&type=cpu&version=1&tagfocus=span_id=$span&limit=1" >span.json
api "functions?$range&type=cpu&version=1&tagfocus=span_id=$span&focus=%5Ehandle_query%24&limit=1" >span_h.json
read -r in_span in_handler all <<<"$(python3 -c 'import json,sys; a=json.load(open("span.json")); b=json.load(open("span_h.json")); print(a["matched"], b["matched"], a["unfiltered"])')"
echo "the slow request's span: $in_span ns of CPU ($in_handler in handle_query) of version 1's $all"
ge "$in_span" 100000000 || fail "the slow request's span has $in_span ns of CPU samples, expected at least 0.1 s"
ge "$in_handler" "0.9 * $in_span" || fail "the span's samples are not the handler's: $in_handler of $in_span"
ge "$all" "2 * $in_span" || fail "the span filter kept most of version 1 ($in_span of $all)"
grep -q "^\$ .*top .*tagfocus=span_id=$span" demo.out || fail "the demo does not print the span's top"
pass "one slow request's span: its samples are labelled, filtered and the handler's"

# The web UI views the tutorial shows, from this server (screenshots in $TMP;
# docs/images/tutorial-*.png come from such a run).
# The links are the ones the demo printed, single-quoted so a paste into
# bash does not background at the first &; so are the commands it shows.
links=$(grep -o "'http://[^']*/?[^']*'" demo.out | tr -d "'")
[ "$(echo "$links" | wc -l)" = 5 ] || fail "the demo does not print five quoted browser links: $(sed -n '/in the browser/,$p' demo.out)"
bad=$(grep '^\$ ' demo.out | sed "s/'[^']*'//g" | grep '[&?]' || true)
[ -z "$bad" ] || fail "commands printed with unquoted URLs: $bad"
command -v node >/dev/null || fail "node is not installed"
node "$SRC/tests/integration/demo_screens.js" "$TMP" \
    "tutorial-v1-functions=$(echo "$links" | sed -n 1p)" \
    "tutorial-cpu-2-vs-1=$(echo "$links" | sed -n 2p)" \
    "tutorial-alloc-4-vs-3=$(echo "$links" | sed -n 3p)" \
    "tutorial-slow-span=$(echo "$links" | sed -n 4p)" \
    "tutorial-zones=$(echo "$links" | sed -n 5p)" > screens.out ||
    { cat screens.out; fail "the web UI's views of the demo did not load"; }
cat screens.out
grep -q '^screenshot tutorial-alloc-4-vs-3.png (ready, agg avg)' screens.out ||
    fail "the demo's 'per 10 s profile (average)' link does not open an average"
pass "the web UI shows the demo's views from its quoted links, the allocations per profile (screenshots in $TMP)"

# the Source tab works in the demo: serve has --source-path
st=$(curl -s -o src.json -w '%{http_code}' "$url/api/v1/source?service=shakesapp&type=cpu&version=1&from=now-1h&function=handle_query")
[ "$st" = 200 ] && python3 -c 'import json,sys; d=json.load(open("src.json")); fs=d.get("files",[d]); sys.exit(0 if any(f.get("found") for f in fs) else 1)' ||
    fail "no source of handle_query in the demo (HTTP $st): $(head -c 300 src.json)"
pass "the demo's server shows source (--source-path)"
