#!/usr/bin/env bash
# server_ingest.sh — uploads to a real `hotspur serve` over HTTP with curl:
# our pprof upload (gzipped, plain, idempotent), Pyroscope's folded
# /ingest, refusals (4xx with a JSON message, the server lives on), and
# durability: concurrent uploaders, kill -9 at a random moment, a restart
# on the same data directory: every id that got a 2xx is stored exactly
# once, and retrying the uploads that were in flight adds each once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
# No agent here: under a SANITIZE build lib.sh preloads ASan's runtime into
# everything, and curl (and node) hang with it; hotspur links it itself.
unset LD_PRELOAD

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
gunzip -c prof.pb.gz >prof.pb
now=$(date +%s)

server_start
URL=$SERVER_URL

# ---- our upload API ----
st=$(server_curl up1.json --data-binary @prof.pb.gz "$URL/api/v1/ingest?service=itest&type=cpu&version=1&label=zone=eu&from=$now&until=$((now + 10))")
[ "$st" = 200 ] || fail "gzipped upload: HTTP $st $(cat up1.json)"
[ "$(json up1.json 'd["stored"]')" = 1 ] || fail "gzipped upload not stored: $(cat up1.json)"
id1=$(json up1.json 'd["id"]')
st=$(server_curl up2.json --data-binary @prof.pb.gz "$URL/api/v1/ingest?service=itest&type=cpu&version=1&label=zone=eu&from=$now&until=$((now + 10))")
[ "$st" = 200 ] && [ "$(json up2.json 'd.get("duplicate")')" = True ] && [ "$(json up2.json 'd["id"]')" = "$id1" ] ||
    fail "the same upload again is not a duplicate of $id1: $st $(cat up2.json)"
st=$(server_curl up3.json -H 'Content-Type: application/octet-stream' --data-binary @prof.pb "$URL/api/v1/ingest?service=itest&type=cpu&version=2&label=zone=us&id=plain-1&from=$now")
[ "$st" = 200 ] && [ "$(json up3.json 'd["id"]')" = plain-1 ] || fail "plain upload: $st $(cat up3.json)"
# Content-Encoding: gzip over a plain pprof
gzip -c prof.pb >prof.pb.ce
st=$(server_curl up4.json -H 'Content-Encoding: gzip' --data-binary @prof.pb.ce "$URL/api/v1/ingest?service=itest&type=cpu&version=2&id=ce-1&from=$now")
[ "$st" = 200 ] || fail "Content-Encoding gzip upload: $st $(cat up4.json)"

st=$(server_curl list.json "$URL/api/v1/profiles?service=itest&type=cpu&from=0")
[ "$st" = 200 ] || fail "profiles: $st $(cat list.json)"
[ "$(json list.json 'len(d["profiles"])')" = 3 ] || fail "expected 3 profiles: $(cat list.json)"
st=$(server_curl fn.json "$URL/api/v1/functions?service=itest&type=cpu&from=0")
[ "$st" = 200 ] || fail "functions: $st $(cat fn.json)"
grep -q '"name":"compute"' fn.json || fail "compute is not among the functions: $(cat fn.json)"
# compute's total is 40+17+5+... = the folded file's compute stacks, 3 profiles
want=$(awk '/compute/ { s += $NF } END { print s * 3 }' "$SRC/tests/data/stacks.folded")
got=$(json fn.json '[f["total"] for f in d["functions"] if f["name"]=="compute"][0]')
[ "$got" = "$want" ] || fail "compute total $got, expected $want"
st=$(server_curl lab.json "$URL/api/v1/labels?service=itest&type=cpu&from=0")
grep -q '"zone":\["eu","us"\]' lab.json || fail "labels: $(cat lab.json)"
pass "our upload: gzipped, plain, Content-Encoding, idempotent; functions and labels answer"

# ---- Pyroscope's /ingest, folded ----
printf 'main;handle;parse 30\nmain;handle;render 10\nmain;idle 5\n' >py.folded
st=$(server_curl py.json -g --data-binary @py.folded "$URL/ingest?name=pyapp.cpu{env=prod,region=eu-1}&from=$now&until=$((now + 10))&sampleRate=100&spyName=gospy")
[ "$st" = 200 ] || fail "pyroscope folded: $st $(cat py.json)"
server_curl fn.json "$URL/api/v1/functions?service=pyapp&type=cpu&from=0" >/dev/null
got=$(json fn.json '[f["total"] for f in d["functions"] if f["name"]=="handle"][0]')
[ "$got" = 400000000 ] || fail "handle: $got ns, expected 40 samples at 100 Hz = 400000000: $(cat fn.json)"
server_curl lab.json "$URL/api/v1/labels?service=pyapp&type=cpu&from=0" >/dev/null
grep -q '"env":\["prod"\]' lab.json && grep -q '"region":\["eu-1"\]' lab.json || fail "pyroscope tags: $(cat lab.json)"
pass "Pyroscope folded: 10 ms per sample at 100 Hz, tags are labels"

# ---- refusals ----
check_refused() { # WANT_STATUS WANT_TEXT CURL_ARGS...
    local want=$1 text=$2 st; shift 2
    st=$(server_curl bad.json "$@")
    [ "$st" = "$want" ] || fail "expected $want for $*: $st $(cat bad.json)"
    grep -q '^{"error":".*'"$text" bad.json || fail "expected an error naming '$text': $(cat bad.json)"
}
check_refused 400 "unknown parameter colour" --data-binary @prof.pb.gz "$URL/api/v1/ingest?service=itest&colour=red"
check_refused 400 "not a pprof" --data-binary 'hello' "$URL/api/v1/ingest?service=itest"
check_refused 400 "line 2" --data-binary $'a;b 1\na;c 1.5\n' "$URL/ingest?name=pyapp.cpu"
check_refused 415 "Content-Encoding" -H 'Content-Encoding: br' --data-binary @prof.pb.gz "$URL/api/v1/ingest?service=itest"
head -c 40000000 /dev/zero | gzip -c >bomb.gz
check_refused 413 "expands more than" --data-binary @bomb.gz "$URL/api/v1/ingest?service=itest"
head -c 17000000 /dev/zero >big.bin
check_refused 413 "over the limit" --data-binary @big.bin "$URL/api/v1/ingest?service=itest"
server_alive || fail "the server died on bad input"
server_curl list.json "$URL/api/v1/profiles?service=itest&type=cpu&from=0" >/dev/null
[ "$(json list.json 'len(d["profiles"])')" = 3 ] || fail "a refused request stored something: $(cat list.json)"
pass "bad requests get a 4xx with a one-line JSON message and store nothing"

# ---- kill -9 durability ----
# 4 uploaders, each at most 400 uploads with unique ids; kill -9 the server
# at a random moment; each uploader records "id status" per upload.
uploader() { # N
    local n=$1 i st
    for ((i = 1; i <= 400; i++)); do
        st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary @prof.pb.gz \
            "$URL/api/v1/ingest?service=kill&type=cpu&id=u$n-$i&from=$now" || true)
        echo "u$n-$i $st" >>"up.$n.log"
        [ "$st" = 200 ] || break
    done
}
pids=()
for n in 1 2 3 4; do
    uploader $n &
    pids+=($!)
done
sleep "$((RANDOM % 15 + 10))e-1"
kill -KILL "$SERVER_PID"
for p in "${pids[@]}"; do wait "$p" || true; done
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PIDS=()
cat up.*.log >all.log
ok=$(awk '$2 == 200' all.log | wc -l)
inflight=$(awk '$2 != 200' all.log | wc -l)
[ "$ok" -gt 0 ] || fail "no upload got a 2xx before the kill: $(head -3 all.log)"
data=$SERVER_DATA
server_start --data "$data"
URL=$SERVER_URL
server_curl list.json "$URL/api/v1/profiles?service=kill&type=cpu&from=0&limit=100000" >/dev/null
json list.json '"\n".join(p["id"] for p in d["profiles"])' | sort >stored.ids
awk '$2 == 200 { print $1 }' all.log | sort >acked.ids
[ -z "$(sort stored.ids | uniq -d)" ] || fail "ids stored twice: $(sort stored.ids | uniq -d | head)"
missing=$(comm -23 acked.ids stored.ids | head -5)
[ -z "$missing" ] || fail "acknowledged but lost after kill -9: $missing"
# retry the in-flight uploads, like a client would; then once more
for round in 1 2; do
    awk '$2 != 200 { print $1 }' all.log | while read -r id; do
        st=$(server_curl /dev/null --data-binary @prof.pb.gz "$URL/api/v1/ingest?service=kill&type=cpu&id=$id&from=$now")
        [ "$st" = 200 ] || fail "retry of $id: HTTP $st"
    done
done
server_curl list.json "$URL/api/v1/profiles?service=kill&type=cpu&from=0&limit=100000" >/dev/null
json list.json '"\n".join(p["id"] for p in d["profiles"])' | sort >stored2.ids
awk '{ print $1 }' all.log | sort -u >attempted.ids
[ -z "$(uniq -d stored2.ids)" ] || fail "ids stored twice after retries: $(uniq -d stored2.ids | head)"
cmp -s stored2.ids attempted.ids || fail "after retries the store holds $(wc -l <stored2.ids) ids, $(wc -l <attempted.ids) were uploaded"
pass "kill -9 after $ok acknowledged uploads ($inflight in flight): all acknowledged ones kept, each id once after retries"
server_stop || fail "hotspur serve exited with status $? on SIGTERM"
