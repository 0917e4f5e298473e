# server_debuginfo.sh — the server names frames sent as addresses (issue
# 31): a C++ program and its library built -g, profiled with
# HOTSPUR_SYMBOLIZE=server, then stripped. Before their debug info is
# uploaded the stored frames are "app+0x..." with the build ID kept; after
# `hotspur debuginfo upload` of the .debug files, the same stored profile
# reads exactly as the unstripped binaries symbolize it (what `record`
# writes: template and inline frames, files, lines); two builds of the
# library at one path, with two build IDs, are never mixed up; a restart
# keeps the uploads and the answers; bad uploads get a 4xx and store nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
source "$(dirname "$0")/debuginfo_lib.sh"

build_lib alpha
build_app
raw_profile a.pb.gz
BID_APP=$(build_id_of "$TMP/app")
BID_A=$(build_id_of "$TMP/lib/libnm.so")
# the reference: the same addresses symbolized from the unstripped files, as record does
"$HOTSPUR" symbolize -o ref_a.pb.gz a.pb.gz || fail "symbolize a.pb.gz failed"
top_ours ref_a.pb.gz >ref_a.txt
grep -q 'app::Spinner<3>::run' ref_a.txt || fail "reference has no template frame: $(cat ref_a.txt)"
grep -q 'inline' ref_a.txt || fail "reference has no inline frame: $(cat ref_a.txt)"
grep -q 'nm::alpha_step' ref_a.txt || fail "reference has no library frame: $(cat ref_a.txt)"

# version B of the library at the same path
build_lib beta
raw_profile b.pb.gz
BID_B=$(build_id_of "$TMP/lib/libnm.so")
[ "$BID_A" != "$BID_B" ] || fail "the two builds of libnm.so have one build ID"
"$HOTSPUR" symbolize -o ref_b.pb.gz b.pb.gz || fail "symbolize b.pb.gz failed"
top_ours ref_b.pb.gz >ref_b.txt
grep -q 'nm::beta_step' ref_b.txt || fail "reference b has no beta frame"
strip_all

# only uploads: the local files (stripped now) and /usr/lib/debug are not asked
server_start --debuginfo-sources upload
ingest a.pb.gz a
ingest b.pb.gz b
top_ours "$(query a)" >before.txt
[ ! -s before.txt ] || fail "frames named before any upload: $(cat before.txt)"
"$HOTSPUR" top --nodecount 1000 "$(query a)" >before_all.txt
grep -qE 'app\+0x[0-9a-f]+' before_all.txt || fail "unnamed frames do not read app+0xOFF: $(head -20 before_all.txt)"
curl -s --max-time 30 "$(query a)" | gzip -dc | grep -qa "build-id:$BID_APP" ||
    fail "the stored profile lost the build ID of its unnamed frames"
# the flame graph and the callers/callees trees give each unnamed frame's build ID (the UI's tooltip)
fg="$SERVER_URL/api/v1/flamegraph?service=a&type=cpu&from=now-1h"
curl -s --max-time 30 "$fg" >fg.json || fail "flamegraph query failed"
python3 - fg.json "$BID_APP" <<'PY' || fail "the flame graph does not give app+0xOFF frames their build ID: $(head -c 400 fg.json)"
import json, re, sys
d, want = json.load(open(sys.argv[1])), sys.argv[2]
bids = d.get("build_ids", {})
unnamed = [i for i, n in enumerate(d["names"]) if re.fullmatch(r"app\+0x[0-9a-f]+", n)]
assert unnamed, "no app+0xOFF names"
assert all(bids.get(str(i)) == want for i in unnamed), (unnamed[:3], bids)
assert all(re.fullmatch(r"\S+\+0x[0-9a-f]+", d["names"][int(i)]) for i in bids), "a named frame has a build ID"
PY
pass "before the upload: frames are app+0xOFF with build ID $BID_APP (in the profile and the flame graph)"

# upload after the fact: the history gets its names
"$HOTSPUR" debuginfo upload --server "$SERVER_URL" "$TMP/app.debug" "$TMP/libnm.alpha.debug" >up.txt ||
    fail "debuginfo upload failed: $(cat up.txt)"
grep -q "$BID_APP" up.txt || fail "upload did not print the build ID: $(cat up.txt)"
top_ours "$(query a)" >after_a.txt
diff ref_a.txt after_a.txt >/dev/null || { diff ref_a.txt after_a.txt | head -20; fail "profile a named at the server differs from the reference"; }
pass "after the upload: profile a reads as the unstripped binaries symbolize it ($(wc -l <ref_a.txt) rows)"

# b's library is another build: its frames must not take alpha's names
top_ours "$(query b)" >b_partial.txt
grep -q 'alpha' b_partial.txt && fail "build B's frames were named from build A's debug info: $(cat b_partial.txt)"
grep -q 'nm::beta_step' b_partial.txt && fail "build B named before its upload"
"$HOTSPUR" debuginfo upload --server "$SERVER_URL" "$TMP/libnm.beta.debug" >/dev/null || fail "upload of beta failed"
top_ours "$(query b)" >after_b.txt
diff ref_b.txt after_b.txt >/dev/null || { diff ref_b.txt after_b.txt | head -20; fail "profile b differs from its reference"; }
top_ours "$(query a)" >after_a2.txt
cmp -s ref_a.txt after_a2.txt || fail "profile a changed when build B's debug info arrived"
pass "two builds of libnm.so ($BID_A, $BID_B) named each from its own debug info"

# ingest after the upload: named at ingest, the same answer
ingest a.pb.gz a2
top_ours "$(query a2)" >a2.txt
cmp -s ref_a.txt a2.txt || fail "a profile named at ingest differs from the reference"

"$HOTSPUR" debuginfo ls --server "$SERVER_URL" >ls.txt || fail "debuginfo ls failed"
for b in "$BID_APP" "$BID_A" "$BID_B"; do grep -q "$b" ls.txt || fail "ls lacks $b: $(cat ls.txt)"; done

# a restart keeps uploads and answers (the answers' cache is on disk)
DATA=$SERVER_DATA
server_stop
[ -s "$DATA/debuginfo/names-cache.sqlite" ] || fail "no answer cache on disk"
server_start --data "$DATA" --debuginfo-sources upload
top_ours "$(query a)" >restart_a.txt
cmp -s ref_a.txt restart_a.txt || fail "after a restart profile a reads differently"
curl -s --max-time 30 "$SERVER_URL/api/v1/stats" >stats.json || true
pass "a restart keeps the uploads and the names"

# rm: the frames go back to addresses
"$HOTSPUR" debuginfo rm --server "$SERVER_URL" "$TMP/libnm.beta.debug" >/dev/null || fail "debuginfo rm failed"
top_ours "$(query b)" >rm_b.txt
grep -q 'nm::beta_step' rm_b.txt && fail "beta still named after its debug info was removed"
st=$(server_curl /dev/null -X DELETE "$SERVER_URL/api/v1/debuginfo/$BID_B")
[ "$st" = 404 ] || fail "removing it twice answered $st, not 404"

# bad input: a clear 4xx, nothing stored
ls_before=$("$HOTSPUR" debuginfo ls --server "$SERVER_URL")
printf 'not an elf file\n' >junk
st=$(server_curl out.json -X PUT --data-binary @junk "$SERVER_URL/api/v1/debuginfo/$BID_B")
[ "$st" = 400 ] && grep -q "not an ELF" out.json || fail "a non-ELF upload answered $st: $(cat out.json)"
st=$(server_curl out.json -X PUT --data-binary @"$TMP/libnm.alpha.debug" "$SERVER_URL/api/v1/debuginfo/$BID_B")
[ "$st" = 400 ] && grep -q "build ID is $BID_A" out.json || fail "a build ID mismatch answered $st: $(cat out.json)"
st=$(server_curl out.json -X PUT --data-binary @"$TMP/app" "$SERVER_URL/api/v1/debuginfo/$BID_APP")
[ "$st" = 400 ] && grep -q "no debug info" out.json || fail "a stripped binary answered $st: $(cat out.json)"
truncate -s 2G big # sparse: 2 GiB announced, nothing written to disk
st=$(server_curl out.json -X PUT -T big "$SERVER_URL/api/v1/debuginfo/$BID_B")
[ "$st" = 413 ] || fail "a 2 GiB upload answered $st: $(cat out.json)"
rm -f big
for bad in '../../../../tmp/x' '..%2F..%2Fetc%2Fpasswd' 'ABCDEF' '0' "${BID_B}/.." 'zz'; do
    st=$(server_curl out.json --path-as-is -X PUT --data-binary @"$TMP/libnm.beta.debug" "$SERVER_URL/api/v1/debuginfo/$bad")
    case $st in 4??) ;; *) fail "build ID '$bad' answered $st: $(cat out.json)" ;; esac
done
[ ! -e /tmp/x ] || [ /tmp/x -ot junk ] || fail "a path-traversal upload wrote /tmp/x"
ls_after=$("$HOTSPUR" debuginfo ls --server "$SERVER_URL")
[ "$ls_before" = "$ls_after" ] || fail "a refused upload changed the uploads: $ls_after"
leftover=$(find "$DATA/debuginfo" -name '.upload-*' | wc -l)
[ "$leftover" = 0 ] || fail "$leftover temporary upload files left behind"
server_alive || fail "the server died on bad input"
pass "non-ELF, mismatched build ID, no debug info, 2 GiB, bad build IDs: 4xx, nothing stored"
