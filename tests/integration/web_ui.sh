# web_ui.sh — the web UI of `hotspur serve` in real headless Chromium
# (playwright-core from tests/node, Debian's chromium): a server on a free
# loopback port with a temporary store gets three profiles made from folded
# stacks with known counts (two of version 1, one of version 2, instances a
# and b); tests/integration/web_ui.js then asserts what the page shows —
# root total, sum/average, a function's self/total in the table, click zoom
# and breadcrumb, keyboard, callers/callees of a chosen function, filters
# and their share, compare versions/labels/time ranges (root delta, diff
# table), the URL restoring the view, the timeline drag, API errors, the
# pprof download — against values it computes from the folded files.
# Screenshots of the main views are left in $TMP/screenshots.
source "$(dirname "$0")/lib.sh"
# Nothing here runs under the agent, and curl, node and Chromium hang under
# the ASan runtime lib.sh preloads in sanitizer builds (hotspur links its own)
unset LD_PRELOAD
source "$(dirname "$0")/server_lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/playwright-core" ] || fail "playwright-core is missing: run scripts/install-deps (npm ci in tests/node)"

source "$(dirname "$0")/web_ui.inc"
timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" ui config.json || fail "the web UI does not show what it should (see above)"
server_alive || fail "the server died during the browser test"
for v in flame functions callers-callees compare; do
    [ -s "screenshots/$v.png" ] || fail "no screenshot of $v"
done
pass "web UI: totals, table, zoom, focus, filters, compare, URL state, timeline, errors (screenshots in $TMP/screenshots)"

# with --token the page asks for it and sends it (never in the URL)
server_start --token sekret-t0ken
st=$(server_curl ingest.out -X POST --data-binary @a.pb.gz -H 'Authorization: Bearer sekret-t0ken' \
    "$SERVER_URL/api/v1/ingest?service=web&version=1&from=$((now - 30))")
[ "$st" = 200 ] || fail "ingest with the token: HTTP $st: $(cat ingest.out)"
cat > config2.json <<J
{"url": "$SERVER_URL", "tmp": "$TMP", "token": "sekret-t0ken",
 "profiles": [{"folded": "$TMP/a.folded", "version": "1", "labels": {}, "start": $((now - 30))}]}
J
timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" token config2.json || fail "the web UI with --token (see above)"
pass "web UI with --token: asks for it, refuses a wrong one, works and downloads with it"
