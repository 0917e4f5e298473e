# web_ui_firefox.sh — the web UI of `hotspur serve` in headless Firefox
# (Debian's firefox-esr, driven by puppeteer-core over WebDriver BiDi): a
# server on a free loopback port with a temporary store gets three profiles
# made from folded stacks with known counts; web_ui_firefox.js loads the
# page, checks that the flame graph is drawn, zooms by a mouse click and
# checks root total, tooltip, function table and a filter against values
# computed from the folded files, and that a compare draws a gone frame at
# its base width. A screenshot is left in
# $TMP/screenshots/firefox-flame.png. (web_ui.sh: the full tour in Chromium.)
source "$(dirname "$0")/lib.sh"
# curl, node and Firefox hang under the ASan runtime lib.sh preloads in
# sanitizer builds (hotspur links its own)
unset LD_PRELOAD
source "$(dirname "$0")/server_lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
[ -x /usr/bin/firefox-esr ] || fail "firefox-esr is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/puppeteer-core" ] || fail "puppeteer-core is missing: run scripts/install-deps (npm ci in tests/node)"

source "$(dirname "$0")/web_ui.inc"
# the compare: a function of version 1 gone in version 2 (service cmp)
printf 'main;count;regex 90\nmain;count;strstr 5\nmain;read 5\n' > cmp1.folded
printf 'main;count;strstr 20\nmain;count;memmem 10\nmain;read 5\n' > cmp2.folded
for v in 1 2; do
    "$HOTSPUR" convert cmp$v.folded --to pprof -o cmp$v.pb.gz
    st=$(server_curl ingest.out -X POST --data-binary "@cmp$v.pb.gz" -H 'Content-Type: application/octet-stream' \
        "$SERVER_URL/api/v1/ingest?service=cmp&version=$v&from=$((now - 60 * v))&until=$((now - 60 * v + 10))")
    [ "$st" = 200 ] || fail "ingest of cmp$v: HTTP $st: $(cat ingest.out)"
done
python3 - config.json "$TMP" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["cmp"] = [sys.argv[2] + "/cmp1.folded", sys.argv[2] + "/cmp2.folded"]
json.dump(c, open(sys.argv[1], "w"))
PY
# Firefox wants a writable HOME for its caches
HOME=$TMP timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui_firefox.js" config.json ||
    fail "the web UI in Firefox does not show what it should (see above)"
server_alive || fail "the server died during the browser test"
[ -s screenshots/firefox-flame.png ] || fail "no screenshot of the flame graph in Firefox"
pass "web UI in Firefox: drawn flame graph, click zoom, breadcrumb, tooltip, function table, filter, a gone frame in a compare"
