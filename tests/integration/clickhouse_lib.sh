# clickhouse_lib.sh — throwaway ClickHouse servers for tests and benchmarks
# (sourced; not a test itself). Each server listens on 127.0.0.1 only, on
# ports the kernel hands out, with its data, tmp and logs in its own
# directory, and small caches (tests/integration/clickhouse/config.xml.in).
# Works with Debian 12's clickhouse-server 18.16 and current ClickHouse,
# as root or not.
#
#   ch_available              0 if a ClickHouse server binary is installed
#   ch_ports N                set CH_PORTS to N free loopback ports
#   ch_config NAME HTTP TCP INTER [REMOTE_SERVERS_XML]
#                             write DIR=$CH_ROOT/NAME/config.xml
#   ch_start NAME             start the server configured by ch_config
#                             (without waiting); its pid goes to
#                             $CH_ROOT/NAME/pid, so another shell (a test
#                             program's system()) may stop and restart it
#   ch_wait NAME HTTP         wait (60 s) until it answers /ping
#   ch_stop NAME              SIGTERM it and wait (SIGKILL after 20 s)
#   ch_stop_all               stop every server configured here (trap it)
#   ch_sql HTTP SQL           run SQL on the server at port HTTP, print the answer
# CH_ROOT (default $TMP/clickhouse) holds the servers' directories.

CH_ROOT=${CH_ROOT:-${TMP:-/tmp}/clickhouse}
CH_TEMPLATES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/clickhouse
CH_NAMES=()
CH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/clickhouse_lib.sh

# Tools run here (curl, python3, the server) never get the ASan runtime
# lib.sh preloads for sanitized builds: curl hangs with it.
ch_run() { env -u LD_PRELOAD "$@"; }

ch_fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# The server binary: Debian ships clickhouse-server; upstream packages a
# single `clickhouse` binary whose `server` subcommand is the same.
ch_binary() {
    if command -v clickhouse-server >/dev/null 2>&1; then
        echo clickhouse-server
    elif command -v clickhouse >/dev/null 2>&1; then
        echo "clickhouse server"
    else
        return 1
    fi
}

ch_available() { ch_binary >/dev/null; }

ch_ports() {
    CH_PORTS=$(ch_run python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1") || ch_fail "no free ports"
}

ch_config() {
    local name=$1 http=$2 tcp=$3 inter=$4 remote=${5:-}
    local dir=$CH_ROOT/$name
    rm -rf "$dir"
    mkdir -p "$dir/log" "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
    cp "$CH_TEMPLATES/users.xml" "$dir/users.xml"
    # remote_servers XML may contain '/' and '&'-free text only (ours does).
    sed -e "s|@DIR@|$dir|g" -e "s|@HTTP_PORT@|$http|" -e "s|@TCP_PORT@|$tcp|" \
        -e "s|@INTER_PORT@|$inter|" -e "s|@REMOTE_SERVERS@|$remote|" \
        "$CH_TEMPLATES/config.xml.in" >"$dir/config.xml"
    CH_NAMES+=("$name")
}

ch_start() {
    local name=$1 dir=$CH_ROOT/$1 bin
    bin=$(ch_binary) || ch_fail "clickhouse-server is not installed"
    # 18.16 writes status and pid files into the working directory's data
    # path; run it from its own directory so nothing lands elsewhere.
    # shellcheck disable=SC2086 # "clickhouse server" is two words
    (cd "$dir" && exec env -u LD_PRELOAD $bin --config-file="$dir/config.xml" >"$dir/log/stdout" 2>&1 </dev/null) &
    echo $! >"$dir/pid"
}

ch_pid() { cat "$CH_ROOT/$1/pid" 2>/dev/null || true; }

# Running, and not a zombie nobody reaped (a server restarted by another
# shell is not our child).
ch_alive() {
    kill -0 "$1" 2>/dev/null && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null
}

ch_wait() {
    local name=$1 http=$2 i pid
    pid=$(ch_pid "$name")
    for ((i = 0; i < 600; i++)); do
        [ "$(ch_run curl -s --max-time 2 "http://127.0.0.1:$http/ping" 2>/dev/null)" = "Ok." ] && return 0
        if ! ch_alive "$pid"; then
            ch_fail "clickhouse-server $name exited at start: $(tail -n 20 "$CH_ROOT/$name/log/stdout" "$CH_ROOT/$name/log/server.err.log" 2>/dev/null)"
        fi
        sleep 0.1
    done
    ch_fail "clickhouse-server $name does not answer on port $http after 60 s: $(tail -n 20 "$CH_ROOT/$name/log/server.err.log" 2>/dev/null)"
}

ch_stop() {
    local name=$1 pid i
    pid=$(ch_pid "$name")
    [ -n "$pid" ] || return 0
    if kill -TERM "$pid" 2>/dev/null; then
        for ((i = 0; i < 200; i++)); do
            ch_alive "$pid" || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    rm -f "$CH_ROOT/$name/pid"
}

# A shell command that runs "ch_stop NAME" or "ch_start NAME; ch_wait NAME
# HTTP" from anywhere (for HS_CH_TEST_STOP / HS_CH_TEST_START).
ch_stop_cmd() { printf 'CH_ROOT=%q bash -c %q' "$CH_ROOT" ". $CH_LIB && ch_stop $1"; }
ch_start_cmd() { printf 'CH_ROOT=%q bash -c %q' "$CH_ROOT" ". $CH_LIB && ch_start $1 && ch_wait $1 $2"; }

ch_stop_all() {
    local n
    for n in "${CH_NAMES[@]}"; do ch_stop "$n"; done
}

ch_sql() {
    ch_run curl -sS --max-time 60 --data-binary "$2" "http://127.0.0.1:$1/"
}
