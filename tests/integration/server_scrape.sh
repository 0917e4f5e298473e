#!/usr/bin/env bash
# server_scrape.sh — `hotspur serve --scrape`: a Go program serving
# net/http/pprof (tests/programs/pprof_server.go, standard library only,
# built here) is scraped every 3 s for CPU (/debug/pprof/profile, seconds=2
# added), heap and mutex (a 2 s delta: seconds=2 added); its busy function
# shows up in the query API with most of the CPU, its contending one in the
# lock profile, the heap profile is the heap type, the spec's service= and the
# instance label are applied, and a target that refuses connections is
# logged (once) without stopping the others.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
# No agent here: under a SANITIZE build lib.sh preloads ASan's runtime into
# everything, and curl (and node) hang with it; hotspur links it itself.
unset LD_PRELOAD

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# No network: the standard library is all it needs. The build cache is kept
# next to the tests' temporary directories so reruns are quick.
export GOCACHE="$(dirname "$TMP")/.gocache" GOPATH="$TMP/gopath" HOME="$TMP" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
go build -o pprof_server "$SRC/tests/programs/pprof_server.go" || fail "go build failed"
./pprof_server >go.addr 2>go.err &
GO_PID=$!
trap 'kill $GO_PID 2>/dev/null || true; server_stop_all' EXIT
for ((i = 0; i < 100; i++)); do
    [ -s go.addr ] && break
    sleep 0.1
done
addr=$(head -n 1 go.addr)
[ -n "$addr" ] || fail "the Go program did not print its address: $(cat go.err)"
# a port nothing listens on (bound then closed)
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')

server_start --scrape-period 3s \
    --scrape "http://$addr/debug/pprof/profile?service=goscrape&label=zone=test" \
    --scrape "http://$addr/debug/pprof/heap?service=goscrape" \
    --scrape "http://$addr/debug/pprof/mutex?service=goscrape" \
    --scrape "http://127.0.0.1:$dead/debug/pprof/heap"

# wait for two CPU profiles (at most 30 s)
n=0
for ((i = 0; i < 60; i++)); do
    server_curl list.json "$SERVER_URL/api/v1/profiles?service=goscrape&type=cpu&from=0" >/dev/null
    n=$(json list.json 'len(d.get("profiles", []))' 2>/dev/null || echo 0)
    [ "$n" -ge 2 ] && break
    sleep 0.5
done
[ "$n" -ge 2 ] || fail "no CPU profiles scraped in 30 s: $(cat list.json); log: $(cat "$SERVER_LOG")"
dur=$(json list.json 'd["profiles"][0]["duration"]')
python3 -c "import sys; sys.exit(0 if 1.5 <= $dur <= 3.5 else 1)" || fail "CPU profile of $dur s, expected about 2 (seconds=2)"

server_curl fn.json "$SERVER_URL/api/v1/functions?service=goscrape&type=cpu&from=0" >/dev/null
share=$(json fn.json 'round(100*[f["total"] for f in d["functions"] if f["name"]=="main.hotspurGoBusy"][0]/d["total"])' 2>/dev/null) ||
    fail "main.hotspurGoBusy is not among the functions: $(head -c 800 fn.json)"
[ "$share" -ge 50 ] || fail "main.hotspurGoBusy has $share% of the CPU, expected most of it"

server_curl types.json "$SERVER_URL/api/v1/types?service=goscrape&from=0" >/dev/null
types=$(json types.json '",".join(t["name"] for t in d["types"])')
[ "$types" = "cpu,heap,lock" ] || fail "types: $types (expected cpu,heap,lock)"
# the mutex profile is a delta over seconds=2 (added to the URL), not the
# total since the program started
server_curl list.json "$SERVER_URL/api/v1/profiles?service=goscrape&type=lock&from=0" >/dev/null
dur=$(json list.json 'd["profiles"][0]["duration"]')
python3 -c "import sys; sys.exit(0 if 1.5 <= $dur <= 3.5 else 1)" || fail "mutex profile of $dur s, expected a 2 s delta"
server_curl fn.json "$SERVER_URL/api/v1/functions?service=goscrape&type=lock&from=0" >/dev/null
grep -q '"name":"main.hotspurGoContend"' fn.json || fail "lock: main.hotspurGoContend is not listed: $(head -c 600 fn.json)"
server_curl fn.json "$SERVER_URL/api/v1/functions?service=goscrape&type=heap&from=0&sample_index=alloc_space" >/dev/null
grep -q '"name":"main.hotspurGoBusy"' fn.json || fail "heap: main.hotspurGoBusy allocates but is not listed: $(head -c 600 fn.json)"
server_curl lab.json "$SERVER_URL/api/v1/labels?service=goscrape&type=cpu&from=0" >/dev/null
[ "$(json lab.json 'd["labels"].get("instance")')" = "['$addr']" ] &&
    [ "$(json lab.json 'd["labels"].get("zone")')" = "['test']" ] || fail "labels: $(cat lab.json)"
# several rounds have run: the dead target's failure is logged once
[ "$(grep -c "scrape http://127.0.0.1:$dead/debug/pprof/heap: " "$SERVER_LOG")" = 1 ] ||
    fail "the dead target's failure is not logged exactly once: $(cat "$SERVER_LOG")"
server_alive || fail "the server died"
server_stop || fail "hotspur serve exited with $? on SIGTERM"
pass "scraped a Go program: main.hotspurGoBusy has $share% of the CPU; heap, instance and zone labels; a dead target is logged"
