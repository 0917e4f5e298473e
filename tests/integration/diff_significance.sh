#!/usr/bin/env bash
# diff_significance.sh — `hotspur diff --significance BASE_URL NEW_URL`
# (issue 28): the p column of the CLI's diff of two `hotspur serve` queries
# is the web UI's (/api/v1/diff?significance=1): 4 windows a side, f's share
# 40-43% in every base window and 60-63% in every new one (exact p = 2/70),
# g shrinks in every window, h has the same four shares on both sides
# (p = 1). The CLI's p of every function equals the API's; f and g are
# marked "*", h is not. A side of one window: the table without a p column
# and a note saying why; file arguments are refused. id=ID selects one
# window in /api/v1/profile (what the CLI fetches).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

sigw() { # NAME F H G
    printf 'main;f %s\nmain;h %s\nmain;g %s\n' "$2" "$3" "$4" >"$1.folded"
    "$HOTSPUR" convert "$1.folded" --to pprof -o "$1.pb.gz"
}
sigw a0 40 20 40; sigw a1 41 23 36; sigw a2 42 21 37; sigw a3 43 22 35
sigw b0 60 21 19; sigw b1 61 22 17; sigw b2 62 20 18; sigw b3 63 23 14
server_start
now=$(date +%s)
ingest() { # FILE VERSION START ID
    local st
    st=$(server_curl ingest.out -X POST --data-binary "@$1" -H 'Content-Type: application/octet-stream' \
        "$SERVER_URL/api/v1/ingest?service=sig&version=$2&id=$4&from=$3&until=$(($3 + 10))")
    [ "$st" = 200 ] || fail "ingest of $1: HTTP $st: $(cat ingest.out)"
}
for i in 0 1 2 3; do
    ingest a$i.pb.gz a $((now - 300 + 20 * i)) a-$i
    ingest b$i.pb.gz b $((now - 150 + 20 * i)) b-$i
done
ingest a0.pb.gz c $((now - 30)) c0

q="$SERVER_URL/api/v1/profile?service=sig&type=samples&from=now-1h"
# id=ID: one window
"$HOTSPUR" convert --to collapsed "$q&id=b-2" >one.txt 2>err || fail "id=: $(cat err)"
[ "$(sort one.txt)" = "$(sort b2.folded)" ] || fail "id=b-2 gave: $(cat one.txt)"

"$HOTSPUR" diff --significance "$q&version=a" "$q&version=b" >cli.txt 2>cli.err ||
    fail "diff --significance: $(cat cli.err)"
cat cli.txt
server_curl api.json "$SERVER_URL/api/v1/diff?service=sig&type=samples&from=now-1h&version=b&base_version=a&significance=1" >/dev/null
python3 - cli.txt api.json <<'PY' || fail "the CLI's p column differs from the API's (above)"
import json, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 6 and f[5] in ("f", "g", "h", "main"):
        rows[f[5]] = f[4]
api = {x["name"]: x["p"] for x in json.load(open(sys.argv[2]))["functions"]}
assert set(rows) == {"f", "g", "h", "main"}, rows
for name, p in rows.items():
    star = p.endswith("*")
    v = float(p.rstrip("*").lstrip("<"))
    want = api[name]
    assert abs(v - want) < 0.0005 or (p.startswith("<") and want < 0.001), (name, p, want)
    assert star == (want < 0.05), (name, p, want)
assert rows["f"] == "0.029*" and rows["h"] == "1.000" and rows["g"].endswith("*"), rows
print("ok: p column equals the API's:", rows)
PY
grep -q '^p: Mann-Whitney U test .* the 4 BASE windows against the 4 NEW ones' cli.txt || fail "no legend: $(cat cli.txt)"

# 3 windows a side: the legend says no p can reach 0.05
"$HOTSPUR" diff --significance "$q&version=a&until=$((now - 250))" "$q&version=b&until=$((now - 100))" >three.txt 2>three.err ||
    fail "3 windows: $(cat three.err)"
grep -q '^p: .* the 3 BASE windows against the 3 NEW ones, \* p < 0.05 (too few windows: no p can be below it; 4 a side are needed)$' three.txt ||
    fail "3 windows a side: $(cat three.txt)"
grep -q '^p: .*needed' cli.txt && fail "4 windows a side said too few: $(cat cli.txt)"
# one window on a side: no p column, a note, exit 0
"$HOTSPUR" diff --significance "$q&version=c" "$q&version=b" >one.txt 2>one.err || fail "one window: $(cat one.err)"
grep -q 'BASE has 1 window, the test needs 2 to 32 a side; no p column' one.err || fail "one window: $(cat one.err)"
grep -q '^p:' one.txt && fail "a p column with one base window: $(cat one.txt)"
grep -qE '^ +base +new +delta +delta% +name$' one.txt || fail "one window: $(cat one.txt)"
# files are not queries
"$HOTSPUR" diff --significance a0.pb.gz b0.pb.gz >/dev/null 2>file.err && fail "files accepted"
grep -q 'needs `hotspur serve` queries' file.err || fail "files: $(cat file.err)"
server_alive || fail "the server died"
pass "diff --significance: the API's p-values in the CLI's table (f, g marked, h not), one window explained, files refused, id= selects a window"
