#!/usr/bin/env bash
# units_grammar.sh — one grammar for durations (src/base/units.h) wherever a
# user writes one: the agent's HOTSPUR_PERIOD=1d (ignored with a warning
# before), `serve --retention 36h`, a query's from=now-90m and now-1.5h,
# `record --period`, all read by the same parser; a bad one is refused with
# the grammar named, at once, before any program runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"

# the agent: environment
LD_PRELOAD="$AGENT_PRELOAD" HOTSPUR_PERIOD=1d HOTSPUR_OUTPUT="$TMP/p.%p.pb.gz" /bin/true 2>env.err
grep -q "ignoring HOTSPUR_PERIOD" env.err && fail "HOTSPUR_PERIOD=1d refused: $(cat env.err)"
LD_PRELOAD="$AGENT_PRELOAD" HOTSPUR_PERIOD=1x HOTSPUR_OUTPUT="$TMP/p.%p.pb.gz" /bin/true 2>env.err
grep -q "ignoring HOTSPUR_PERIOD=1x (want a duration like" env.err || fail "HOTSPUR_PERIOD=1x not refused: $(cat env.err)"
pass "HOTSPUR_PERIOD=1d read, 1x refused"

# record: flags checked before the program starts
if "$HOTSPUR" record --server http://127.0.0.1:9 --period 1x -- sh -c 'touch ran' 2>rec.err; then
    fail "record --period 1x accepted"
fi
[ ! -e ran ] || fail "record --period 1x ran the program"
grep -q "bad --period '1x' (want a duration like" rec.err || fail "record --period 1x: $(cat rec.err)"
pass "record --period 1x refused before the program runs"

# serve: --retention
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)
if "$HOTSPUR" serve --listen 127.0.0.1:0 --data "$TMP/bad" --retention 36x 2>serve.err; then
    fail "serve --retention 36x accepted"
fi
grep -q "bad --retention (want a duration like" serve.err || fail "serve --retention 36x: $(cat serve.err)"
server_start --retention 36h
pass "serve --retention 36h accepted, 36x refused"

# a query's from=now-D
now=$(date +%s)
"$HOTSPUR" convert --from collapsed <(printf 'main;work 100\n') --to pprof -o c.pb.gz
st=$(server_curl up.json --data-binary @c.pb.gz "$SERVER_URL/api/v1/ingest?service=u&type=cpu&id=a&from=$((now - 3000))&until=$((now - 2990))")
[ "$st" = 200 ] || fail "upload: $st $(cat up.json)"
for from in now-90m now-1.5h now-1d; do
    st=$(server_curl q.json "$SERVER_URL/api/v1/functions?service=u&type=cpu&from=$from")
    [ "$st" = 200 ] && grep -q '"profiles":1' q.json || fail "from=$from: $st $(head -c 300 q.json)"
done
st=$(server_curl q.json "$SERVER_URL/api/v1/functions?service=u&type=cpu&from=now-40m")
[ "$st" = 404 ] || grep -q '"profiles":0' q.json || fail "from=now-40m selected the profile of 50 min ago: $st $(head -c 300 q.json)"
st=$(server_curl q.json "$SERVER_URL/api/v1/functions?service=u&type=cpu&from=now-1y")
[ "$st" = 400 ] && grep -q "bad from 'now-1y'" q.json || fail "from=now-1y: $st $(cat q.json)"
pass "from=now-90m, now-1.5h, now-1d select a profile of 50 minutes ago; now-40m does not; now-1y is a 400"
