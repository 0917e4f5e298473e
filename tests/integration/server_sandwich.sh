#!/usr/bin/env bash
# server_sandwich.sh — /api/v1/sandwich answers the callers and callees
# trees of one function (the web UI's Callers / callees tab) from the
# server's call tree (analysis/sandwich.c), not from the browser's copy of
# the flame graph. On a profile whose answer is known by construction:
# callers of c are b 25 (< main), a 10 (< main), main 7; callees d 30 and
# the recursive c 7 (< e 7), counted once at the outermost c; total 42,
# self 5. Its first caller level equals /api/v1/peek's callers (report/
# peek.c). A compare (base_* parameters) carries base values: a caller only
# in the base (x) is there with total 0. Unknown function: 404; none: 400.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

printf 'main;a;c;d 10\nmain;b;c;d 20\nmain;b;c 5\nmain;c;c;e 7\nmain;a 3\n' >new.txt
printf 'main;a;c;d 4\nmain;x;c 6\nmain;a 1\n' >base.txt
"$HOTSPUR" convert --to pprof -o new.pb.gz new.txt || fail "convert"
"$HOTSPUR" convert --to pprof -o base.pb.gz base.txt || fail "convert"
server_start
now=$(date +%s)
b0=$((now - 600)) b1=$((now - 590)) n0=$((now - 60)) n1=$((now - 50))
st=$(server_curl up.json --data-binary @base.pb.gz "$SERVER_URL/api/v1/ingest?service=p&type=samples&id=w0&from=$b0&until=$b1")
[ "$st" = 200 ] || fail "upload base: $st $(cat up.json)"
st=$(server_curl up.json --data-binary @new.pb.gz "$SERVER_URL/api/v1/ingest?service=p&type=samples&id=w1&from=$n0&until=$n1")
[ "$st" = 200 ] || fail "upload new: $st $(cat up.json)"
q="service=p&type=samples&from=$((n0 - 5))&until=$((n1 + 5))"
base="base_from=$((b0 - 5))&base_until=$((b1 + 5))"

# The answer as nested (name, total, self[, base, base_self], [children])
# tuples, children sorted by name.
tree() { # JSON
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def nested(t):
    names, nodes = t["names"], t["nodes"]
    kids = [[] for _ in nodes]
    for i, r in enumerate(nodes[1:], 1):
        kids[r[0]].append(i)
    def go(i):
        r = nodes[i]
        return (names[r[1]], *r[2:], sorted(go(k) for k in kids[i]))
    return go(0)
sw = d["sandwich"]
print(json.dumps([d["function"], sw, d["callers"]["count"], nested(d["callers"]),
                  d["callees"]["count"], nested(d["callees"])]))
PY
}

st=$(server_curl sw.json "$SERVER_URL/api/v1/sandwich?$q&function=c")
[ "$st" = 200 ] || fail "sandwich: $st $(cat sw.json)"
got=$(tree sw.json) || fail "parse: $(cat sw.json)"
want='["c", {"total": 42, "self": 5}, 3, ["c", 42, 0, [["a", 10, 0, [["main", 10, 10, []]]], ["b", 25, 0, [["main", 25, 25, []]]], ["main", 7, 7, []]]], 2, ["c", 42, 5, [["c", 7, 0, [["e", 7, 7, []]]], ["d", 30, 30, []]]]]'
[ "$got" = "$want" ] || fail "sandwich of c:
 got  $got
 want $want"

# the first caller level is peek's callers
st=$(server_curl pk.json "$SERVER_URL/api/v1/peek?$q&function=c")
[ "$st" = 200 ] || fail "peek: $st $(cat pk.json)"
python3 - sw.json pk.json <<'PY' || fail "callers differ from /api/v1/peek"
import json, sys
sw, pk = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = sw["callers"]
first = sorted((t["names"][r[1]], r[2]) for r in t["nodes"][1:] if r[0] == 0)
[n] = pk["nodes"]
peek = sorted((e["name"], e["total"]) for e in n["callers"])
if first != peek or n["total"] != sw["sandwich"]["total"] or n["self"] != sw["sandwich"]["self"]:
    sys.exit(f"sandwich {first} {sw['sandwich']}\npeek {peek} {n['total']} {n['self']}")
PY

# a filter applies before the sandwich
st=$(server_curl swf.json "$SERVER_URL/api/v1/sandwich?$q&function=c&focus=%5Eb%24")
[ "$st" = 200 ] || fail "sandwich focus: $st $(cat swf.json)"
gotf=$(tree swf.json)
wantf='["c", {"total": 25, "self": 5}, 1, ["c", 25, 0, [["b", 25, 0, [["main", 25, 25, []]]]]], 1, ["c", 25, 5, [["d", 20, 20, []]]]]'
[ "$gotf" = "$wantf" ] || fail "sandwich of c, focus=^b\$:
 got  $gotf
 want $wantf"

# a compare: base values ride along; x, a caller only in the base, stays
st=$(server_curl swd.json "$SERVER_URL/api/v1/sandwich?$q&$base&function=c")
[ "$st" = 200 ] || fail "sandwich compare: $st $(cat swd.json)"
gotd=$(tree swd.json)
wantd='["c", {"total": 42, "self": 5, "base_total": 10, "base_self": 6}, 4, ["c", 42, 0, 10, 0, [["a", 10, 0, 4, 0, [["main", 10, 10, 4, 4, []]]], ["b", 25, 0, 0, 0, [["main", 25, 25, 0, 0, []]]], ["main", 7, 7, 0, 0, []], ["x", 0, 0, 6, 0, [["main", 0, 0, 6, 6, []]]]]], 2, ["c", 42, 5, 10, 6, [["c", 7, 0, 0, 0, [["e", 7, 7, 0, 0, []]]], ["d", 30, 30, 4, 4, []]]]]'
[ "$gotd" = "$wantd" ] || fail "sandwich compare of c:
 got  $gotd
 want $wantd"

st=$(server_curl nf.json "$SERVER_URL/api/v1/sandwich?$q&function=nosuch")
[ "$st" = 404 ] || fail "unknown function: $st $(cat nf.json)"
st=$(server_curl nf.json "$SERVER_URL/api/v1/sandwich?$q")
[ "$st" = 400 ] || fail "no function: $st $(cat nf.json)"
pass "/api/v1/sandwich of c by construction (callers b 25, a 10, main 7; callees d 30, c 7 > e 7), callers = peek's, focus, compare with a caller only in the base, 404, 400"
