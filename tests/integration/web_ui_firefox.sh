# web_ui_firefox.sh — the web UI of `hotspur serve` in headless Firefox
# (Debian's firefox-esr, driven by puppeteer-core over WebDriver BiDi): a
# server on a free loopback port with a temporary store gets three profiles
# made from folded stacks with known counts; web_ui_firefox.js loads the
# page, checks that the flame graph is drawn, zooms by a mouse click and
# checks root total, tooltip, function table and a filter against values
# computed from the folded files. A screenshot is left in
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
# Firefox wants a writable HOME for its caches
HOME=$TMP timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui_firefox.js" config.json ||
    fail "the web UI in Firefox does not show what it should (see above)"
server_alive || fail "the server died during the browser test"
[ -s screenshots/firefox-flame.png ] || fail "no screenshot of the flame graph in Firefox"
pass "web UI in Firefox: drawn flame graph, click zoom, breadcrumb, tooltip, function table, filter"
