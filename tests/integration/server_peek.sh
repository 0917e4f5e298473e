#!/usr/bin/env bash
# server_peek.sh — /api/v1/peek answers a function's callers and callees
# through the same compute step as `hotspur peek` (report/peek.c): on a
# profile whose answer is known by construction (c: flat 5, cum 42; callers
# b 25, a 10, main 7; callees d 30, e 7) and with a focus filter, the JSON
# equals `hotspur peek '^c$'` run on the server's /api/v1/profile with the
# same parameters; an unknown function is a 404, no function a 400.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

printf 'main;a;c;d 10\nmain;b;c;d 20\nmain;b;c 5\nmain;c;c;e 7\nmain;a 3\n' >s.txt
"$HOTSPUR" convert --to pprof -o s.pb.gz s.txt || fail "convert"
server_start
now=$(date +%s)
st=$(server_curl up.json --data-binary @s.pb.gz "$SERVER_URL/api/v1/ingest?service=p&type=samples&id=w1&from=$((now - 60))&until=$((now - 50))")
[ "$st" = 200 ] || fail "upload: $st $(cat up.json)"
q="service=p&type=samples&from=now-1h"

# One peek answer and one `hotspur peek` report, as (name, self, total,
# callers, callees) with the edges as sorted (name, value) pairs.
check() { # FILTER_QUERY CLI_ARGS... ; prints the parsed answer
    local fq=$1
    shift
    st=$(server_curl pk.json "$SERVER_URL/api/v1/peek?$q&function=c$fq")
    [ "$st" = 200 ] || fail "peek$fq: $st $(cat pk.json)"
    "$HOTSPUR" peek "$@" '^c$' "$SERVER_URL/api/v1/profile?$q$fq" >pk.txt 2>err || fail "hotspur peek: $(cat err)"
    python3 - pk.json pk.txt <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
[n] = d["nodes"]
api = (n["name"], n["self"], n["total"],
       sorted((e["name"], e["total"]) for e in n["callers"]),
       sorted((e["name"], e["total"]) for e in n["callees"]))
lines = open(sys.argv[2]).read().split("\n")
seps = [i for i, l in enumerate(lines) if l.startswith("-----")]
body = lines[seps[1] + 1:seps[2]]
edge = re.compile(r"^ {20,}(\d+) +[\d.]+% \|   (\S+)$")
mid = [i for i, l in enumerate(body) if not edge.match(l)]
assert len(mid) == 1, body
m = re.match(r"^ *(\d+) +[\d.]+% +[\d.]+% +(\d+) +[\d.]+% +\| (\S+)$", body[mid[0]])
cli = (m.group(3), int(m.group(1)), int(m.group(2)),
       sorted((edge.match(l).group(2), int(edge.match(l).group(1))) for l in body[:mid[0]]),
       sorted((edge.match(l).group(2), int(edge.match(l).group(1))) for l in body[mid[0] + 1:]))
if api != cli:
    sys.exit(f"/api/v1/peek {api}\nhotspur peek {cli}")
print(api)
PY
}
got=$(check "") || fail "no filter: $got"
want="('c', 5, 42, [('a', 10), ('b', 25), ('main', 7)], [('d', 30), ('e', 7)])"
[ "$got" = "$want" ] || fail "c by construction: $got, want $want"
got2=$(check "&focus=%5Eb%24" --focus '^b$') || fail "focus=^b\$: $got2"
want2="('c', 5, 25, [('b', 25)], [('d', 20)])"
[ "$got2" = "$want2" ] || fail "c with focus=^b\$: $got2, want $want2"
st=$(server_curl nf.json "$SERVER_URL/api/v1/peek?$q&function=nosuch")
[ "$st" = 404 ] || fail "unknown function: $st $(cat nf.json)"
st=$(server_curl nf.json "$SERVER_URL/api/v1/peek?$q")
[ "$st" = 400 ] || fail "no function: $st $(cat nf.json)"
pass "/api/v1/peek = hotspur peek on the same URL: $got; focus=^b\$: $got2; 404, 400"
