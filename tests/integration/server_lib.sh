# server_lib.sh — run `hotspur serve` in an integration test (sourced after
# lib.sh; not a test itself). Every server listens on 127.0.0.1 with a port
# the kernel picks (--listen 127.0.0.1:0) and a fresh data directory under
# $TMP, and is stopped when the test exits, pass or fail.
#
#   server_start [ARGS...]   start `$HOTSPUR serve ARGS...` and wait until it
#                            answers HTTP. Adds --listen 127.0.0.1:0 unless
#                            ARGS has --listen, and --data $TMP/server.N
#                            unless ARGS has --data or --store. Sets
#                            SERVER_URL (http://127.0.0.1:PORT, no trailing
#                            slash), SERVER_PID, SERVER_LOG (its stderr) and
#                            SERVER_DATA (the data directory, "" with
#                            --store). Several servers may run at once; the
#                            variables describe the last one started.
#   server_stop [PID]        SIGTERM the server (default: the last one),
#                            wait for it (10 s, then SIGKILL and fail) and
#                            return its exit status.
#   server_stop_all          stop every server still running (the EXIT trap
#                            calls it; a test with its own EXIT trap must
#                            call it there).
#   server_alive [PID]       exit status 0 while the server runs.
#   server_curl OUT ARGS...  curl ARGS (bounded: 30 s) writing the body to
#                            OUT; prints the HTTP status ("000" if none).
#                            Adds no token: pass -H "Authorization: Bearer T".

SERVER_PIDS=()
SERVER_N=0

server_start() {
    local a listen=1 data=1
    for a in "$@"; do
        case $a in
        --listen | --listen=*) listen=0 ;;
        --data | --data=* | --store | --store=*) data=0 ;;
        esac
    done
    SERVER_N=$((SERVER_N + 1))
    local args=()
    [ $listen = 1 ] && args+=(--listen 127.0.0.1:0)
    SERVER_DATA=""
    if [ $data = 1 ]; then
        SERVER_DATA="$TMP/server.$SERVER_N"
        args+=(--data "$SERVER_DATA")
    fi
    SERVER_LOG="$TMP/server.$SERVER_N.log"
    : >"$SERVER_LOG" # exists before the server's shell opens it
    "$HOTSPUR" serve "${args[@]}" "$@" >"$SERVER_LOG.out" 2>"$SERVER_LOG" &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    # `hotspur serve` prints "listening on http://HOST:PORT" once it is bound.
    local i
    SERVER_URL=""
    for ((i = 0; i < 300; i++)); do
        SERVER_URL=$(sed -n 's|.*listening on \(http://[^ /]*\).*|\1|p' "$SERVER_LOG" | head -n 1)
        [ -n "$SERVER_URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || fail "hotspur serve exited at start: $(cat "$SERVER_LOG")"
        sleep 0.1
    done
    [ -n "$SERVER_URL" ] || fail "hotspur serve did not print its URL in 30 s: $(cat "$SERVER_LOG")"
    # Bound is not necessarily answering yet: wait for any HTTP status.
    for ((i = 0; i < 300; i++)); do
        [ "$(server_curl /dev/null "$SERVER_URL/api/v1/services")" != 000 ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || fail "hotspur serve exited at start: $(cat "$SERVER_LOG")"
        sleep 0.1
    done
    fail "hotspur serve at $SERVER_URL does not answer: $(cat "$SERVER_LOG")"
}

server_alive() { kill -0 "${1:-$SERVER_PID}" 2>/dev/null; }

server_stop() {
    local pid=${1:-$SERVER_PID} i rc=0
    [ -n "$pid" ] || return 0
    local rest=()
    for i in "${SERVER_PIDS[@]}"; do [ "$i" = "$pid" ] || rest+=("$i"); done
    SERVER_PIDS=("${rest[@]}")
    if kill -TERM "$pid" 2>/dev/null; then
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            fail "hotspur serve (pid $pid) did not stop within 10 s of SIGTERM"
        fi
    fi
    wait "$pid" 2>/dev/null || rc=$?
    return $rc
}

server_stop_all() {
    local p
    for p in "${SERVER_PIDS[@]}"; do server_stop "$p" || true; done
}
trap server_stop_all EXIT

server_curl() {
    local out=$1; shift
    curl -s -o "$out" -w '%{http_code}' --max-time 30 "$@" || true
}
