# continuous_lib.sh — helpers for the continuous-mode tests (sourced after
# lib.sh; not a test itself). A stand-in collector (continuous_server.py,
# Python standard library) records every request the agent makes.
#
#   fake_start [PORT]   start a recorder on 127.0.0.1 (PORT, or one the
#                       kernel picks) with a fresh directory; sets FAKE_DIR,
#                       FAKE_URL, FAKE_PID. Stopped when the test exits.
#   fake_mode MODE      how it answers from now on: ok, 500, 400, 429,
#                       hang, close, "forward URL" (a recording proxy in
#                       front of a real server; see continuous_server.py).
#   fake_stop           stop the last one started.
#   fake_summary        one line per request (see continuous_server.py).
#   free_port           a loopback port nobody listens on (bound, then freed).
#   now                 unix time, fractional.

FAKE_PY="$SRC/tests/integration/continuous_server.py"
FAKE_PIDS=()
FAKE_N=0
export HOTSPUR_RUNTIME_DIR="$TMP/rt"

fake_start() {
    FAKE_N=$((FAKE_N + 1))
    FAKE_DIR="$TMP/fake.$FAKE_N"
    mkdir -p "$FAKE_DIR"
    # Not under the ASan preload of a sanitized build (lib.sh): it is not ours.
    env -u LD_PRELOAD python3 "$FAKE_PY" serve "$FAKE_DIR" "${1:-0}" 2>"$FAKE_DIR.log" &
    FAKE_PID=$!
    FAKE_PIDS+=("$FAKE_PID")
    local i
    for ((i = 0; i < 100; i++)); do
        [ -s "$FAKE_DIR/port" ] && break
        kill -0 "$FAKE_PID" 2>/dev/null || fail "the recorder did not start: $(cat "$FAKE_DIR.log")"
        sleep 0.1
    done
    [ -s "$FAKE_DIR/port" ] || fail "the recorder did not start in 10 s"
    FAKE_URL="http://127.0.0.1:$(cat "$FAKE_DIR/port")"
}

fake_mode() { echo "$1" >"$FAKE_DIR/mode"; }

fake_stop() {
    kill "$FAKE_PID" 2>/dev/null || true
    wait "$FAKE_PID" 2>/dev/null || true
}

fake_stop_all() {
    local p
    for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap fake_stop_all EXIT

fake_summary() { env -u LD_PRELOAD python3 "$FAKE_PY" summary "${1:-$FAKE_DIR}"; }

# The agent's stderr without the note an ASan build prints when heap
# profiling is on (ASan's runtime owns malloc there).
agent_stderr() { grep -v 'which comes before the agent: the heap profile will be empty' "$1" || true; }

free_port() {
    env -u LD_PRELOAD python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

now() { date +%s.%N; }

# total FILE -> the sum of the profile's default value; through FILE FUNC ->
# the sum over samples with FUNC anywhere on their stack (options such as
# --sample-index go to `hotspur convert`).
total() {
    "$HOTSPUR" convert --to collapsed "$1" | awk '{ s += $NF } END { printf "%.0f\n", s }'
}
through() { # FILE FUNC [convert options, e.g. --sample-index NAME]
    local f=$1 fn=$2; shift 2
    "$HOTSPUR" convert --to collapsed "$@" "$f" | awk -v fn="$fn" '
        { v = $NF; st = $0; sub(/ [^ ]*$/, "", st); n = split(st, fr, ";")
          for (i = 1; i <= n; i++) if (fr[i] == fn) { s += v; break } }
        END { printf "%.0f\n", s }'
}
