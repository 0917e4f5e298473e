# flame_html.sh — `hotspur flame` writes one self-contained HTML file: no
# http(s) src/href/url() (nothing fetched from the network), the profile's
# frames are in its data, its script has no syntax errors (node --check) and
# runs: tests/integration/flame_smoke.js drives it in node with a stand-in
# DOM/canvas (draw, tooltip, click-zoom, search share, toggles). Also: the
# differential flame graph (`diff --flame`) when `hotspur diff` has it, a
# page with 100 000 distinct stacks (first draw and redraw times printed),
# and usage errors.
source "$(dirname "$0")/lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed to check the flame graph's script"

check_page() { # HTML SEARCH
    [ -s "$1" ] || fail "$1 is empty"
    if grep -Eio '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?[[:space:]]*(https?:)?//' "$1" | head -3 | grep -q .; then
        fail "$1 references the network: $(grep -Eio '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?(https?:)?//[^ ]*' "$1" | head -3)"
    fi
    ! grep -Eiq 'url\([[:space:]]*["'"'"']?(https?:)?//|@import|<link[^>]*stylesheet' "$1" || fail "$1 loads external CSS"
    [ "$(grep -c '<script src' "$1")" = 0 ] || fail "$1 loads an external script"
    python3 - "$1" <<'PY' || fail "$1: cannot extract its script"
import re, sys
s = open(sys.argv[1], encoding="utf-8").read()
open("page.js", "w").write(re.search(r"<script>(.*?)</script>", s, re.S).group(1))
PY
    node --check page.js || fail "$1: the script has syntax errors"
    node "$SRC/tests/integration/flame_smoke.js" "$1" "$2" || fail "$1: the page fails when driven"
}

"$HOTSPUR" flame "$SRC/tests/data/stacks.folded" -o fx.html 2>/dev/null
check_page fx.html compute
for name in 'compute' 'std::vector<int' 'recurse' 'worker (lambda #1)'; do
    python3 - fx.html "$name" <<'PY' || fail "frame '$name' is not in the page's data"
import json, re, sys
s = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="hs-data" type="application/json">(.*?)</script>', s, re.S).group(1))
assert any(sys.argv[2] in n for n in d["names"]), sys.argv[2]
assert d["total"] == 118, d["total"]
PY
done
pass "flame: self-contained, data present, script runs"

# FlameGraph's palettes, --reverse (merged at the leaves), a "no samples" page
printf 'main;a;work 3\nmain;b;work 2\nmain;b 1\n' > rev.folded
for pal in hot mem io; do
    "$HOTSPUR" flame --palette $pal rev.folded -o p.$pal.html 2>/dev/null || fail "--palette $pal failed"
    grep -q "\"palette\":\"$pal\"" p.$pal.html || fail "--palette $pal not in the page"
done
check_page p.mem.html work
rc=0; "$HOTSPUR" flame --palette nosuch rev.folded -o x.html 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--palette nosuch: exit $rc"
"$HOTSPUR" flame --reverse rev.folded -o rev.html 2>/dev/null || fail "--reverse failed"
check_page rev.html work
python3 - rev.html <<'PY' || fail "--reverse tree is wrong"
import json, re, sys
s = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="hs-data" type="application/json">(.*?)</script>', s, re.S).group(1))
names, n = d["names"], d["nodes"]
rows = [(names[n[i]], n[i + 1], n[i + 2]) for i in range(0, len(n), 3)]
# leaves at depth 1: work (5) above b and a, b (1) alone; callers above them
assert rows[0] == ("all", 0, 6), rows
assert ("work", 1, 5) in rows and ("b", 1, 1) in rows, rows
assert ("b", 2, 2) in rows and ("a", 2, 3) in rows and ("main", 3, 2) in rows, rows
assert not any(r[0] == "main" and r[1] == 1 for r in rows), rows
PY
"$HOTSPUR" flame --focus nothingmatchesthis rev.folded -o none.html 2>/dev/null || fail "flame of nothing failed"
grep -q 'id="no-samples"' none.html || fail "no explicit 'no samples' page"
grep -q 'none passed the filters' none.html || fail "the no-samples page does not say why"
pass "flame: palettes, --reverse, no-samples page, case-insensitive search"

# default output name and filters
"$HOTSPUR" flame "$SRC/tests/data/stacks.folded" --focus recurse 2>/dev/null
[ -s flame.html ] || fail "no flame.html by default"
grep -q '"recurse"' flame.html || fail "focus lost the focused frames"
! grep -q '"parse_args"' flame.html || fail "--focus recurse kept parse_args"

# a differential flame graph, when `hotspur diff` takes --flame
"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --to pprof -o base.pb.gz
sed -e 's/^main;run;compute 40$/main;run;compute 80/' -e '/io;write/d' \
    "$SRC/tests/data/stacks.folded" > new.folded
"$HOTSPUR" convert new.folded --to pprof -o new.pb.gz
if "$HOTSPUR" diff --help 2>/dev/null | grep -q -- '--flame'; then
    "$HOTSPUR" diff --flame base.pb.gz new.pb.gz -o d.html >/dev/null 2>&1 || fail "diff --flame failed"
    check_page d.html write
    python3 - d.html <<'PY' || fail "diff data is wrong"
import json, re
s = open("d.html", encoding="utf-8").read()
d = json.loads(re.search(r'<script id="hs-data" type="application/json">(.*?)</script>', s, re.S).group(1))
assert d["diff"] is True
names, n = d["names"], d["nodes"]
rec = [n[i:i + 4] for i in range(0, len(n), 4)]
w = [r for r in rec if names[r[0]] == "write"]
assert w and w[0][2] == 0 and w[0][3] == 12, w      # vanished: new 0, base 12
c = [r for r in rec if names[r[0]] == "compute"]
assert c and c[0][2] == 102 and c[0][3] == 62, c    # grew by 40
PY
    pass "diff --flame: vanished stacks kept, deltas right"
else
    echo "NOTE: hotspur diff has no --flame yet; differential page not checked"
fi

# 100 000 distinct stacks
python3 - <<'PY'
import random
random.seed(7)
fns = ["fn_%d" % i for i in range(4000)]
seen = set()
with open("big.folded", "w") as out:
    while len(seen) < 100000:
        depth = random.randint(3, 25)
        st = ";".join(["main"] + [random.choice(fns[: 40 * k + 40]) for k in range(depth)])
        if st not in seen:
            seen.add(st)
            out.write("%s %d\n" % (st, random.randint(1, 1000)))
PY
"$HOTSPUR" flame big.folded -o big.html 2>/dev/null
echo "big.html: $(wc -c < big.html) bytes for 100000 stacks"
check_page big.html 'fn_1[0-9]$'

# a real browser, when one is installed: headless Chromium loads the page
# with the network off and the script must run to its end (data-hs-ready)
if command -v chromium >/dev/null; then
    for page in fx.html big.html; do
        # the page's script runs synchronously while parsing, so the DOM
        # dumped at load shows whether it ran to its end; one retry for a
        # browser start that stalls on a loaded machine. Not under the ASan
        # runtime that lib.sh preloads in sanitizer builds: Chromium hangs.
        for try in 1 2; do
            env -u LD_PRELOAD timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
                --user-data-dir="$(mktemp -d -p "$TMP")" --dump-dom "file://$PWD/$page" \
                2>/dev/null > dom.html || true
            if grep -q 'data-hs-ready="[1-9]' dom.html; then break; fi
        done
        grep -q 'data-hs-ready="[1-9]' dom.html || fail "$page: the script did not run to its end in Chromium"
        grep -q 'id="legend">[^<]*total' dom.html || fail "$page: Chromium shows no legend"
    done
    pass "flame: pages run in headless Chromium"
else
    echo "NOTE: chromium is not installed; the pages were checked in node only"
fi

# usage errors: one line, exit 2
set +e
"$HOTSPUR" flame 2>e1; r1=$?
"$HOTSPUR" flame --nodecount 5 x 2>e2; r2=$?
"$HOTSPUR" flame /nonexistent 2>e3; r3=$?
set -e
[ "$r1$r2$r3" = 222 ] || fail "flame usage errors: exit $r1 $r2 $r3, want 2"
[ "$(cat e1 e2 e3 | wc -l)" = 3 ] || fail "flame usage errors are not one line each"
pass "flame: 100k stacks, usage errors"
