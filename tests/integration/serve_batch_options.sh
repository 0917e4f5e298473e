#!/usr/bin/env bash
# serve_batch_options.sh — `hotspur serve`'s group-commit options
# (--batch-max, --batch-wait, --batch-linger, --batch-writers): listed in
# --help, bad values refused with exit 2 and a message, and a server with
# all four set stores concurrent uploads (each answered once stored) and
# really lingers: a lone upload is answered no sooner than --batch-wait.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
# curl hangs with the ASan runtime lib.sh preloads in sanitized builds.
unset LD_PRELOAD

"$HOTSPUR" serve --help >help.txt || fail "serve --help exits $?"
for o in --batch-max --batch-wait --batch-linger --batch-writers; do
    grep -q -- "^  $o " help.txt || fail "serve --help does not list $o"
done
for bad in "--batch-max 0" "--batch-max 1025" "--batch-max 12x" "--batch-wait -1" "--batch-wait 10001" \
    "--batch-linger maybe" "--batch-writers 0" "--batch-writers 17"; do
    rc=0
    # shellcheck disable=SC2086 # option and value
    timeout 20 "$HOTSPUR" serve --data "$TMP/never" --listen 127.0.0.1:0 $bad >out.txt 2>err.txt </dev/null || rc=$?
    [ "$rc" = 2 ] || fail "serve $bad: exit $rc, expected 2: $(cat err.txt)"
    grep -q -- "${bad%% *}" err.txt || fail "serve $bad: the message does not name the option: $(cat err.txt)"
done
[ ! -e "$TMP/never" ] || fail "a refused serve created its data directory"
pass "--help lists the --batch-* options; bad values exit 2 naming the option"

"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
server_start --batch-max 4 --batch-wait 400 --batch-linger yes --batch-writers 3
now=$(date +%s)
pids=()
for i in $(seq 1 10); do
    server_curl "up$i.json" --data-binary @prof.pb.gz "$SERVER_URL/api/v1/ingest?service=batch&type=cpu&id=b-$i&from=$now" >"st$i" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for i in $(seq 1 10); do
    [ "$(cat "st$i")" = 200 ] && grep -q '"stored":1' "up$i.json" || fail "upload $i: $(cat "st$i") $(cat "up$i.json")"
done
server_curl list.json "$SERVER_URL/api/v1/profiles?service=batch&type=cpu&from=0" >/dev/null
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["profiles"]))' list.json)
[ "$n" = 10 ] || fail "10 uploads answered stored, $n profiles listed: $(cat list.json)"
# A lone upload waits the whole window with --batch-linger yes (a lower
# bound: it cannot be answered sooner, however slow the machine).
t=$(curl -s -o lone.json -w '%{time_total}' --data-binary @prof.pb.gz "$SERVER_URL/api/v1/ingest?service=batch&type=cpu&id=lone&from=$now")
grep -q '"stored":1' lone.json || fail "lone upload: $(cat lone.json)"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.4 else 1)' "$t" ||
    fail "with --batch-wait 400 --batch-linger yes a lone upload was answered after $t s"
server_stop
pass "--batch-max 4 --batch-wait 400 --batch-linger yes --batch-writers 3: 10 concurrent uploads stored; a lone upload lingers ${t}s >= 0.4 s"
