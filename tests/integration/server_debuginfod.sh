# server_debuginfod.sh — the server names frames from a real debuginfod
# (issue 31): Debian's debuginfod serves a temporary directory with the
# .debug files of a stripped program and its library; `hotspur serve
# --debuginfod URL` fetches them on its own thread and the stored profile
# reads as the unstripped binaries symbolize it. Then debuginfod is stopped
# (SIGSTOP: it accepts connections and never answers, the worst case): a
# profile of another build is stored as addresses and the queries answer
# at once, not after a hang. (debuginfod 0.188 has no option to listen on
# loopback only; it is queried on 127.0.0.1 and lives for this test.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
source "$(dirname "$0")/debuginfo_lib.sh"
command -v debuginfod >/dev/null || fail "debuginfod is missing (scripts/install-deps)"

DFD_PID=""
cleanup() {
    [ -z "$DFD_PID" ] || kill -CONT "$DFD_PID" 2>/dev/null || true
    server_stop_all
    if [ -n "$DFD_PID" ]; then
        kill -TERM "$DFD_PID" 2>/dev/null || true
        # it may wait for a connection the stop left half done: 5 s, then KILL
        for ((i = 0; i < 50; i++)); do kill -0 "$DFD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DFD_PID" 2>/dev/null || true
        wait "$DFD_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

build_lib alpha
build_app
raw_profile a.pb.gz
"$HOTSPUR" symbolize -o ref_a.pb.gz a.pb.gz || fail "symbolize failed"
top_ours ref_a.pb.gz >ref_a.txt
grep -q 'nm::alpha_step' ref_a.txt || fail "no library frame in the reference"
mkdir -p dfd
cp "$TMP/app.debug" "$TMP/libnm.alpha.debug" dfd/
build_lib beta
raw_profile b.pb.gz
cp "$TMP/libnm.beta.debug" dfd/
BID_APP=$(build_id_of "$TMP/app")
strip_all

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -p "$PORT" -d "$TMP/dfd.sqlite" -t 0 -g 0 -F "$TMP/dfd" >dfd.log 2>&1 &
DFD_PID=$!
DFD_URL="http://127.0.0.1:$PORT"
for ((i = 0; i < 300; i++)); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$DFD_URL/buildid/$BID_APP/debuginfo")" = 200 ] && break
    kill -0 "$DFD_PID" 2>/dev/null || fail "debuginfod exited: $(cat dfd.log)"
    sleep 0.2
done
[ "$i" -lt 300 ] || fail "debuginfod did not index $TMP/dfd in 60 s: $(tail -5 dfd.log)"

export DEBUGINFOD_CACHE_PATH="$TMP/dfd-cache"
server_start --debuginfo-sources debuginfod --debuginfod "$DFD_URL" --debuginfod-timeout 2s
ingest a.pb.gz a
# the first query may find the fetch under way: names come within seconds
for ((i = 0; i < 100; i++)); do
    top_ours "$(query a)" >got_a.txt
    cmp -s ref_a.txt got_a.txt && break
    sleep 0.2
done
cmp -s ref_a.txt got_a.txt || { diff ref_a.txt got_a.txt | head; fail "frames not named from debuginfod in 20 s"; }
pass "named from debuginfod: $(wc -l <ref_a.txt) rows equal to the reference"

kill -STOP "$DFD_PID"
ingest b.pb.gz b
t0=$(date +%s%N)
top_ours "$(query b)" >got_b.txt
"$HOTSPUR" top --nodecount 1000 "$(query b)" >got_b_all.txt
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q 'beta' got_b.txt && fail "beta named while debuginfod is stopped?"
grep -qE 'libnm\.so\+0x[0-9a-f]+' got_b_all.txt || fail "no libnm.so+0xOFF frame: $(head got_b_all.txt)"
[ "$ms" -lt 5000 ] || fail "queries took $ms ms with debuginfod stopped (a hang)"
sleep 3 # past --debuginfod-timeout: the lookup has given up
t0=$(date +%s%N)
top_ours "$(query b)" >got_b2.txt
ms2=$((($(date +%s%N) - t0) / 1000000))
[ "$ms2" -lt 5000 ] || fail "a query took $ms2 ms after the lookup timed out"
server_alive || fail "the server died"
failed=$(curl -s --max-time 10 "$SERVER_URL/api/v1/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["names"]["debuginfod_failed"])')
[ "$failed" -ge 1 ] || fail "the lookup of build B did not give up after --debuginfod-timeout 2s (failed=$failed)"
# the app's frames (fetched before) are still named
grep -q 'app::Spinner<3>::run' got_b2.txt || fail "app's names were lost: $(cat got_b2.txt)"
pass "debuginfod stopped: addresses in $ms ms and $ms2 ms, no hang"
