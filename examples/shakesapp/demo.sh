#!/bin/bash
# demo.sh BUILD_DIR — `make demo`: the "profile, fix, prove it" story, end to
# end (docs/tutorial.md walks through it).
#
# Starts `hotspur serve` on a free loopback port with a fresh SQLite
# directory, runs shakesapp versions 1 to 4 under the agent in continuous
# mode (service shakesapp, version N), each as two instances labelled
# zone=a and zone=b, while the client simulator sends its rounds to both in
# turn, then prints what a person would look at: version 1's CPU focus
# list, the CPU diff 2 vs 1, the allocated-heap diff 4 vs 3, the allocator's
# share of CPU in 3 vs 4, zone b against zone a, and the web UI's URLs. The
# server is stopped at the end unless KEEP=1.
#
# Environment: SECONDS_PER_VERSION (default 24), KEEP=1, DEMO_DIR (default
# BUILD_DIR/demo).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
hotspur="$build/bin/hotspur"
lib="$build/lib/libhotspur.so"
ex="$build/examples"
per_version=${SECONDS_PER_VERSION:-24}
dir=${DEMO_DIR:-$build/demo}
rm -rf "$dir"
mkdir -p "$dir"

server_pid=""
app_pids=()
cleanup() {
    local p
    for p in "${app_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    if [ -n "$server_pid" ] && [ "${KEEP:-0}" != 1 ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# shq ARG...: the arguments as one line to paste into bash (single-quoted
# when they hold anything but plain characters: a URL's & would background it)
shq() {
    local out="" a
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then out+=" $a"; else out+=" '${a//\'/\'\\\'\'}'"; fi
    done
    printf '%s' "${out# }"
}
run() { printf '$ %s\n' "$(shq "$@")"; "$@"; }

# 1. The collector; the Source tab reads the example's files from the repository.
repo=$(cd "$(dirname "$0")/../.." && pwd)
"$hotspur" serve --listen 127.0.0.1:0 --data "$dir/data" --source-path "$repo" >"$dir/serve.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 100); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$dir/serve.log" | head -1 || true)
    if [ -n "$url" ] && curl -sf "$url/api/v1/services" >/dev/null 2>&1; then break; fi
    url=""
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "demo: hotspur serve did not start:" >&2
    cat "$dir/serve.log" >&2
    exit 1
fi
say "hotspur serve is collecting at $url (data in $dir/data)"

# 2. The four versions, each under the agent in continuous mode, as two
# instances (zones a and b: the label zone=a or zone=b on their profiles)
# that the client sends its queries to in turn.
start=$(date +%s)
slow_trace=4bf92f3577b34da6a3ce929d0e0e4736 slow_span=00f067aa0ba902b7
for v in 1 2 3 4; do
    heap=0
    [ "$v" -ge 3 ] && heap=1
    say "shakesapp version $v, instances in zones a and b$([ $heap = 1 ] && echo ' (heap profiling on)')"
    servers=()
    for z in a b; do
        LD_PRELOAD="$lib" HOTSPUR_SERVER="$url" HOTSPUR_SERVICE=shakesapp HOTSPUR_VERSION="$v" \
            HOTSPUR_LABELS="zone=$z" HOTSPUR_HEAP="$heap" \
            HOTSPUR_PERIOD=${HOTSPUR_PERIOD:-10s} HOTSPUR_DURATION=${HOTSPUR_DURATION:-10s} \
            HOTSPUR_OUTPUT="$dir/exit.$v$z.%p.pb.gz" \
            "$ex/shakesapp_server" -version "$v" -port_file "$dir/port.$v$z" >"$dir/app.$v$z.log" 2>&1 &
        app_pids+=($!)
    done
    for z in a b; do
        for _ in $(seq 100); do [ -s "$dir/port.$v$z" ] && break; sleep 0.05; done
        servers+=(-server "http://127.0.0.1:$(cat "$dir/port.$v$z")")
    done
    "$ex/shakesapp_client" "${servers[@]}" -duration "$per_version" >"$dir/client.$v.log"
    if [ "$v" = 1 ]; then
        # one slow request (the query 25 times over), traced: its samples
        # carry this span (W3C traceparent -> the agent's labels)
        curl -sf -o /dev/null -H "traceparent: 00-$slow_trace-$slow_span-01" \
            "${servers[1]}/?q=love&repeat=25" || echo "(the slow request failed)"
    fi
    rounds=$(grep -c 'rate of' "$dir/client.$v.log" || true)
    head -2 "$dir/client.$v.log"
    [ "$rounds" -gt 3 ] && echo "... ($rounds rounds in ${per_version}s)"
    [ "$rounds" -gt 2 ] && tail -1 "$dir/client.$v.log"
    for p in "${app_pids[@]}"; do kill -INT "$p"; done
    for p in "${app_pids[@]}"; do wait "$p" || true; done
    app_pids=()
done
until=$(( $(date +%s) + 1 ))

rate() { # the median of a version's round rates
    awk '/rate of/ {print $(NF-3)}' "$dir/client.$1.log" | sort -g |
        awk '{a[NR]=$1} END {if (NR) printf "%.2f", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
say "request rates (median of the client's rounds)"
for v in 1 2 3 4; do echo "version $v: $(rate $v) reqs / sec"; done

q() { echo "$url/api/v1/profile?service=shakesapp&type=$1&version=$2&from=$start&until=$until${3:-}"; }

# Wait until every version's profiles are in (the agents flush at exit).
for _ in $(seq 50); do
    n=$(curl -sf "$url/api/v1/versions?service=shakesapp&type=cpu&from=$start&until=$until" | grep -o '"[1-4]"' | wc -l)
    [ "$n" -ge 4 ] && break
    sleep 0.2
done

say "version 1: where the CPU goes (functions by total, from the request handler down)"
run "$hotspur" top --cum -n 12 --show-from handle_query "$(q cpu 1)"

say "CPU, version 2 against version 1"
run "$hotspur" diff -n 12 "$(q cpu 1)" "$(q cpu 2)"

say "allocated heap per 10 s profile (average), version 4 against version 3"
run "$hotspur" diff -n 10 --sample-index alloc_space "$(q heap 3 '&agg=avg')" "$(q heap 4 '&agg=avg')"

say "in-use heap (average), version 4 against version 3"
run "$hotspur" diff -n 5 --sample-index inuse_space "$(q heap 3 '&agg=avg')" "$(q heap 4 '&agg=avg')"

# The allocator: glibc's malloc family and its internals. Its share is the
# part of the CPU samples with such a frame on the stack: the query API's
# matched/total with that focus (the CLI's --focus semantics).
alloc_re='^(__libc_)?(malloc|free|calloc|realloc|cfree)$|^_int_(malloc|free|realloc)$|^(malloc_consolidate|unlink_chunk|sysmalloc)$'
say "the allocator's share of CPU (samples with a malloc-family frame): version 3, then version 4"
for v in 3 4; do
    curl -sf -G "$url/api/v1/functions" --data-urlencode "service=shakesapp" --data-urlencode "type=cpu" \
        --data-urlencode "version=$v" --data-urlencode "from=$start" --data-urlencode "until=$until" \
        --data-urlencode "focus=$alloc_re" |
        python3 -c 'import json, sys
d = json.load(sys.stdin)
t, m = d.get("unfiltered", d["total"]), d["matched"]
print("version %s: %.1f%% of CPU (%.2f s of %.2f s, %d profiles)" % (sys.argv[1], 100.0 * m / t if t else 0, m / 1e9, t / 1e9, d["profiles"]))' "$v"
done
echo "  (\$ hotspur top --focus $(shq "$alloc_re") URL  shows the same share)"

say "CPU, zone b against zone a, version 2 (the same code under the same load: what noise looks like)"
run "$hotspur" diff -n 6 "$(q cpu 2 '&label=zone=a')" "$(q cpu 2 '&label=zone=b')"

say "one slow request of version 1 (span $slow_span): where its time went"
run "$hotspur" top --cum -n 8 --show-from handle_query "$(q cpu 1 "&tagfocus=span_id=$slow_span")"

say "in the browser"
echo "version 1's CPU, functions by total:   $(shq "$url/?service=shakesapp&type=cpu&version=1&view=functions")"
echo "compare 2 vs 1 on CPU:                 $(shq "$url/?service=shakesapp&type=cpu&version=2&cmp=version&base_version=1")"
echo "compare 4 vs 3 on allocated heap, per 10 s profile (average):"
echo "                                       $(shq "$url/?service=shakesapp&type=heap&si=alloc_space&version=4&cmp=version&base_version=3&agg=avg")"
echo "the slow request's span:              $(shq "$url/?service=shakesapp&type=cpu&version=1&trace=$slow_span")"
echo "compare zone b vs zone a, version 2:   $(shq "$url/?service=shakesapp&type=cpu&version=2&label=zone=b&cmp=label&base_label=zone=a")"
if [ "${KEEP:-0}" = 1 ]; then
    echo
    echo "hotspur serve keeps running (pid $server_pid): kill $server_pid to stop it"
else
    echo
    echo "(the server stops now; \`make demo KEEP=1\` leaves it running)"
fi
