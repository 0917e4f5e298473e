# continuous_e2e.sh — a real program under the agent in continuous mode
# uploads to a real `hotspur serve`:
#  - cpu_split (three threads with CPU shares 60/30/10 % by construction),
#    0.5 s windows every 1 s, uploaded through a recording proxy
#    (continuous_server.py's forward mode): the server's merged profile of
#    its windows is exactly the merge of the windows the agent uploaded
#    (every function's total equal), and burn_a has the largest share (the
#    shares themselves are record_cpu_split's business: on an overloaded
#    machine they bend, docs/agent.md "Known limit");
#  - two versions of one service (phases: version 1 computes in phase_a,
#    version 2 in phase_b) are told apart by version.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
source "$(dirname "$0")/continuous_lib.sh"
trap 'fake_stop_all; server_stop_all' EXIT
# curl hangs with the ASan runtime that lib.sh preloads in sanitized builds:
# only what runs under the agent gets it (AGENT_PRELOAD has it first).
unset LD_PRELOAD

server_start
fake_start
fake_mode "forward $SERVER_URL"
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_VERSION=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cpu_split" threads 6000 >/dev/null 2>up.err || fail "cpu_split: $(cat up.err)"
[ ! -s up.err ] || fail "the agent complained: $(cat up.err)"
uploads=()
for f in "$FAKE_DIR"/req.*.body; do
    st=$(cat "${f%.body}.status")
    [ "$st" = 200 ] || fail "the server answered $st to upload $f: $(head -c 300 "$f")"
    uploads+=("$f")
done
echo "${#uploads[@]} uploads through the proxy, all answered 200"
# The other two programs, side by side: one service, two versions.
HOTSPUR_SERVER=$SERVER_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_SERVICE=app HOTSPUR_VERSION=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 3000 0 >/dev/null 2>v1.err &
v1=$!
HOTSPUR_SERVER=$SERVER_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_SERVICE=app HOTSPUR_VERSION=2 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 0 3000 >/dev/null 2>v2.err &
v2=$!
wait "$v1" || fail "version 1: $(cat v1.err)"
wait "$v2" || fail "version 2: $(cat v2.err)"

sleep 0.3 # the last upload may still be in its commit
q="from=now-10m&until=now"
[ "$(server_curl merged.pb.gz "$SERVER_URL/api/v1/profile?service=cpu_split&type=cpu&$q")" = 200 ] ||
    fail "query: $(cat merged.pb.gz)"
server_curl list.json "$SERVER_URL/api/v1/profiles?service=cpu_split&type=cpu&$q" >/dev/null
n=$(grep -o '"id"' list.json | wc -l)
echo "$n cpu windows stored"
[ "$n" -ge 3 ] || fail "$n windows stored: $(cat list.json)"
# Each window's duration is stored as the agent measured it (0.5 s; the
# last may be cut short at exit), not in whole seconds: none shorter than
# 0.45 s, and their median within 0.45-0.6 s. Not each one below 0.6 s: a
# window closes when the agent thread wakes for it, and on a loaded machine
# its wait for a CPU makes some windows longer, which is how long they
# sampled (0.634 s seen at load 20, once 1.048 s).
grep -o '"duration":[0-9.e+-]*' list.json | cut -d: -f2 >durations
echo "durations: $(tr '\n' ' ' <durations)"
head -n $((n - 1)) durations | sort -g | awk '{ d[NR] = $1 } END {
    m = NR % 2 ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2
    print "median duration: " m
    exit !(NR > 0 && d[1] >= 0.45 && m >= 0.45 && m <= 0.6) }' ||
    fail "window durations are not 0.5 s: $(cat list.json)"

[ "$n" = "${#uploads[@]}" ] || fail "$n windows stored, ${#uploads[@]} uploaded: $(cat list.json)"
# The server's merge against the uploads merged here: every function's
# self and total value (`top` over all functions, values in ns), and the
# profile's total, equal (the header above them differs: the server keeps
# no build ids).
"$HOTSPUR" merge -o uploads.pb.gz "${uploads[@]}" 2>merge.err || fail "merge of the uploads: $(cat merge.err)"
table() { "$HOTSPUR" top --unit ns --nodefraction 0 "$1" | sed -n '/^Showing nodes/,$p'; }
table uploads.pb.gz >uploads.top || fail "top of the uploads"
table merged.pb.gz >merged.top || fail "top of the server's merge"
grep -q ' burn_a$' merged.top || fail "burn_a is missing from the server's merge: $(cat merged.top)"
diff uploads.top merged.top >top.diff || fail "the server's merge differs from the uploads merged: $(cat top.diff)"
# shares FILE -> "burn_a burn_b burn_c" as percentages of the total.
shares() {
    "$HOTSPUR" convert --to collapsed "$1" | awk '
        { v = $NF; t += v; n = split($0, fr, /[; ]/)
          for (i = 1; i <= n; i++) if (fr[i] ~ /^burn_[abc]$/) { s[fr[i]] += v; break } }
        END { printf "%.1f %.1f %.1f %d\n", 100 * s["burn_a"] / t, 100 * s["burn_b"] / t, 100 * s["burn_c"] / t, t / 1e7 }'
}
read -r ma mb mc mn < <(shares merged.pb.gz)
echo "server: burn_a $ma%, burn_b $mb%, burn_c $mc% ($mn samples, $n windows, equal to the uploads)"
awk -v a="$ma" -v b="$mb" -v c="$mc" 'BEGIN { exit !(a > b && a > c) }' ||
    fail "burn_a (60 % of the work) does not have the largest share: $ma/$mb/$mc %"

# Versions.
server_curl versions.json "$SERVER_URL/api/v1/versions?service=app&type=cpu&$q" >/dev/null
grep -q '"1"' versions.json && grep -q '"2"' versions.json || fail "versions: $(cat versions.json)"
for v in 1 2; do
    [ "$(server_curl "v$v.pb.gz" "$SERVER_URL/api/v1/profile?service=app&type=cpu&version=$v&$q")" = 200 ] ||
        fail "version $v query: $(cat "v$v.pb.gz")"
    "$HOTSPUR" top "v$v.pb.gz" >"v$v.top"
done
a1=$(grep -c ' phase_a$' v1.top || true); b1=$(grep -c ' phase_b$' v1.top || true)
a2=$(grep -c ' phase_a$' v2.top || true); b2=$(grep -c ' phase_b$' v2.top || true)
[ "$a1" = 1 ] && [ "$b1" = 0 ] || fail "version 1 should hold phase_a only: $(cat v1.top)"
[ "$a2" = 0 ] && [ "$b2" = 1 ] || fail "version 2 should hold phase_b only: $(cat v2.top)"
pass "the server's merge of $n windows equals the uploads merged ($ma/$mb/$mc %); versions told apart"
