# attach_upload.sh — `hotspur attach PID --server URL --service S` (issue
# 32): continuous uploads from a daemon that was started without the agent.
# Against a `hotspur serve` the test starts: while attached, windows of the
# daemon's heap profile are stored under service S (exact mode: a window's
# site_keep bytes are a multiple of the 1000 the daemon allocates there);
# the settings reach the agent through the attach's config, not the
# daemon's environment (which has a HOTSPUR_SERVER pointing nowhere, to
# show it is not read); detach ends the uploads (the upload thread is gone
# and, over three more periods of requests, no profile is stored); a second
# attach uploads again; to a server with a token, attach's HOTSPUR_TOKEN.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
needs_malloc_interposition
source "$(dirname "$0")/heap_lib.sh"
source "$(dirname "$0")/attach_lib.sh"
trap 'if [ -n "${dpid:-}" ]; then kill -9 "$dpid" 2>/dev/null || true; fi; server_stop_all' EXIT
unset LD_PRELOAD # curl and the server run without it (ASan's runtime: see continuous_e2e.sh)

server_start
q="from=now-10m&until=now"
# count SERVICE: sets N, the heap profiles stored under it (0 before the first)
count() {
    local st
    st=$(server_curl list.json "$SERVER_URL/api/v1/profiles?service=$1&type=heap&$q")
    if [ "$st" = 404 ] && grep -q "no profiles of service" list.json; then N=0; return; fi
    [ "$st" = 200 ] || fail "profile list: $st $(cat list.json)"
    N=$(grep -o '"id"' list.json | wc -l)
}
# work SECONDS: requests to the daemon for that long
work() {
    local end=$((SECONDS + $1))
    while [ $SECONDS -lt $end ]; do ask "round 2"; ask "free"; sleep 0.1; done
}

HOTSPUR_SERVER=http://127.0.0.1:9 start_daemon "$PROGS/attach_daemon"
ask "round 1"
"$HOTSPUR" attach "$dpid" --exact --server "$SERVER_URL" --service attached-svc --version v7 \
    --period 1s --window 500ms >attach.out 2>&1 || fail "attach --server failed: $(cat attach.out)"
cat attach.out
grep -q "uploading to $SERVER_URL as service attached-svc" attach.out || fail "attach said: $(cat attach.out)"
grep -q hotspur-up /proc/$dpid/task/*/comm || fail "no upload thread in the daemon after the attach"
for _ in $(seq 60); do # a window of 0.5 s in each 1 s period
    work 1
    count attached-svc
    [ "$N" -ge 3 ] && break
done
n=$N
echo "$n windows stored while attached"
[ "$n" -ge 3 ] || fail "$n windows stored under attached-svc in 60 s: $(cat list.json; cat daemon.err)"
grep -q '"version":"v7"' list.json || fail "the version is not v7: $(cat list.json)"
[ "$(server_curl merged.pb.gz "$SERVER_URL/api/v1/profile?service=attached-svc&type=heap&$q")" = 200 ] ||
    fail "query: $(cat merged.pb.gz)"
keep=$(site_values merged.pb.gz alloc_space | awk '$1 == "site_keep" { print $2 }')
echo "site_keep in the stored windows: $keep bytes"
[ -n "$keep" ] && [ "$keep" -gt 0 ] && [ $((keep % 1000)) = 0 ] ||
    fail "site_keep is not a multiple of 1000 bytes: $(site_values merged.pb.gz alloc_space)"

"$HOTSPUR" attach "$dpid" --detach >detach.out 2>&1 || fail "detach failed: $(cat detach.out)"
cat detach.out
grep -Eq "^uploads ended: uploaded=[1-9][0-9]* queued=0 dropped=0 refused=0" detach.out ||
    fail "detach did not report the uploads: $(cat detach.out)"
grep -q '^wrote ' detach.out && fail "a file was written in continuous mode: $(cat detach.out)"
for _ in $(seq 40); do grep -q hotspur-up /proc/$dpid/task/*/comm || break; sleep 0.05; done
grep -q hotspur-up /proc/$dpid/task/*/comm && fail "the upload thread runs on after the detach"
sleep 0.5 # the detach's own last window, posted before the note, may still be in its commit
count attached-svc
n1=$N
work 3
count attached-svc
n2=$N
echo "after the detach: $n1 windows, 3 s of requests later: $n2"
[ "$n1" = "$n2" ] || fail "uploads after the detach: $n1 windows, then $n2"

# Attach again, another service: uploads again, and stops again. Exact mode:
# a sampled window of these few KB often has no sample, and a window with
# none is not uploaded (agent.c).
"$HOTSPUR" attach "$dpid" --exact --server "$SERVER_URL" --service again --period 1s --window 500ms \
    >attach2.out 2>&1 || fail "second attach failed: $(cat attach2.out)"
for _ in $(seq 60); do work 1; count again; [ "$N" -ge 1 ] && break; done
[ "$N" -ge 1 ] || fail "the second attach uploaded nothing: $(cat attach2.out daemon.err; "$HOTSPUR" ctl "$dpid" status 2>&1)"
"$HOTSPUR" attach "$dpid" --detach >detach2.out 2>&1 || fail "second detach failed: $(cat detach2.out)"
count attached-svc
[ "$N" = "$n2" ] || fail "the second attach uploaded under the first service"

# A server that wants a bearer token: attach passes its own HOTSPUR_TOKEN
# (never the daemon's environment, never the command line).
url1=$SERVER_URL
server_start --token s3cret
HOTSPUR_TOKEN=s3cret "$HOTSPUR" attach "$dpid" --exact --server "$SERVER_URL" --service tok --period 1s \
    --window 500ms >attach3.out 2>&1 || fail "attach with a token failed: $(cat attach3.out)"
for _ in $(seq 60); do
    work 1
    st=$(server_curl tok.json -H "Authorization: Bearer s3cret" "$SERVER_URL/api/v1/profiles?service=tok&type=heap&$q")
    [ "$st" = 200 ] && break
done
[ "$st" = 200 ] && grep -q '"id"' tok.json || fail "nothing stored with the token: $st $(cat tok.json daemon.err)"
"$HOTSPUR" attach "$dpid" --detach >detach3.out 2>&1 || fail "detach failed: $(cat detach3.out)"
grep -Eq "^uploads ended: uploaded=[1-9][0-9]* .*refused=0" detach3.out || fail "token uploads: $(cat detach3.out)"
SERVER_URL=$url1

# Options without --server, --leaks with it and a URL not http:// are refused.
"$HOTSPUR" attach "$dpid" --service x >bad.out 2>&1 && fail "--service without --server was accepted"
grep -q "go with --server" bad.out || fail "--service alone: $(cat bad.out)"
"$HOTSPUR" attach "$dpid" --server "$SERVER_URL" --leaks >bad.out 2>&1 && fail "--leaks --server was accepted"
"$HOTSPUR" attach "$dpid" --server localhost:1 >bad.out 2>&1 && fail "a URL without http:// was accepted"
grep -q "not an http:// URL" bad.out || fail "bad URL: $(cat bad.out)"
stop_daemon
pass "attach --server: $n windows uploaded under the service while attached, none after the detach ($n1 = $n2), a second attach uploads again"
