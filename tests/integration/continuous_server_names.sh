# continuous_server_names.sh — continuous mode with HOTSPUR_SYMBOLIZE=server
# end to end (issue 31): cpu_split (built -g) uploads 0.5 s windows as
# addresses to a real `hotspur serve`, which names them from the binary at
# its path (checked by build ID): the stored windows read as the uploads
# themselves named by `hotspur symbolize` (as `record` names them: the
# function, file and line of every frame of our own code; the uploads
# recorded by a forwarding proxy), and the profiled process never maps the
# symbolizer
# (libhotspur-symbolize.so, elfutils, libstdc++) while it runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
source "$(dirname "$0")/continuous_lib.sh"
trap 'fake_stop_all; server_stop_all' EXIT
unset LD_PRELOAD # curl needs no agent (and hangs on ASan's runtime); the app gets it back

server_start --debuginfo-sources path
fake_start
fake_mode "forward $SERVER_URL"
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_SYMBOLIZE=server HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_SERVICE=split \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cpu_split" threads 4000 >/dev/null 2>up.err &
app=$!
# its maps once a window has been uploaded (the agent has had a profile to
# name), while it runs: worker-a burns 2.4 s of CPU, so at least that long
for _ in $(seq 100); do
    compgen -G "$FAKE_DIR/req.*.body" >/dev/null && break
    sleep 0.1
done
compgen -G "$FAKE_DIR/req.*.body" >/dev/null || fail "no upload within 10 s: $(cat up.err)"
cp "/proc/$app/maps" maps.txt 2>/dev/null || fail "cpu_split ended before its maps were read"
wait "$app" || fail "cpu_split: $(cat up.err)"
[ ! -s up.err ] || fail "the agent complained: $(cat up.err)"
grep -q 'libhotspur.so' maps.txt || fail "the agent was not loaded: $(cat maps.txt)"
# (an ASan build's runtime, preloaded before the agent, brings libstdc++ itself)
libs='libhotspur-symbolize|libdw|libelf|libstdc\+\+'
grep -q libasan maps.txt && libs='libhotspur-symbolize|libdw|libelf'
if grep -E "$libs" maps.txt; then
    fail "the symbolizer (or its libraries) is mapped in a HOTSPUR_SYMBOLIZE=server process"
fi
pass "the profiled process maps libhotspur.so and none of the symbolizer's libraries"

sleep 0.3 # the last upload may still be in its commit
q="service=split&type=cpu&from=now-10m&until=now"
server_curl list.json "$SERVER_URL/api/v1/profiles?$q" >/dev/null
n=$(grep -o '"id"' list.json | wc -l)
[ "$n" -ge 2 ] || fail "$n windows stored: $(cat list.json)"
[ "$(server_curl merged.pb.gz "$SERVER_URL/api/v1/profile?$q")" = 200 ] || fail "query: $(cat merged.pb.gz)"
# our own frames, by function, file and line (less sum%: other rows differ in share)
ours() { "$HOTSPUR" top --lines --nodecount 100000 "$@" | grep -E 'cpu_split\.c' | awk '{ print $6, $7 }' | sort -u; }
ours merged.pb.gz >server.txt
grep -q 'burn_a' server.txt || fail "the server's profile has no named burn_a: $(head -20 server.txt)"
"$HOTSPUR" top --nodecount 100000 merged.pb.gz | grep -qE 'cpu_split\+0x' &&
    fail "frames of cpu_split left unnamed at the server: $("$HOTSPUR" top --nodecount 100000 merged.pb.gz | grep 'cpu_split+0x' | head)"
# the reference: the uploads as the agent sent them, named here
ups=()
for f in "$FAKE_DIR"/req.*.body; do
    [ "$(cat "${f%.body}.status")" = 200 ] || fail "the server answered $(cat "${f%.body}.status") to $f"
    case $(head -c 2 "$f" | od -An -tx1 | tr -d ' ') in 1f8b) ups+=("$f") ;; esac
done
[ "${#ups[@]}" -ge 2 ] || fail "${#ups[@]} gzipped uploads recorded"
for i in "${!ups[@]}"; do
    "$HOTSPUR" symbolize -o "ref.$i.pb.gz" "${ups[$i]}" || fail "symbolize of upload ${ups[$i]} failed"
done
ours ref.*.pb.gz >ref.txt
diff ref.txt server.txt >/dev/null || { diff ref.txt server.txt | head; fail "the windows named at the server differ from the uploads named by symbolize"; }
pass "$n windows uploaded as addresses, named at the server: $(wc -l <server.txt) function:line rows, all as hotspur symbolize names them"
