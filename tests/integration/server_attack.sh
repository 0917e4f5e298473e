#!/usr/bin/env bash
# server_attack.sh — the holes an outside attack pass found in `hotspur
# serve` (issue 29), each replayed against a real server: regex bombs in
# filter parameters (memory and time bounded, 400 in milliseconds, server
# alive and small afterwards); cross-origin requests (curl with browsers'
# headers, and a page of another origin in headless Chromium); a
# non-loopback listen address without a token.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
now=$(date +%s)
server_start
st=$(server_curl up.json --data-binary @prof.pb.gz "$SERVER_URL/api/v1/ingest?service=svc&type=cpu&from=$now")
[ "$st" = 200 ] || fail "upload: $st $(cat up.json)"

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$SERVER_PID/status"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
rss0=$(rss)

# --- regex bombs: glibc's regcomp took 3.0 GB and 11 s on the first, 1.6 GB
# for eight of the second in parallel. Each is refused while the query's
# parameters are checked, for every filter, whether the service exists or not.
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
bombs=('((x{32767}){32767})' '(((a{100}){100}){100})' '((a{999}){999})' '(a{1000}){2}(b{1000}){2}')
params=(focus ignore show hide show_from tagfocus tagignore)
for b in "${bombs[@]}"; do
    for p in "${params[@]}"; do
        v=$b
        case $p in tag*) v="k=$b" ;; esac
        e=$(enc "$v")
        for svc in svc nosuch; do
            t0=$(date +%s%N)
            st=$(server_curl bomb.json "$SERVER_URL/api/v1/flamegraph?service=$svc&type=cpu&from=0&$p=$e")
            ms=$((($(date +%s%N) - t0) / 1000000))
            [ "$st" = 400 ] || fail "$p=$b on $svc: status $st $(cat bomb.json)"
            grep -q '"error"' bomb.json || fail "$p=$b: no JSON error: $(cat bomb.json)"
            [ "$ms" -lt 1000 ] || fail "$p=$b on $svc took $ms ms"
        done
    done
done
pass "regex bombs: ${#bombs[@]} patterns x ${#params[@]} filters refused with 400 in < 1 s each"

# Eight clients at once, 20 bombs each.
pids=()
e=$(enc '(((a{100}){100}){100})')
for c in 1 2 3 4 5 6 7 8; do
    (for i in $(seq 20); do
        st=$(server_curl /dev/null "$SERVER_URL/api/v1/functions?service=svc&type=cpu&from=0&focus=$e")
        [ "$st" = 400 ] || { echo "client $c: $st" >par.err; exit 1; }
    done) &
    pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the server is a child too
[ ! -s par.err ] || fail "parallel bombs: $(cat par.err)"
server_alive || fail "the server died"
peak=$(hwm)
# The server's whole peak, fixture and all, stays small (glibc: 1.6-3.0 GB).
[ "$peak" -lt $((200 * 1024)) ] || fail "server peak RSS ${peak} kB after the bombs (started at ${rss0} kB)"
pass "160 parallel bombs: server alive, peak RSS $((peak / 1024)) MiB"

# A legitimate filter still works after all that.
st=$(server_curl fn.json "$SERVER_URL/api/v1/functions?service=svc&type=cpu&from=0&focus=$(enc '(?i)^PUSH_|\bcompute$')")
[ "$st" = 200 ] || fail "legit filter: $st $(cat fn.json)"
grep -q 'compute' fn.json || fail "legit filter lost compute: $(cat fn.json)"
pass "a legitimate RE2 filter still answers"

# --- a profile whose sample types clash with the stored ones is the client's
# error: 409 naming both (it was a 500, which agents retry forever).
"$HOTSPUR" convert "$SRC/tests/data/perf-script-busy.txt" --to pprof -o ps.pb.gz
st=$(server_curl clash.json --data-binary @ps.pb.gz "$SERVER_URL/api/v1/ingest?service=svc&type=cpu&from=$now")
[ "$st" = 409 ] || fail "sample-type clash: $st $(cat clash.json)"
grep -q 'differ from those stored for svc/cpu (samples/count)' clash.json || fail "clash: $(cat clash.json)"
pass "sample-type clash: 409 $(cat clash.json)"

# --- values a measurement cannot have: refused with 400 (three INT64_MAX
# uploads wrapped the flame graph total and made /api/v1/series answer 500;
# negative CPU and a start in 2262 were stored).
python3 - <<'PY'
import gzip, os, sys
sys.path.insert(0, os.environ["SRC"] + "/tests/integration")
from pbwire import ldelim, vfield, packed
def prof(values, time_nanos=0):
    # string table: "", samples, count, cpu, nanoseconds, main
    strs = [b"", b"samples", b"count", b"cpu", b"nanoseconds", b"main"]
    st = [ldelim(1, vfield(1, 1) + vfield(2, 2)), ldelim(1, vfield(1, 3) + vfield(2, 4))]
    fn = ldelim(5, vfield(1, 1) + vfield(2, 5))
    loc = ldelim(4, vfield(1, 1) + ldelim(4, vfield(1, 1)))
    samples = [ldelim(2, packed(1, [1]) + packed(2, v)) for v in values]
    body = b"".join(st) + b"".join(samples) + loc + fn + b"".join(ldelim(6, x) for x in strs)
    if time_nanos:
        body += vfield(9, time_nanos)
    return gzip.compress(body)
big = (1 << 63) - 1
open("max.pb.gz", "wb").write(prof([[1, big]]))
open("sum.pb.gz", "wb").write(prof([[1, 1 << 52], [1, 1 << 52], [1, 1 << 52]]))
open("neg.pb.gz", "wb").write(prof([[1, -5000000]]))
open("ok.pb.gz", "wb").write(prof([[1, 10000000]]))
open("y2262.pb.gz", "wb").write(prof([[1, 10000000]], time_nanos=big - 10))
PY
for f in max sum neg; do
    st=$(server_curl v.json --data-binary @$f.pb.gz "$SERVER_URL/api/v1/ingest?service=vals&type=cpu&from=$now")
    [ "$st" = 400 ] || fail "$f: status $st $(cat v.json)"
    echo "$f: $(cat v.json)"
done
st=$(server_curl v.json --data-binary @y2262.pb.gz "$SERVER_URL/api/v1/ingest?service=vals&type=cpu")
[ "$st" = 400 ] || fail "start in 2262: status $st $(cat v.json)"
echo "y2262: $(cat v.json)"
st=$(server_curl v.json --data-binary @ok.pb.gz "$SERVER_URL/api/v1/ingest?service=vals&type=cpu&from=$((now + 400 * 86400))")
[ "$st" = 400 ] || fail "from= a year ahead: status $st $(cat v.json)"
for i in 1 2 3; do
    st=$(server_curl v.json --data-binary @ok.pb.gz "$SERVER_URL/api/v1/ingest?service=vals&type=cpu&from=$((now - i))")
    [ "$st" = 200 ] || fail "a plain profile: $st $(cat v.json)"
done
st=$(server_curl s.json "$SERVER_URL/api/v1/series?service=vals&type=cpu&from=0")
[ "$st" = 200 ] || fail "series after the refusals: $st $(cat s.json)"
pass "INT64_MAX, a sum over 2^53, negative CPU, a start in 2262 or a year ahead: 400; series fine"

# tag ranges are numbers with a unit: a malformed one is a 400
st=$(server_curl t.json "$SERVER_URL/api/v1/functions?service=svc&type=cpu&from=0&tagfocus=bytes=zz:")
[ "$st" = 400 ] || fail "tagfocus=bytes=zz: answered $st $(cat t.json)"
"$HOTSPUR" top --tagfocus bytes=zz: prof.pb.gz >/dev/null 2>t.err && fail "top --tagfocus bytes=zz: was accepted"
grep -q "not a range" t.err || fail "top --tagfocus bytes=zz: $(cat t.err)"
pass "tagfocus=bytes=zz: 400 $(cat t.json), and the CLI says so too"

# --- cross-origin requests (CSRF): a browser's requests for a page of another
# origin carry Origin and/or Sec-Fetch-Site; they are refused on every
# ingest and API route, before the body is read.
folded="main;evil_frame 10"
csrf() { # EXPECTED-STATUS METHOD PATH CURL-HEADER-ARGS...
    local want=$1 m=$2 p=$3; shift 3
    local st
    if [ "$m" = POST ]; then
        st=$(server_curl csrf.json -X POST -H 'Content-Type: text/plain' --data-binary "$folded" "$@" "$SERVER_URL$p")
    else
        st=$(server_curl csrf.json "$@" "$SERVER_URL$p")
    fi
    [ "$st" = "$want" ] || fail "$m $p $*: status $st, want $want: $(cat csrf.json)"
    if [ "$want" = 403 ]; then grep -q 'cross-origin' csrf.json || fail "$m $p $*: $(cat csrf.json)"; fi
}
hostport=${SERVER_URL#http://}
csrf 403 POST "/ingest?name=evil1.cpu" -H 'Origin: https://evil.example'
csrf 403 POST "/ingest?name=evil2.cpu" -H 'Origin: null'
csrf 403 POST "/ingest?name=evil3.cpu" -H "Origin: http://127.0.0.1:1"
csrf 403 POST "/ingest?name=evil4.cpu" -H 'Sec-Fetch-Site: cross-site'
csrf 403 POST "/ingest?name=evil5.cpu" -H 'Sec-Fetch-Site: same-site' -H "Origin: http://localhost:8000"
csrf 403 POST "/api/v1/ingest?service=evil6&type=cpu" -H 'Origin: https://evil.example'
csrf 403 GET "/api/v1/flamegraph?service=svc&type=cpu&from=0&focus=$(enc '((x{32767}){32767})')" -H 'Sec-Fetch-Site: cross-site'
csrf 403 GET "/api/v1/services" -H 'Origin: https://evil.example'
# the server's own pages and non-browser clients go on
csrf 200 GET "/api/v1/services" -H "Origin: http://$hostport" -H 'Sec-Fetch-Site: same-origin'
csrf 200 GET "/api/v1/services" -H 'Sec-Fetch-Site: none'
csrf 200 GET "/api/v1/services" -H "Origin: https://profiles.example" -H "X-Forwarded-Host: profiles.example"
csrf 200 POST "/ingest?name=ownpage.cpu" -H "Origin: http://$hostport"
st=$(server_curl sv.json "$SERVER_URL/api/v1/services")
grep -q evil sv.json && fail "a cross-origin request was stored: $(cat sv.json)"
grep -q ownpage sv.json || fail "the same-origin upload is missing: $(cat sv.json)"
pass "cross-origin writes and queries refused (Origin, Origin: null, Sec-Fetch-Site); same-origin and non-browser clients served"

command -v node >/dev/null || fail "node (nodejs) is needed"
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
echo "{\"tmp\": \"$TMP\", \"url\": \"$SERVER_URL\"}" >csrf.json.cfg
timeout 120 env -u LD_PRELOAD node "$SRC/tests/integration/server_csrf.js" csrf.json.cfg || fail "a cross-origin page in Chromium"
pass "a page of another origin in Chromium stored nothing; the server's own UI loads"

# --- a non-loopback listen address without a token is refused at start,
# with what it would expose; --public-without-token starts it, with a warning.
if "$HOTSPUR" serve --listen 0.0.0.0:0 --data "$TMP/pub" 2>pub.err & then :; fi
pub=$!
for _ in $(seq 50); do kill -0 $pub 2>/dev/null || break; sleep 0.1; done
if kill -0 $pub 2>/dev/null; then kill $pub; fail "serve --listen 0.0.0.0 without a token started"; fi
wait $pub && fail "serve --listen 0.0.0.0 without a token exited 0"
grep -q "refusing to listen on 0.0.0.0:0 without a token" pub.err || fail "no reason given: $(cat pub.err)"
grep -q -- "--public-without-token" pub.err || fail "the way out is not named: $(cat pub.err)"
server_start --listen 0.0.0.0:0 --public-without-token
grep -q "WARNING: no token" "$SERVER_LOG" || fail "no warning: $(cat "$SERVER_LOG")"
server_stop
server_start --listen 0.0.0.0:0 --token s3cret
grep -q "WARNING" "$SERVER_LOG" && fail "a warning with a token: $(cat "$SERVER_LOG")"
server_stop
pass "non-loopback without a token: refused at start with the reason; --public-without-token warns"
