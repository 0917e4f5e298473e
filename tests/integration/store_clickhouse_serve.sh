#!/bin/bash
# store_clickhouse_serve.sh — a fleet: two `hotspur serve` instances on one
# real ClickHouse (clickhouse_lib.sh), over HTTP with curl:
#   - they are interchangeable: an upload through one is a duplicate through
#     the other, and both answer every query with the same bytes;
#   - ClickHouse stopped: ingest answers 503 with a message, queries 503,
#     both servers stay up; ClickHouse restarted: everything works again,
#     no serve restart;
#   - ClickHouse frozen (SIGSTOP, so connections hang): ingest and queries
#     answer 503 within the URL's timeout; thawed, a retried upload is
#     stored once;
#   - kill -9 of one serve instance during upload load on both: every
#     acknowledged id is stored, none twice, and retrying what was in flight
#     through the surviving instance stores each id once.
# Skips (exit 0, "SKIP") only when no ClickHouse server is installed.
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/server_lib.sh"
. "$SRC/tests/integration/clickhouse_lib.sh"
# Nothing here runs under the agent, and curl hangs with the ASan runtime
# that lib.sh preloads in sanitized builds (hotspur links it itself).
unset LD_PRELOAD

if ! ch_available; then
    echo "SKIP: $(basename "$0"): clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
trap 'server_stop_all; kill -CONT "$(ch_pid a)" 2>/dev/null; ch_stop_all' EXIT

json() { ch_run python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
body() { cat "$1" 2>/dev/null | head -c 300; }

ch_ports 3
read -r H T I <<<"$CH_PORTS"
ch_config a "$H" "$T" "$I"
ch_start a
ch_wait a "$H"
STORE="clickhouse://127.0.0.1:$H/hs_serve?timeout=3&connect_timeout=1"

"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
now=$(date +%s)
# compute's total in one profile: the folded file's compute stacks.
compute_one=$(awk '/compute/ { s += $NF } END { print s }' "$SRC/tests/data/stacks.folded")

server_start --store "$STORE"
A=$SERVER_URL A_PID=$SERVER_PID
server_start --store "$STORE"
B=$SERVER_URL B_PID=$SERVER_PID

upload() { # OUT URL ID -> HTTP status
    server_curl "$1" --data-binary @prof.pb.gz "$2/api/v1/ingest?service=fleet&type=cpu&version=1&label=zone=eu&id=$3&from=$now&until=$((now + 10))"
}
compute_total() { # URL -> compute's total over every fleet profile
    server_curl fn.json "$1/api/v1/functions?service=fleet&type=cpu&from=0" >/dev/null
    json fn.json '[f["total"] for f in d["functions"] if f["name"]=="compute"][0]'
}

# ---- interchangeable ----
st=$(upload up.json "$A" p1)
[ "$st" = 200 ] && [ "$(json up.json 'd["stored"]')" = 1 ] || fail "upload through A: $st $(body up.json)"
st=$(upload up.json "$B" p1)
[ "$st" = 200 ] && [ "$(json up.json 'd.get("duplicate")')" = True ] || fail "the same id through B is not a duplicate: $st $(body up.json)"
st=$(upload up.json "$B" p2)
[ "$st" = 200 ] || fail "upload through B: $st $(body up.json)"
for q in "profiles?service=fleet&type=cpu&from=0" "flamegraph?service=fleet&type=cpu&from=0" \
    "functions?service=fleet&type=cpu&from=0" "labels?service=fleet&type=cpu&from=0" \
    "series?service=fleet&type=cpu&from=$((now - 60))&until=$((now + 60))&step=60"; do
    sa=$(server_curl a.out "$A/api/v1/$q")
    sb=$(server_curl b.out "$B/api/v1/$q")
    [ "$sa" = 200 ] && [ "$sb" = 200 ] || fail "/api/v1/$q: A $sa $(body a.out), B $sb $(body b.out)"
    cmp -s a.out b.out || fail "/api/v1/$q differs between the two servers: $(body a.out) vs $(body b.out)"
done
[ "$(json a.out 'len(d["points"])')" -ge 1 ] || fail "no series points: $(body a.out)"
[ "$(compute_total "$A")" = $((2 * compute_one)) ] || fail "compute over 2 profiles: $(compute_total "$A"), expected $((2 * compute_one))"
pass "two serve instances on one ClickHouse: one id stored once, identical answers"

# ---- ClickHouse stopped, then back ----
ch_stop a
t0=$(date +%s.%N)
st=$(upload down.json "$A" p3)
[ "$st" = 503 ] || fail "ingest with ClickHouse down: HTTP $st $(body down.json), expected 503"
grep -q '^{"error":".*unavailable' down.json || fail "503 without a message: $(body down.json)"
st=$(server_curl q.json "$B/api/v1/flamegraph?service=fleet&type=cpu&from=0")
[ "$st" = 503 ] || fail "query with ClickHouse down: HTTP $st $(body q.json), expected 503"
grep -q '^{"error":' q.json || fail "query 503 without a message: $(body q.json)"
server_alive "$A_PID" && server_alive "$B_PID" || fail "a serve instance died with ClickHouse down"
echo "ClickHouse down: 503s in $(echo "$(date +%s.%N) - $t0" | bc) s: $(body down.json)"
ch_start a
ch_wait a "$H"
st=$(upload up.json "$A" p3)
[ "$st" = 200 ] && [ "$(json up.json 'd["stored"]')" = 1 ] || fail "ingest after ClickHouse came back: $st $(body up.json)"
[ "$(compute_total "$B")" = $((3 * compute_one)) ] || fail "after the restart compute is $(compute_total "$B"), expected $((3 * compute_one))"
pass "ClickHouse stopped: 503 with a message, servers up; restarted: ingest and queries work, no serve restart"

# ---- ClickHouse frozen: timeouts ----
kill -STOP "$(ch_pid a)"
t0=$(date +%s)
st=$(upload slow.json "$A" p4)
st2=$(server_curl q.json "$B/api/v1/functions?service=fleet&type=cpu&from=0")
took=$(($(date +%s) - t0))
kill -CONT "$(ch_pid a)"
[ "$st" = 503 ] || fail "ingest with ClickHouse frozen: HTTP $st $(body slow.json), expected 503"
[ "$st2" = 503 ] || fail "query with ClickHouse frozen: HTTP $st2 $(body q.json), expected 503"
grep -qi 'timeout\|timed out' slow.json || fail "the frozen ingest's 503 does not say it timed out: $(body slow.json)"
[ "$took" -le 14 ] || fail "two requests with timeout=3 took $took s"
server_alive "$A_PID" && server_alive "$B_PID" || fail "a serve instance died with ClickHouse frozen"
st=$(upload up.json "$B" p4)
[ "$st" = 200 ] || fail "retry after the freeze: $st $(body up.json)"
[ "$(compute_total "$A")" = $((4 * compute_one)) ] || fail "after the freeze compute is $(compute_total "$A"), expected $((4 * compute_one))"
pass "ClickHouse frozen: 503 after the timeout ($took s for an upload and a query); thawed, the retry is stored once"

# ---- kill -9 of one instance under load ----
# 4 uploaders (2 per instance), at most 200 uploads each with unique ids;
# A is killed at a random moment; A's uploaders stop at their first
# failure, B's run on.
uploader() { # N URL
    local n=$1 url=$2 i st
    for ((i = 1; i <= 200; i++)); do
        st=$(ch_run curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary @prof.pb.gz \
            "$url/api/v1/ingest?service=kill&type=cpu&id=u$n-$i&from=$now" || true)
        echo "u$n-$i $st" >>"up.$n.log"
        [ "$st" = 200 ] || break
    done
}
rm -f up.*.log
pids=()
for n in 1 2; do
    uploader $n "$A" &
    pids+=($!)
done
for n in 3 4; do
    uploader $n "$B" &
    pids+=($!)
done
sleep "$((RANDOM % 15 + 10))e-1"
kill -KILL "$A_PID"
for p in "${pids[@]}"; do wait "$p" || true; done
wait "$A_PID" 2>/dev/null || true
SERVER_PIDS=("$B_PID")
cat up.*.log >all.log
ok=$(awk '$2 == 200' all.log | wc -l)
inflight=$(awk '$2 != 200' all.log | wc -l)
[ "$ok" -gt 0 ] || fail "no upload got a 2xx before the kill: $(head -3 all.log)"
list_ids() { # OUT
    server_curl list.json "$B/api/v1/profiles?service=kill&type=cpu&from=0&limit=100000" >/dev/null
    json list.json '"\n".join(p["id"] for p in d["profiles"])' | sort >"$1"
}
list_ids stored.ids
awk '$2 == 200 { print $1 }' all.log | sort >acked.ids
[ -z "$(uniq -d stored.ids)" ] || fail "ids stored twice: $(uniq -d stored.ids | head)"
missing=$(comm -23 acked.ids stored.ids | head -5)
[ -z "$missing" ] || fail "acknowledged but lost after kill -9: $missing"
for round in 1 2; do
    awk '$2 != 200 { print $1 }' all.log | while read -r id; do
        st=$(server_curl /dev/null --data-binary @prof.pb.gz "$B/api/v1/ingest?service=kill&type=cpu&id=$id&from=$now")
        [ "$st" = 200 ] || fail "retry of $id through B: HTTP $st"
    done
done
list_ids stored2.ids
awk '{ print $1 }' all.log | sort -u >attempted.ids
[ -z "$(uniq -d stored2.ids)" ] || fail "ids stored twice after retries: $(uniq -d stored2.ids | head)"
cmp -s stored2.ids attempted.ids || fail "after retries ClickHouse holds $(wc -l <stored2.ids) ids, $(wc -l <attempted.ids) were uploaded"
n=$(wc -l <attempted.ids)
server_curl fn.json "$B/api/v1/functions?service=kill&type=cpu&from=0" >/dev/null
got=$(json fn.json '[f["total"] for f in d["functions"] if f["name"]=="compute"][0]')
[ "$got" = $((n * compute_one)) ] || fail "compute over $n profiles: $got, expected $((n * compute_one)) (a profile counted twice?)"
pass "kill -9 of one instance after $ok acknowledged uploads ($inflight in flight): all kept, each id once after retries"
