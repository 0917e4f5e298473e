#!/usr/bin/env bash
# server_soak.sh BUILD_DIR — `hotspur serve` under a long mixed load, its
# memory sampled: does RSS reach a plateau? 12 upload clients
# (bench/ingest_load.c: realistic 10 s CPU profiles, each with a new id,
# one keep-alive connection each) and 4 query clients (curl in a loop over
# flamegraph, functions, series and a focused flame graph over the last
# hour, with changing filters) for SOAK_SECONDS (default 600) against a
# server on a free loopback port with a fresh SQLite directory. VmRSS is
# read from /proc every 10 s. Prints the samples and a summary: RSS at the
# first minute, the highest, and the highest of each third of the run
# (a plateau: the last third's highest within 10% of the middle third's).
# Writes the "## Server soak: memory under 16 clients" section of
# docs/BENCHMARKS.md unless BENCH_NO_DOC=1. Not part of `make check`.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bench/server_soak.sh BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
SECONDS_RUN=${SOAK_SECONDS:-600}
INVOCATION="bench/server_soak.sh $1"
if [ -n "${SOAK_SECONDS:-}" ]; then INVOCATION="SOAK_SECONDS=$SECONDS_RUN $INVOCATION"; fi
TMP=$(mktemp -d)
SERVER=""
QPIDS=()
cleanup() {
    for p in "${QPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
# shellcheck disable=SC2046 # pkg-config prints several flags
cc -O2 -g -Wall -Wextra -Werror -I"$ROOT/src" -I"$HERE" -o "$TMP/ingest_load" "$HERE/ingest_load.c" \
    "$BUILD/lib/static/libhs_profile.a" "$BUILD/lib/static/libhs_base.a" $(pkg-config --libs libprotobuf-c zlib libdeflate libisal libcurl) -lpthread -lm

"$BUILD/bin/hotspur" serve --listen 127.0.0.1:0 --data "$TMP/data" --retention 0 2>"$TMP/server.log" &
SERVER=$!
URL=$(bench_serve_url "$TMP/server.log") || { echo "server_soak: the server did not start: $(cat "$TMP/server.log")" >&2; exit 1; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER/status"; }
echo "server_soak: $URL, $SECONDS_RUN s, 12 upload + 4 query clients"

"$TMP/ingest_load" "$URL" 12 3000000 "$SECONDS_RUN" >"$TMP/ingest.out" &
LOAD=$!
query_client() { # N
    local n=$1 i=0 end=$((SECONDS + SECONDS_RUN)) svc
    svc=$(sed -n 's/.*"services":\["\([^"]*\)".*/\1/p' <(curl -s "$URL/api/v1/services?from=now-1h")) || true
    while [ $SECONDS -lt $end ]; do
        i=$((i + 1))
        for q in "flamegraph?" "functions?" "series?" "flamegraph?focus=inl_fn_$((i % 97))&"; do
            curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 \
                "$URL/api/v1/${q}service=${svc:-bench}&type=cpu&from=now-1h" >>"$TMP/queries.$n" || true
        done
    done
}
sleep 5 # some uploads first, so the queries have a service
for n in 1 2 3 4; do query_client $n & QPIDS+=($!); done

: >"$TMP/rss"
t0=$SECONDS
while kill -0 "$LOAD" 2>/dev/null; do
    echo "$((SECONDS - t0)) $(rss)" >>"$TMP/rss"
    sleep 10
done
wait "$LOAD" || true
for p in "${QPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
QPIDS=()
echo "$((SECONDS - t0)) $(rss)" >>"$TMP/rss"
cat "$TMP/rss"
uploads=$(awk '$1 == "uploads_ok" {print $2}' "$TMP/ingest.out")
queries=$(cat "$TMP"/queries.* 2>/dev/null | grep -c '^200$' || true)
echo "server_soak: query answers by status: $(cat "$TMP"/queries.* 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
LOAD_AVG=$(cut -d' ' -f1 /proc/loadavg)
awk -v inv="$INVOCATION" -v secs="$SECONDS_RUN" -v up="$uploads" -v q="$queries" -v load="$LOAD_AVG" '
{ t[NR] = $1; r[NR] = $2 / 1024; if (r[NR] > max) max = r[NR]; if (!at60 && $1 >= 60) at60 = r[NR] }
END {
    n = NR; a = int(n / 3); b = int(2 * n / 3)
    for (i = 1; i <= n; i++) { if (i <= a && r[i] > m1) m1 = r[i]; else if (i <= b && i > a && r[i] > m2) m2 = r[i]; else if (i > b && r[i] > m3) m3 = r[i] }
    plateau = m2 > 0 && m3 <= m2 * 1.10
    printf "## Server soak: memory under 16 clients\n\n"
    printf "Produced by: `%s`: 12 upload clients (bench/ingest_load.c) and 4 query clients (flamegraph, functions, series, a focused flame graph over the last hour) for %d s against one `hotspur serve` (SQLite); VmRSS every 10 s. Load average at the end %s.\n\n", inv, secs, load
    printf "| uploads stored | queries answered 200 | RSS at 1 min | RSS highest | highest, 1st third | 2nd third | 3rd third | plateau (3rd within 10%% of 2nd) |\n"
    printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
    printf "| %d | %d | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %s |\n\n", up, q, at60, max, m1, m2, m3, plateau ? "yes" : "no"
    printf "RSS samples (s: MiB): "
    for (i = 1; i <= n; i += (n > 30 ? int(n / 30) : 1)) printf "%s%d: %.0f", (i > 1 ? ", " : ""), t[i], r[i]
    printf ".\n"
}' "$TMP/rss" >"$TMP/section.md"
cat "$TMP/section.md"
bench_write_section server_soak "Server soak: memory under 16 clients" "$TMP/section.md" "$ROOT/docs/BENCHMARKS.md"
