# continuous_e2e.sh — a real program under the agent in continuous mode
# uploads to a real `hotspur serve`:
#  - cpu_split (three threads with CPU shares 60/30/10 % by construction),
#    0.5 s windows every 1 s: the server's merged profile of its windows has
#    the same per-function shares as `hotspur record` of the same work
#    (within sampling error: a few hundred samples each);
#  - two versions of one service (phases: version 1 computes in phase_a,
#    version 2 in phase_b) are told apart by version.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
export HOTSPUR_RUNTIME_DIR="$TMP/rt"
# curl hangs with the ASan runtime that lib.sh preloads in sanitized builds:
# only what runs under the agent gets it (AGENT_PRELOAD has it first).
unset LD_PRELOAD

server_start
LD_PRELOAD="${asan_rt:-}" "$HOTSPUR" record -o rec.pb.gz -- "$PROGS/cpu_split" threads 3000 >/dev/null 2>rec.err || fail "record: $(cat rec.err)"
HOTSPUR_SERVER=$SERVER_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_VERSION=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cpu_split" threads 6000 >/dev/null 2>up.err || fail "cpu_split: $(cat up.err)"
[ ! -s up.err ] || fail "the agent complained: $(cat up.err)"
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

# shares FILE -> "burn_a burn_b burn_c" as percentages of the total.
shares() {
    "$HOTSPUR" convert --to collapsed "$1" | awk '
        { v = $NF; t += v; n = split($0, fr, /[; ]/)
          for (i = 1; i <= n; i++) if (fr[i] ~ /^burn_[abc]$/) { s[fr[i]] += v; break } }
        END { printf "%.1f %.1f %.1f %d\n", 100 * s["burn_a"] / t, 100 * s["burn_b"] / t, 100 * s["burn_c"] / t, t / 1e7 }'
}
read -r ra rb rc rn < <(shares rec.pb.gz)
read -r ma mb mc mn < <(shares merged.pb.gz)
echo "record: burn_a $ra%, burn_b $rb%, burn_c $rc% ($rn samples)"
echo "server: burn_a $ma%, burn_b $mb%, burn_c $mc% ($mn samples, $n windows)"
# Both against each other: two independent samples of a few hundred; 8
# points is about 3 standard deviations for a 60 % share.
for pair in "$ra $ma" "$rb $mb" "$rc $mc"; do
    set -- $pair
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 8) }' ||
        fail "shares differ: record $ra/$rb/$rc %, server $ma/$mb/$mc %"
done
# And both near the truth (60/30/10).
awk -v a="$ma" -v b="$mb" -v c="$mc" 'BEGIN { exit !(a >= 50 && a <= 70 && b >= 22 && b <= 38 && c >= 4 && c <= 16) }' ||
    fail "server shares $ma/$mb/$mc % are not 60/30/10"

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
pass "merged $n windows match record ($ma/$mb/$mc vs $ra/$rb/$rc %); versions told apart"
