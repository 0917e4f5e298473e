#!/usr/bin/env bash
# server_pyroscope.sh — Pyroscope's own Node.js client (@pyroscope/nodejs
# from npm, tests/node) pushes wall (with CPU time) and heap profiles of
# known JS functions to `hotspur serve`'s /ingest: the server stores them as
# the wall, cpu and heap types of the app, the functions API names the JS
# functions, the client's tags are labels. Then a Go-style multipart upload
# (pyroscope-go's wire format, built with curl) of a folded-free pprof.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
# No agent here: under a SANITIZE build lib.sh preloads ASan's runtime into
# everything, and curl (and node) hang with it; hotspur links it itself.
unset LD_PRELOAD

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

[ -d "$SRC/tests/node/node_modules/@pyroscope/nodejs" ] ||
    fail "@pyroscope/nodejs is not installed: run scripts/install-deps (npm ci in tests/node)"

server_start
DEBUG=pyroscope node "$SRC/tests/node/pyroscope_push.js" "$SERVER_URL" nodeapp >node.out 2>node.err ||
    fail "the node client failed: $(cat node.err)"
grep -q "rejected" node.err && fail "the server rejected an upload: $(cat node.err)"

server_curl types.json "$SERVER_URL/api/v1/types?service=nodeapp&from=0" >/dev/null
types=$(json types.json '",".join(t["name"] for t in d["types"])')
[ "$types" = "cpu,heap,wall" ] || fail "types of nodeapp: $types (expected cpu,heap,wall): $(cat types.json)"

for t in cpu wall; do
    st=$(server_curl fn.$t.json "$SERVER_URL/api/v1/functions?service=nodeapp&type=$t&from=0")
    [ "$st" = 200 ] || fail "functions ($t): $st $(cat fn.$t.json)"
    json fn.$t.json '"\n".join(f["name"] for f in d["functions"])' >names.$t
    for f in hotspurFib hotspurBusyChunk; do
        grep -q ":$f:" names.$t || fail "$f is not among the $t functions: $(head -c 600 fn.$t.json)"
    done
done
# the busy loop is the program's work: a good share of its CPU (the rest is
# node's start, GC, the profiler and the uploads, on a shared machine)
share=$(json fn.cpu.json 'round(100*[f["total"] for f in d["functions"] if ":hotspurBusyChunk:" in f["name"]][0]/d["total"])')
[ "$share" -ge 30 ] || fail "hotspurBusyChunk has $share% of the CPU, expected at least 30%"
server_curl lab.json "$SERVER_URL/api/v1/labels?service=nodeapp&type=wall&from=0" >/dev/null
[ "$(json lab.json 'd["labels"].get("region")')" = "['eu-test']" ] &&
    [ "$(json lab.json 'd["labels"].get("team")')" = "['hotspur']" ] || fail "tags: $(cat lab.json)"
pass "@pyroscope/nodejs: wall+cpu and heap stored as 3 types, JS functions named ($share% in the busy loop), tags are labels"

# pyroscope-go's wire format: multipart/form-data, a "profile" part, no format=
"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
now=$(date +%s)
st=$(server_curl go.json -g -F "profile=@prof.pb.gz;filename=profile.pprof" \
    -F 'sample_type_config={"samples":{"units":"samples"}};filename=sample_type_config.json' \
    "$SERVER_URL/ingest?name=goapp.cpu{env=staging}&from=$now&until=$((now + 10))&spyName=gospy&sampleRate=100&units=samples&aggregationType=sum")
[ "$st" = 200 ] || fail "multipart upload: $st $(cat go.json)"
server_curl fn.json "$SERVER_URL/api/v1/functions?service=goapp&type=samples&from=0" >/dev/null
grep -q '"name":"compute"' fn.json || fail "goapp: $(cat fn.json)"
pass "pyroscope-go's multipart upload (profile + sample_type_config parts)"
server_stop || fail "hotspur serve exited with status $? on SIGTERM"
