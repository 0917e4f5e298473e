#!/usr/bin/env bash
# continuous_outage.sh — nothing is lost while the collector says "try
# later" (issue 29): the agent keeps a profile answered 503 (or 429, 502,
# 504) in its queue as it does when the collector is down, however many
# times, and waits what Retry-After asks (up to the period). And a real
# `hotspur serve` whose disk is full answers 503 with Retry-After, says
# "not accepting writes" on /healthz, and takes every profile once there is
# room again. Before, the agent dropped a profile after five 5xx answers
# (6 profiles lost in a 28 s ClickHouse outage) and a full disk answered
# 500 with /healthz at 200.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"
source "$(dirname "$0")/server_lib.sh"
trap 'fake_stop_all; server_stop_all; umount "$TMP/small" 2>/dev/null || true' EXIT
# The agent goes in by LD_PRELOAD="$AGENT_PRELOAD" on each program; curl and
# the rest run without the ASan runtime a sanitized build preloads (curl
# hangs with it; see server_ingest.sh).
unset LD_PRELOAD

sent_of() { sed -n 's/.*: \([0-9]*\) sent, .*/\1/p' "$1"; }
refused_of() { sed -n 's/.* \([0-9]*\) refused by the server.*/\1/p' "$1"; }

# ---- 503 for 8 s (each profile answered 503 many more than five times) ----
fake_start
fake_mode 503
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_STATS=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 11000 0 >out 2>err &
prog=$!
sleep 8
fake_mode ok
wait "$prog" || fail "phases failed: $(cat err)"
agent_stderr err
fake_summary >sum
distinct=$(cut -f7 sum | sort -u | wc -l)
first=$(cut -f7 sum | head -n 1)
tries=$(cut -f7 sum | grep -c "^$first$")
echo "503: $(wc -l <sum) requests for $distinct profiles; the first profile was tried $tries times"
[ "$tries" -gt 5 ] || fail "the first profile was tried only $tries times in an 8 s outage"
[ "$(refused_of err)" = 0 ] || fail "profiles dropped after 503s: $(cat err)"
[ "$(sent_of err)" = "$distinct" ] || fail "$(sent_of err) sent of $distinct profiles: $(cat err)"
fake_stop
pass "503 for 8 s: every profile kept and sent afterwards ($distinct, none refused)"

# ---- Retry-After is honoured (up to the period) ----
fake_start
fake_mode "503 3"
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=5s HOTSPUR_DURATION=500ms \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 13000 0 >out 2>err & # ends well after the outage: the exit flush makes one last try at once
prog=$!
sleep 7.5
fake_mode ok
wait "$prog" || fail "phases failed: $(cat err)"
fake_summary >sum
# the gaps between attempts of the first profile
first=$(cut -f7 sum | head -n 1)
gaps=$(awk -F'\t' -v id="$first" '$7 == id { if (n++) printf "%.2f ", $12 - prev; prev = $12 }' sum)
echo "Retry-After: 3: gaps between attempts of one profile: $gaps"
[ -n "$gaps" ] || fail "the first profile was not retried: $(cat sum)"
for g in $gaps; do
    awk -v g="$g" 'BEGIN { exit !(g >= 2.9) }' || fail "a retry $g s after a 'Retry-After: 3' answer"
done
fake_stop
pass "Retry-After: 3 waited before every retry ($gaps)"

# ---- a real server whose disk fills up ----
mkdir -p "$TMP/small"
mount -t tmpfs -o size=3m tmpfs "$TMP/small" || fail "cannot mount a small tmpfs to fill (needs root)"
server_start --data "$TMP/small/data"
dd if=/dev/zero of="$TMP/small/filler" bs=64k 2>/dev/null || true # fill it up
st=$(server_curl h.json "$SERVER_URL/healthz")
HOTSPUR_SERVER=$SERVER_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_STATS=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 10000 0 >out 2>err &
prog=$!
sleep 4
st=$(server_curl h.json "$SERVER_URL/healthz")
echo "healthz while full: $st $(cat h.json)"
[ "$st" = 503 ] || fail "/healthz answered $st while every write fails: $(cat h.json)"
grep -q "not accepting writes" h.json || fail "healthz does not say so: $(cat h.json)"
"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o "$TMP/probe.pb.gz"
st=$(server_curl up.json -D hdr.txt --data-binary @"$TMP/probe.pb.gz" "$SERVER_URL/api/v1/ingest?service=probe&type=cpu")
[ "$st" = 503 ] || fail "an upload to a full store answered $st: $(cat up.json)"
grep -qi '^Retry-After: 30' hdr.txt || fail "no 'Retry-After: 30' on a full store: $(cat hdr.txt)"
rm -f "$TMP/small/filler" # room again
wait "$prog" || fail "phases failed: $(cat err)"
agent_stderr err
grep -q "cannot upload to .*: 503 .*store full" err || fail "the agent did not see 503 store full: $(cat err)"
st=$(server_curl h.json "$SERVER_URL/healthz")
[ "$st" = 200 ] || fail "/healthz $st after room came back: $(cat h.json)"
server_curl list.json "$SERVER_URL/api/v1/profiles?service=phases&type=cpu&from=0&limit=1000" >/dev/null
stored=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["profiles"]))' list.json)
echo "disk full: agent $(sent_of err) sent, $(refused_of err) refused; $stored stored"
[ "$(refused_of err)" = 0 ] || fail "profiles dropped during the disk-full outage: $(cat err)"
[ "$stored" = "$(sent_of err)" ] || fail "$stored stored, $(sent_of err) sent"
[ "$stored" -ge 8 ] || fail "only $stored profiles stored"
grep -q "not sent at exit" err && ! grep -q ", 0 not sent at exit" err && fail "profiles left unsent: $(cat err)"
grep -q " 503 " "$SERVER_LOG" || fail "no 5xx logged by the server: $(cat "$SERVER_LOG")"
[ "$(grep -c '^$' "$SERVER_LOG")" = 0 ] || fail "blank lines in the server's log: $(cat -A "$SERVER_LOG" | head)"
pass "disk full: 503 + Retry-After, /healthz 'not accepting writes', all $stored profiles stored once there was room"
