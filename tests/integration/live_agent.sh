# live_agent.sh — `hotspur agent`, the host daemon, against a real `hotspur
# serve`: one window (--once) of every process matching --match; the stored
# profiles are one per service: HOTSPUR_SERVICE read from the process's
# environment, else the process name; a process running the in-process
# agent (libhotspur preloaded) is skipped; the uploads carry label host.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (perf events on every CPU)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; server_stop_all; }
trap cleanup EXIT
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (make check SANITIZE=1)
server_start
agent_preload=$AGENT_PRELOAD

# a name of this run's own (the process name): other tests' live_target
# processes may run at the same time and must not match
NAME=agt$$
cp "$PROGS/live_target" "$NAME"
HOTSPUR_SERVICE=svc-env "./$NAME" split & PIDS+=($!)
"./$NAME" offcpu & PIDS+=($!)
HOTSPUR_SERVICE=svc-preloaded LD_PRELOAD="$agent_preload" "./$NAME" split & PIDS+=($!)
sleep 0.5
"$HOTSPUR" agent --server "$SERVER_URL" --once -F 99 --duration 2 --host testhost --match "comm=^$NAME\$" \
    2>agent.err || fail "agent: $(cat agent.err)"
cat agent.err
grep -q "2 service profiles uploaded" agent.err || fail "not two uploads: $(cat agent.err)"
sleep 0.3
q="type=cpu&from=now-10m&until=now"
[ "$(server_curl env.pb.gz "$SERVER_URL/api/v1/profile?service=svc-env&$q")" = 200 ] || fail "no svc-env profile"
"$HOTSPUR" top env.pb.gz | grep -c ' burn_b$' >/dev/null || fail "svc-env's profile lacks burn_b"
[ "$(server_curl comm.pb.gz "$SERVER_URL/api/v1/profile?service=$NAME&$q")" = 200 ] || fail "no $NAME profile"
"$HOTSPUR" top comm.pb.gz | grep -c ' burn_a$' >/dev/null || fail "$NAME's profile lacks burn_a"
"$HOTSPUR" top comm.pb.gz | grep -c ' burn_b$' >/dev/null && fail "svc-env's samples leaked into $NAME's profile"
server_curl list.json "$SERVER_URL/api/v1/profiles?service=svc-preloaded&$q" >/dev/null
grep -q '"id"' list.json && fail "the preloaded process (running libhotspur) was profiled twice: $(cat list.json)"
server_curl labels.json "$SERVER_URL/api/v1/labels?service=svc-env&$q" >/dev/null
grep -q testhost labels.json || fail "label host missing: $(head -c 400 labels.json)"
[ "$(server_curl other.pb.gz "$SERVER_URL/api/v1/profile?service=svc-env&label=host%3Dotherhost&$q")" = 200 ] &&
    "$HOTSPUR" top other.pb.gz 2>/dev/null | grep -c ' burn_b$' >/dev/null && fail "label filter host=otherhost matched"

# Naming: by default the agent sends addresses with build IDs and the server
# names them (above: the binary at its path on this host). A server that
# may only use uploaded debug info cannot name them: the frames stay
# NAME+0xOFF with the build ID, proof that the agent sent no names. With
# --symbolize agent the agent names them itself, and that server shows names.
server_start --debuginfo-sources upload
for mode in server agent; do
    "$HOTSPUR" agent --server "$SERVER_URL" --once -F 99 --duration 2 --host testhost --match "comm=^$NAME\$" \
        --symbolize $mode 2>agent.$mode.err || fail "agent --symbolize $mode: $(cat agent.$mode.err)"
    sleep 0.3
    [ "$(server_curl $mode.pb.gz "$SERVER_URL/api/v1/profile?service=$NAME&$q")" = 200 ] ||
        fail "--symbolize $mode: no $NAME profile"
    "$HOTSPUR" top $mode.pb.gz >$mode.top
    if [ $mode = server ]; then
        grep -q ' burn_a$' $mode.top && fail "--symbolize server: the agent named the frames: $(cat $mode.top)"
        grep -q " $NAME+0x[0-9a-f]*\$" $mode.top || fail "--symbolize server: no unnamed $NAME+0xOFF frame: $(cat $mode.top)"
        bid=$(readelf -n "$NAME" | awk '/Build ID/ { print $3 }')
        "$HOTSPUR" raw $mode.pb.gz | grep -q "$bid" || fail "--symbolize server: the build ID $bid was not sent"
    else
        grep -q ' burn_a$' $mode.top || fail "--symbolize agent: burn_a not named: $(cat $mode.top)"
    fi
    server_stop_all
    server_start --debuginfo-sources upload
done
pass "agent: one upload per service, env service name, preloaded process skipped, host label; frames named at the server by default (addresses and build IDs sent), in the agent with --symbolize agent"
