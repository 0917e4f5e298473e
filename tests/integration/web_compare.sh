# web_compare.sh — the compare story in the browser (issue 28), in headless
# Chromium (playwright-core, Debian's chromium) against a `hotspur serve`
# with profiles of known values, read through the documented hook
# window.hsUI.fg.frames() (docs/web-ui.md):
#  - service cmp: version 1's hot function line_matches_regex is gone in
#    version 2 and memmem is new: the differential graph draws both, each
#    as wide as its larger side (within 1%), labelled, hoverable, and the
#    callers/callees of count_matches draws as many callees as it counts;
#  - service norm: version a is 3 windows, version b 6 windows of the same
#    stacks: compared per profile by default (no change), said on the page,
#    and the sum is one switch away;
#  - service sig: 4 windows a side, f's share changed in every window, h's
#    not: the diff table, the graph's outline and the API mark f alone
#    (Mann-Whitney on per-window shares);
#  - service heapn: 4 equal heap windows: the in-use graph's root is one
#    window's in-use bytes (an average, not 4 times it);
#  - bad URLs (unknown service, type, version, a bad span) say what was
#    asked and why it cannot be shown, and keep the URL; an empty range says
#    so and offers the range where the profiles are.
source "$(dirname "$0")/lib.sh"
# curl, node and Chromium hang under the ASan runtime lib.sh preloads in sanitizer builds
unset LD_PRELOAD
source "$(dirname "$0")/server_lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/playwright-core" ] || fail "playwright-core is missing: run scripts/install-deps (npm ci in tests/node)"

cat > v1.folded <<'F'
main;handle;count_matches;line_matches_regex;regcomp 80
main;handle;count_matches;line_matches_regex 10
main;handle;count_matches;strstr 5
main;handle;read 5
F
cat > v2.folded <<'F'
main;handle;count_matches;strstr 20
main;handle;count_matches;memmem 10
main;handle;read 5
F
cat > w.folded <<'F'
main;work;compute 60
main;work;parse 30
main;io 10
F
for f in v1 v2 w; do "$HOTSPUR" convert $f.folded --to pprof -o $f.pb.gz; done
# significance: 4 windows a side; f's share is 40-43% in every base window
# and 60-63% in every new one (Mann-Whitney exact p = 2/70), h's 20-23% on
# both sides (the same four values: p = 1), g shrinks
sigw() { # NAME F H G
    printf 'main;f %s\nmain;h %s\nmain;g %s\n' "$2" "$3" "$4" > "$1.folded"
    "$HOTSPUR" convert "$1.folded" --to pprof -o "$1.pb.gz"
}
sigw a0 40 20 40; sigw a1 41 23 36; sigw a2 42 21 37; sigw a3 43 22 35
sigw b0 60 21 19; sigw b1 61 22 17; sigw b2 62 20 18; sigw b3 63 23 14

# in-use: 4 equal heap windows (alloc_objects alloc_space inuse_objects inuse_space)
printf 'main;grow 100 10000000 400 40000000\nmain;keep 1 1000 1 5000000\n' > heap.folded4
python3 "$SRC/tests/integration/pbwire.py" heap heap.folded4 heap.pb.gz
server_start
now=$(date +%s)
ingest() { # FILE SERVICE VERSION START
    local st
    st=$(server_curl ingest.out -X POST --data-binary "@$1" -H 'Content-Type: application/octet-stream' \
        "$SERVER_URL/api/v1/ingest?service=$2&version=$3&from=$4&until=$(($4 + 10))")
    [ "$st" = 200 ] || fail "ingest of $1: HTTP $st: $(cat ingest.out)"
}
ingest v1.pb.gz cmp 1 $((now - 200))
ingest v2.pb.gz cmp 2 $((now - 100))
for i in 1 2 3; do ingest w.pb.gz norm a $((now - 300 + 20 * i)); done
for i in 1 2 3 4 5 6; do ingest w.pb.gz norm b $((now - 150 + 20 * i)); done
for i in 0 1 2 3; do ingest a$i.pb.gz sig a $((now - 300 + 20 * i)); ingest b$i.pb.gz sig b $((now - 150 + 20 * i)); done
for i in 1 2 3 4; do
    st=$(server_curl ingest.out -X POST --data-binary @heap.pb.gz -H 'Content-Type: application/octet-stream' \
        "$SERVER_URL/api/v1/ingest?service=heapn&type=heap&from=$((now - 300 + 20 * i))&until=$((now - 290 + 20 * i))")
    [ "$st" = 200 ] || fail "ingest of heap window $i: HTTP $st: $(cat ingest.out)"
done
mkdir -p screenshots
cat > config.json <<J
{"url": "$SERVER_URL", "out": "$TMP/screenshots", "tmp": "$TMP", "now": $now,
 "v1": "$TMP/v1.folded", "v2": "$TMP/v2.folded", "w": "$TMP/w.folded",
 "heap": "$TMP/heap.folded4", "heapWindows": 4}
J
timeout 300 env -u LD_PRELOAD node "$SRC/tests/integration/web_compare.js" config.json || fail "the compare story in the browser (see above)"
server_alive || fail "the server died during the browser test"
pass "web compare: gone and new frames drawn at their width, per-profile compare of unequal counts, in-use averaged, bad URLs and empty ranges explained"
