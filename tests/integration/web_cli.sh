# web_cli.sh — `hotspur web FILE...` and `hotspur web --base OLD NEW`: the
# server's UI on local files without a server database. Checks the printed
# URL is loopback, the page (headless Chromium, tests/integration/web_ui.js)
# shows the files' totals and, with --base, the compare view preselected
# with the right delta; SIGINT stops it with status 0 and the temporary
# store is deleted; usage errors are one line with status 2.
source "$(dirname "$0")/lib.sh"
command -v node >/dev/null || fail "node (nodejs) is needed"
# node and Chromium run without the ASan runtime lib.sh preloads in sanitizer builds (env -u LD_PRELOAD)
[ -x /usr/bin/chromium ] || fail "chromium is needed (scripts/install-deps)"
[ -d "$SRC/tests/node/node_modules/playwright-core" ] || fail "playwright-core is missing: run scripts/install-deps (npm ci in tests/node)"

cat > old.folded <<'F'
main;run;compute 40
main;run;parse 30
main;io;write 20
F
sed 's/^main;run;compute 40$/main;run;compute 75/' old.folded > new.folded
"$HOTSPUR" convert old.folded --to pprof -o old.pb.gz

WEB_PID=""
stop_web() { [ -z "$WEB_PID" ] || kill -KILL "$WEB_PID" 2>/dev/null || true; }
trap stop_web EXIT

# run_web OUT ARGS...: start hotspur web, wait for its URL (sets WEB_URL)
run_web() {
    local out=$1; shift
    mkdir -p "$TMP/tmpdir"
    TMPDIR="$TMP/tmpdir" "$HOTSPUR" web "$@" >"$out" 2>"$out.err" &
    WEB_PID=$!
    local i
    WEB_URL=""
    for ((i = 0; i < 300; i++)); do
        WEB_URL=$(grep -o 'http://[^ ]*' "$out" | head -n 1 || true)
        [ -n "$WEB_URL" ] && break
        kill -0 "$WEB_PID" 2>/dev/null || fail "hotspur web exited: $(cat "$out.err")"
        sleep 0.1
    done
    [ -n "$WEB_URL" ] || fail "hotspur web printed no URL: $(cat "$out" "$out.err")"
    case $WEB_URL in http://127.0.0.1:*) ;; *) fail "not a loopback URL: $WEB_URL" ;; esac
    [ "$(ls "$TMP/tmpdir")" != "" ] || fail "hotspur web keeps no temporary store under TMPDIR"
}
stop_and_check() {
    kill -INT "$WEB_PID"
    local rc=0
    timeout 20 tail --pid="$WEB_PID" -f /dev/null || fail "hotspur web did not stop on SIGINT"
    wait "$WEB_PID" || rc=$?
    WEB_PID=""
    [ $rc = 0 ] || fail "hotspur web exited $rc on SIGINT: $(cat "$1.err")"
    [ -z "$(ls "$TMP/tmpdir")" ] || fail "the temporary store was not deleted: $(ls "$TMP/tmpdir")"
}

# two files (a pprof and a folded one), each a version
run_web web1.out old.pb.gz new.folded
cat > c1.json <<J
{"url": "$WEB_URL", "tmp": "$TMP", "out": "$TMP",
 "profiles": [{"folded": "$TMP/old.folded", "version": "old"}, {"folded": "$TMP/new.folded", "version": "new"}]}
J
timeout 120 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" web c1.json || fail "hotspur web FILE...: the page is wrong"
stop_and_check web1.out
pass "hotspur web FILE...: both files shown, stopped cleanly, store deleted"

# --base: the diff view preselected
run_web web2.out --base old.pb.gz new.folded
cat > c2.json <<J
{"url": "$WEB_URL", "tmp": "$TMP", "out": "$TMP", "base": true,
 "profiles": [{"folded": "$TMP/old.folded", "version": "base"}, {"folded": "$TMP/new.folded", "version": "new"}]}
J
timeout 120 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" web c2.json || fail "hotspur web --base: the page is wrong"
stop_and_check web2.out
pass "hotspur web --base: compare view with the right delta"

# usage errors: one line, exit 2
set +e
"$HOTSPUR" web 2>e1; r1=$?
"$HOTSPUR" web --bogus x 2>e2; r2=$?
"$HOTSPUR" web /nonexistent 2>e3; r3=$?
set -e
[ "$r1$r2$r3" = 222 ] || fail "hotspur web usage errors: exit $r1 $r2 $r3, want 2"
[ "$(cat e1 e2 e3 | wc -l)" = 3 ] || fail "hotspur web usage errors are not one line each: $(cat e1 e2 e3)"
pass "hotspur web: usage errors"

# the source view with --source-path: an exact heap profile of heap_sites
# (its allocation bytes are known: the program prints them), site_large's
# lines with their self values and text. Needs the agent's malloc hooks.
needs_malloc_interposition
"$HOTSPUR" record --heap --heap-rate 1 -o heap.pb.gz -- "$PROGS/heap_sites" exact >truth.txt 2>rec.err ||
    fail "record exited $?: $(cat rec.err)"
bytes=$(awk '$1 == "site" && $2 == "site_large" { print $4 }' truth.txt)
[ -n "$bytes" ] || fail "heap_sites printed no truth for site_large"
run_web web3.out --source-path "$SRC/tests/programs" heap.pb.gz
cat > c3.json <<J
{"url": "$WEB_URL", "tmp": "$TMP", "out": "$TMP", "profiles": [],
 "source": {"fn": "site_large", "sample": "alloc_space", "self": $bytes, "lineText": "malloc(size)"}}
J
timeout 120 env -u LD_PRELOAD node "$SRC/tests/integration/web_ui.js" web c3.json || fail "hotspur web --source-path: the source view is wrong"
stop_and_check web3.out
pass "hotspur web --source-path: the source view shows site_large's $bytes bytes on its malloc line"
