#!/usr/bin/env bash
# web_trace.sh — the web UI's tenant (?tenant=, sent as X-Scope-OrgID) and
# trace filter (?trace=SPAN_OR_TRACE_ID, the trace/span chip) in headless
# Chromium (playwright-core, Debian's chromium): tenant acme uploads the
# OTLP request of otlp_body.py, whose samples of one stack carry a span
# link; the UI's graph of that span (and of its trace) is the API's
# tagfocus answer, and the default tenant does not show acme's service.
source "$(dirname "$0")/lib.sh"
unset LD_PRELOAD # curl, node and Chromium hang under the ASan runtime lib.sh preloads
source "$(dirname "$0")/server_lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/playwright-core" ] || fail "playwright-core is missing: run scripts/install-deps (npm ci in tests/node)"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

server_start
OTLP_NOW=$(($(date +%s) - 60)) python3 "$SRC/tests/integration/otlp_body.py" proto >req.pb
st=$(server_curl out -X POST --data-binary @req.pb -H "Content-Type: application/x-protobuf" \
    -H "X-Scope-OrgID: acme" "$SERVER_URL/v1development/profiles")
[ "$st" = 200 ] || fail "OTLP upload: $st $(cat out)"
SPAN=eee19b7ec3c1b174
TRACE=5b8efff798038103d269b633813fc60c
q="service=otlp-app&type=cpu&from=$(($(date +%s) - 86400))"
st=$(server_curl all.json -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/flamegraph?$q")
[ "$st" = 200 ] || fail "flamegraph: $st $(cat all.json)"
st=$(server_curl span.json -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/flamegraph?$q&tagfocus=span_id=$SPAN")
[ "$st" = 200 ] || fail "flamegraph of the span: $st $(cat span.json)"
total=$(json all.json 'd["total"]')
span_total=$(json span.json 'd["matched"]')
[ "$span_total" -gt 0 ] && [ "$span_total" -lt "$total" ] || fail "the span's total $span_total of $total"
mkdir -p shots
cat >cfg.json <<J
{"url": "$SERVER_URL", "out": "$TMP/shots", "span": "$SPAN", "trace": "$TRACE",
 "total": $total, "span_total": $span_total, "span_leaf": "helper"}
J
node "$SRC/tests/integration/web_trace.js" cfg.json || fail "web_trace.js"
echo "PASS: $(basename "$0")"
