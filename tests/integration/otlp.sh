#!/usr/bin/env bash
# otlp.sh — OpenTelemetry profiles (docs/otlp.md): `hotspur convert --to
# otlp` then `--from otlp` gives back every stack, line, label and value of
# a pprof (two sample types, labels, inline frames); `hotspur serve` takes
# POST /v1development/profiles in JSON, protobuf and gzipped protobuf (a
# request written by hand from the spec: otlp_body.py) and stores the same
# profile from each; a malformed dictionary is a 400 naming the table and
# index, with nothing stored; the answers are OTLP's; per-sample timestamps
# are kept as 10 s time slices, which a time-range query selects.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
body() { python3 "$SRC/tests/integration/otlp_body.py" "$@"; }

# ---- convert: pprof -> OTLP -> pprof ----
# perf script import: two sample types (samples, cpu-clock), pid/tid/comm labels
"$HOTSPUR" convert --from perf-script --to pprof -o p.pb.gz "$SRC/tests/data/perf-script-busy.txt"
"$HOTSPUR" convert --to otlp -o p.otlp p.pb.gz
"$HOTSPUR" convert --from otlp --to pprof -o back.pb.gz p.otlp
for i in 0 1; do
    for f in p back; do
        "$HOTSPUR" convert --sample-index $i --lines --to collapsed $f.pb.gz | sort >$f.$i.folded
        "$HOTSPUR" traces --sample-index $i $f.pb.gz >$f.$i.traces
    done
    [ -s p.$i.folded ] || fail "no stacks in the perf script import"
    cmp -s p.$i.folded back.$i.folded || fail "sample type $i: stacks or values differ after OTLP: $(diff p.$i.folded back.$i.folded | head)"
    # traces: every sample with its labels (the order of samples may differ)
    sort p.$i.traces >a
    sort back.$i.traces >b
    cmp -s a b || fail "sample type $i: traces (labels) differ after OTLP: $(diff a b | head)"
done
grep -q 'comm:' p.1.traces || fail "the fixture has no labels: $(head p.1.traces)"
# inline frames and line numbers: the hand-written request has helper inlined into work
OTLP_NOW=$(date +%s) body proto >hand.pb
"$HOTSPUR" convert --from otlp --to pprof -o hand.pb.gz hand.pb
"$HOTSPUR" convert --to otlp -o hand2.otlp hand.pb.gz
"$HOTSPUR" convert --from otlp --to pprof -o hand2.pb.gz hand2.otlp
"$HOTSPUR" convert --lines --to collapsed hand.pb.gz | sort >h1
"$HOTSPUR" convert --lines --to collapsed hand2.pb.gz | sort >h2
cmp -s h1 h2 || fail "hand-written request: differs after a second OTLP trip: $(diff h1 h2)"
grep -q 'app.c:31' h1 || fail "the inlined frame's line is lost: $(cat h1)"
# the three sample shapes of the spec: 3000000; 1000000+2000000; three timestamps (1 each)
[ "$(awk '{s += $NF} END {print s}' h1)" = 6000003 ] || fail "values: $(cat h1)"
"$HOTSPUR" traces hand.pb.gz >hand.traces
grep -q 'span_id:.*eee19b7ec3c1b174' hand.traces || fail "the link's span id is not a label: $(cat hand.traces)"
grep -q 'trace_id:.*5b8efff798038103d269b633813fc60c' hand.traces || fail "no trace_id label: $(cat hand.traces)"
grep -q 'alloc:.*64' hand.traces || fail "the numeric attribute is lost: $(cat hand.traces)"
"$HOTSPUR" convert --from otlp --to pprof -o x.pb.gz p.pb.gz 2>err && fail "a pprof read as OTLP"
grep -q 'OTLP' err || fail "a pprof read as OTLP: $(cat err)"

# ---- serve: POST /v1development/profiles ----
server_start
URL=$SERVER_URL
now=$(date +%s)
export OTLP_NOW=$now
OTLP_SERVICE=as-json body json >r.json
OTLP_SERVICE=as-proto body proto >r.pb
OTLP_SERVICE=as-gzip body proto | gzip -c >r.pb.gz
st=$(server_curl a.out -H 'Content-Type: application/json' --data-binary @r.json "$URL/v1development/profiles")
[ "$st" = 200 ] || fail "JSON: HTTP $st $(cat a.out)"
[ "$(cat a.out)" = "{}" ] || fail "JSON full success is an empty ExportProfilesServiceResponse: $(cat a.out)"
st=$(server_curl b.out -H 'Content-Type: application/x-protobuf' --data-binary @r.pb "$URL/v1development/profiles")
[ "$st" = 200 ] || fail "protobuf: HTTP $st $(cat b.out)"
[ ! -s b.out ] || fail "protobuf full success is an empty message: $(od -c b.out | head -3)"
st=$(server_curl c.out -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' --data-binary @r.pb.gz "$URL/v1development/profiles")
[ "$st" = 200 ] || fail "gzip: HTTP $st $(cat c.out)"
for s in as-json as-proto as-gzip; do
    st=$(server_curl $s.list "$URL/api/v1/profiles?service=$s&type=cpu&from=0")
    [ "$st" = 200 ] && [ "$(json $s.list 'len(d["profiles"])')" = 1 ] || fail "$s: $st $(cat $s.list)"
    [ "$(json $s.list 'd["profiles"][0]["version"]')" = 1.2.3 ] || fail "$s: service.version: $(cat $s.list)"
    [ "$(json $s.list 'd["profiles"][0]["start"]')" = "$now" ] || fail "$s: time: $(cat $s.list)"
    st=$(server_curl $s.pb.gz "$URL/api/v1/profile?service=$s&type=cpu&from=0")
    [ "$st" = 200 ] || fail "$s: profile $st"
    "$HOTSPUR" convert --lines --to collapsed $s.pb.gz | sort >$s.folded
    "$HOTSPUR" traces $s.pb.gz | sort >$s.traces
    st=$(server_curl $s.labels "$URL/api/v1/labels?service=$s")
    grep -q '"host.name":\["box-1"\]' $s.labels && grep -q '"process.pid":\["4242"\]' $s.labels ||
        fail "$s: resource attributes are not labels: $(cat $s.labels)"
done
cmp -s as-json.folded as-proto.folded || fail "JSON and protobuf stored different profiles: $(diff as-json.folded as-proto.folded)"
cmp -s as-json.folded as-gzip.folded || fail "gzip stored a different profile"
cmp -s as-json.traces as-proto.traces || fail "JSON and protobuf: labels differ: $(diff as-json.traces as-proto.traces)"
cmp -s as-json.folded h1 || fail "the server stored something else than convert reads: $(diff as-json.folded h1)"
grep -q 'thread.name:.*worker-1' as-json.traces || fail "sample attributes are not labels: $(cat as-json.traces)"
# trace links: one span's (or one trace's) samples, by a tag filter on the query API
for tag in span_id=eee19b7ec3c1b174 trace_id=5b8efff798038103d269b633813fc60c; do
    st=$(server_curl span.json "$URL/api/v1/functions?service=as-json&type=cpu&from=0&tagfocus=$tag")
    [ "$st" = 200 ] || fail "tagfocus=$tag: $st $(cat span.json)"
    [ "$(json span.json 'd["matched"]')" = 3000000 ] && [ "$(json span.json 'd["total"]')" = 6000003 ] ||
        fail "tagfocus=$tag: the linked sample is 1000000+2000000 of 6000003: $(cat span.json)"
done

# profile_id is the stored id: the same request again is a duplicate, not a second profile
OTLP_SERVICE=with-id OTLP_PROFILE_ID=0102030405060708090a0b0c0d0e0f10 body proto >id.pb
for k in 1 2; do
    st=$(server_curl id$k.out -H 'Content-Type: application/x-protobuf' --data-binary @id.pb "$URL/v1development/profiles")
    [ "$st" = 200 ] || fail "with profile_id ($k): $st"
done
server_curl id.list "$URL/api/v1/profiles?service=with-id&type=cpu&from=0" >/dev/null
[ "$(json id.list 'len(d["profiles"])')" = 1 ] && [ "$(json id.list 'd["profiles"][0]["id"]')" = 0102030405060708090a0b0c0d0e0f10 ] ||
    fail "profile_id: $(cat id.list)"

# per-sample timestamps: kept as 10 s time slices (docs/otlp.md). The
# timestamps-only sample 25 s after the others: its own profile, found by a
# time range that holds its slice only; the undated value has the OTLP
# profile's window; all three together are the request's values
OTLP_SERVICE=slices body json slices >sl.json
st=$(server_curl sl.out -H 'Content-Type: application/json' --data-binary @sl.json "$URL/v1development/profiles")
[ "$st" = 200 ] || fail "slices: HTTP $st $(cat sl.out)"
server_curl sl.list "$URL/api/v1/profiles?service=slices&type=cpu&from=0" >/dev/null
[ "$(json sl.list 'sorted(p["start"] for p in d["profiles"])')" = "[$now, $now, $(( (now + 25) / 10 * 10 ))]" ] ||
    fail "slices: not the undated window, the first slice and the late slice: $(cat sl.list)"
server_curl sl.pb.gz "$URL/api/v1/profile?service=slices&type=cpu&from=$(( (now + 25) / 10 * 10 ))&until=$(( (now + 25) / 10 * 10 + 10 ))" >/dev/null
"$HOTSPUR" convert --to collapsed sl.pb.gz >sl.folded
[ "$(cat sl.folded)" = "main 3" ] || fail "slices: the late slice holds the late sample only: $(cat sl.folded)"
server_curl sl.pb.gz "$URL/api/v1/profile?service=slices&type=cpu&from=0" >/dev/null
[ "$("$HOTSPUR" convert --to collapsed sl.pb.gz | awk '{s += $NF} END {print s}')" = 6000003 ] ||
    fail "slices: values lost: $("$HOTSPUR" convert --to collapsed sl.pb.gz)"

# original_payload in pprof: stored instead of the conversion (here a different profile, so it shows)
for form in json proto; do
    OTLP_SERVICE=orig-$form OTLP_ORIGINAL=p.pb.gz body $form >orig.body
    ct=application/json
    [ $form = proto ] && ct=application/x-protobuf
    st=$(server_curl orig.out -H "Content-Type: $ct" --data-binary @orig.body "$URL/v1development/profiles")
    [ "$st" = 200 ] || fail "original payload ($form): $st $(cat orig.out)"
    server_curl orig.pb.gz "$URL/api/v1/profile?service=orig-$form&type=cpu-clock&from=0" >/dev/null
    "$HOTSPUR" convert --sample-index 1 --lines --to collapsed orig.pb.gz | sort >orig.folded
    cmp -s orig.folded p.1.folded || fail "original payload ($form): not the pprof sent: $(diff orig.folded p.1.folded | head)"
done

# ---- malformed: a 400 that names the table and index; nothing stored ----
check_bad() { # VARIANT FORM EXPECTED-TEXT
    OTLP_SERVICE=bad-$1 body $2 $1 >bad.body
    local ct=application/json
    [ $2 = proto ] && ct=application/x-protobuf
    st=$(server_curl bad.out -H "Content-Type: $ct" --data-binary @bad.body "$URL/v1development/profiles")
    [ "$st" = 400 ] || fail "$1 ($2): HTTP $st $(cat bad.out)"
    grep -qF "$3" bad.out || fail "$1 ($2): the answer does not say '$3': $(cat bad.out)"
}
check_bad bad-mapping json '"code":3'
check_bad bad-mapping json 'location_table[2].mapping_index: 9 is out of range (mapping_table has 2 entries)'
check_bad bad-mapping proto 'location_table[2].mapping_index: 9 is out of range'
check_bad bad-string json 'function_table[3].name_strindex: 99 is out of range (string_table has 14 entries)'
check_bad no-zero json 'string_table[0] must be'
check_bad bad-stack proto 'profiles[0].samples[1].stack_index: 7 is out of range (stack_table has 4 entries)'
server_curl svc.json "$URL/api/v1/services" >/dev/null
grep -q bad- svc.json && fail "a refused request stored something: $(cat svc.json)"
# not OTLP at all
printf 'garbage' >g.bin
st=$(server_curl g.out -H 'Content-Type: application/x-protobuf' --data-binary @g.bin "$URL/v1development/profiles")
[ "$st" = 400 ] || fail "garbage: $st $(cat g.out)"
st=$(server_curl t.out -H 'Content-Type: text/plain' --data-binary @r.json "$URL/v1development/profiles")
[ "$st" = 415 ] || fail "text/plain: $st $(cat t.out)"
st=$(server_curl m.out "$URL/v1development/profiles")
[ "$st" = 405 ] || fail "GET: $st"
# an empty request is a success (the spec)
st=$(server_curl e.out -H 'Content-Type: application/json' --data-binary '{}' "$URL/v1development/profiles")
[ "$st" = 200 ] || fail "empty request: $st $(cat e.out)"
server_alive || fail "the server died"
pass
