# web_flame.sh — `hotspur flame` pages in real headless Chromium
# (playwright-core): the shared web/flamegraph.js draws a viewport, so a
# graph 5000 frames deep (85 000 px, past the 65 535 px canvas limit) scrolls
# in a canvas the size of the window, its deepest frames drawn at the top and
# clickable; a 100 000-node page draws (redraw time printed, not asserted).
source "$(dirname "$0")/lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
# node and Chromium run without the ASan runtime lib.sh preloads in sanitizer builds (env -u LD_PRELOAD)
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/playwright-core" ] || fail "playwright-core is missing: run scripts/install-deps (npm ci in tests/node)"

python3 - <<'PY'
import random
frames = ["main"] + ["f%d" % i for i in range(1, 5001)]
with open("deep.folded", "w") as out:
    out.write(";".join(frames) + " 10\n")
    out.write(";".join(frames[:2000]) + " 5\n")
    out.write("main;other_branch 3\n")
random.seed(3)
fns = ["fn_%d" % i for i in range(3000)]
seen = set()
with open("big.folded", "w") as out:
    while len(seen) < 100000:
        st = ";".join(["main"] + [random.choice(fns[: 30 * k + 30]) for k in range(random.randint(3, 20))])
        if st not in seen:
            seen.add(st)
            out.write("%s %d\n" % (st, random.randint(1, 1000)))
PY
"$HOTSPUR" flame deep.folded -o deep.html 2>/dev/null
"$HOTSPUR" flame big.folded -o big.html 2>/dev/null
cat > config.json <<J
{"tmp": "$TMP", "deep": "$TMP/deep.html", "deepFrames": 5000, "big": "$TMP/big.html"}
J
timeout 240 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" flame config.json || fail "the flame graph pages misbehave in Chromium"
pass "flame pages: a 5000-deep graph scrolls in a viewport canvas, 100k nodes draw"
