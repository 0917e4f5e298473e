# web_ui_firefox.sh — the web UI of `hotspur serve` in headless Firefox
# (Debian's firefox-esr, driven by puppeteer-core over WebDriver BiDi): a
# server on a free loopback port with a temporary store gets three profiles
# made from folded stacks with known counts; web_ui_firefox.js loads the
# page, checks that the flame graph is drawn, zooms by a mouse click and
# checks root total, tooltip, function table and a filter against values
# computed from the folded files, that a compare draws a gone frame at
# its base width, and the compare checks web_compare.sh runs in Chromium
# (web_compare_checks.js): 3 vs 6 equal windows compared per profile show
# no change, in-use of 4 equal heap windows is one window's, bad URLs and an
# empty range say so. A screenshot is left in
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
# per profile: service norm, version a 3 windows and version b 6 of the same stacks
printf 'main;work;compute 60\nmain;work;parse 30\nmain;io 10\n' > w.folded
"$HOTSPUR" convert w.folded --to pprof -o w.pb.gz
# in-use: service heapn, 4 equal heap windows (alloc_objects alloc_space inuse_objects inuse_space)
printf 'main;grow 100 10000000 400 40000000\nmain;keep 1 1000 1 5000000\n' > heap.folded4
python3 "$SRC/tests/integration/pbwire.py" heap heap.folded4 heap.pb.gz
up() { # FILE QUERY
    local st
    st=$(server_curl ingest.out -X POST --data-binary "@$1" -H 'Content-Type: application/octet-stream' "$SERVER_URL/api/v1/ingest?$2")
    [ "$st" = 200 ] || fail "ingest of $1 ($2): HTTP $st: $(cat ingest.out)"
}
for i in 1 2 3; do up w.pb.gz "service=norm&version=a&from=$((now - 300 + 20 * i))&until=$((now - 290 + 20 * i))"; done
for i in 1 2 3 4 5 6; do up w.pb.gz "service=norm&version=b&from=$((now - 150 + 20 * i))&until=$((now - 140 + 20 * i))"; done
for i in 1 2 3 4; do up heap.pb.gz "service=heapn&type=heap&from=$((now - 300 + 20 * i))&until=$((now - 290 + 20 * i))"; done
python3 - config.json "$TMP" "$now" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); t = sys.argv[2]
c.update(cmp=[t + "/cmp1.folded", t + "/cmp2.folded"], w=t + "/w.folded", heap=t + "/heap.folded4", heapWindows=4,
         now=int(sys.argv[3]))
json.dump(c, open(sys.argv[1], "w"))
PY
# Firefox wants a writable HOME for its caches
HOME=$TMP timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui_firefox.js" config.json ||
    fail "the web UI in Firefox does not show what it should (see above)"
server_alive || fail "the server died during the browser test"
[ -s screenshots/firefox-flame.png ] || fail "no screenshot of the flame graph in Firefox"
pass "web UI in Firefox: drawn flame graph, click zoom, breadcrumb, tooltip, function table, filter, a gone frame in a compare, per-profile compare of 3 vs 6 equal windows, in-use of 4 equal windows, bad URLs"
