#!/usr/bin/env bash
# server_names_query.sh BUILD_DIR — do queries of profiles whose frames are
# already named cost what they did before the server named frames (issue
# 31)? BENCH_BASELINE=DIR is a build of the code before it (e.g. commit
# e78e894, the parent of 0002bff, in a worktree of its own). Without it the
# benchmark says so and stops.
#
# Three servers run at once, each on a store of its own filled through its
# own ingest with the same files: the baseline's, this build's, and this
# build's again (an A/A pair: what two identical servers differ by on this
# machine). The files, named before upload:
#   - real: a CPU profile of `hotspur symbolize` at work (recorded with
#     `hotspur record -F 2000`; libdw, zlib, our code: deep stacks with
#     inline frames), uploaded 30 times;
#   - wide: bench/server_names.sh's 10 000-frame profile, named by
#     `hotspur symbolize`, uploaded 5 times.
# Queries (curl, time_total): /api/v1/flamegraph, /functions, /profile
# (pprof) and /series over the last hour of each data set; "cold" is each
# server's first query after a restart (its stack record cache empty, every
# record read from SQLite and, in this build, checked for unnamed frames),
# "warm" the 3 after it. BENCH_ROUNDS rounds (default 15): servers restarted
# each round, the order of the servers rotated from query to query.
# Medians; the ratio to the baseline. Then instructions (callgrind, inside
# hs_query_handle), which the machine's load does not blur. Writes the "## Server naming: queries
# of named profiles against the code before it" section of
# docs/BENCHMARKS.md (BENCH_NO_DOC=1: print only).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/server_names_query.sh BUILD_DIR" >&2; exit 2; }
if [ -z "${BENCH_BASELINE:-}" ]; then
    echo "server_names_query: skipped (set BENCH_BASELINE=DIR, a build of the code before server naming, e.g. commit e78e894)"
    exit 0
fi
BUILD=$(cd "$1" && pwd)
BASE=$(cd "$BENCH_BASELINE" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
source "$HERE/lib.sh"
ROUNDS=${BENCH_ROUNDS:-15}
bench_check_build server_names_query "$BUILD" "$ROUNDS" 1
[ -x "$BASE/bin/hotspur" ] || { echo "server_names_query: $BASE/bin/hotspur is missing" >&2; exit 1; }
INVOCATION="BENCH_BASELINE=$BENCH_BASELINE bench/server_names_query.sh $1"
if [ "$ROUNDS" != 15 ]; then INVOCATION="BENCH_ROUNDS=$ROUNDS $INVOCATION"; fi
bench_tmpdir
T=$BENCH_TMP
HOTSPUR=$BUILD/bin/hotspur

# the wide profile: server_names.sh's generator
bench_wide_unnamed_profile "$HOTSPUR" "$T" >/dev/null
"$HOTSPUR" symbolize -o "$T/wide.pb.gz" "$T/raw.pb.gz"
# the real profile: hotspur symbolize at work, named at record
"$HOTSPUR" record -F 2000 -o "$T/real.pb.gz" -- sh -c "for i in 1 2 3 4 5 6; do '$HOTSPUR' symbolize -o /dev/null '$T/raw.pb.gz'; done" >/dev/null 2>&1
REAL=$(ls "$T"/real*.pb.gz | head -n 1)
real_desc="$(gzip -dc "$REAL" | wc -c) bytes of pprof, $("$HOTSPUR" top --nodecount 100000 "$REAL" 2>/dev/null | grep -c '%') functions"

NAMES=(base new new2)
declare -A BIN=([base]=$BASE/bin/hotspur [new]=$HOTSPUR [new2]=$HOTSPUR)
declare -A URLS=() SRVS=()
start() { # NAME
    local n=$1
    "${BIN[$n]}" serve --listen 127.0.0.1:0 --data "$T/data.$n" 2>>"$T/serve.$n.log" &
    SRVS[$n]=$!
    BENCH_PIDS+=($!)
    URLS[$n]=$(bench_serve_url "$T/serve.$n.log") || { echo "server_names_query: $n did not start: $(cat "$T/serve.$n.log")" >&2; exit 1; }
}
stop() { kill "${SRVS[$1]}"; wait "${SRVS[$1]}" 2>/dev/null || true; : >"$T/serve.$1.log"; }
for n in "${NAMES[@]}"; do
    start "$n"
    for ((i = 0; i < 30; i++)); do
        curl -sf -o /dev/null --data-binary @"$REAL" "${URLS[$n]}/api/v1/ingest?service=real&type=cpu" ||
            { echo "server_names_query: upload to $n failed" >&2; exit 1; }
    done
    for ((i = 0; i < 5; i++)); do
        curl -sf -o /dev/null --data-binary @"$T/wide.pb.gz" "${URLS[$n]}/api/v1/ingest?service=wide&type=cpu" ||
            { echo "server_names_query: upload to $n failed" >&2; exit 1; }
    done
    stop "$n"
done

QUERIES=("flamegraph real" "functions real" "profile real" "series real" "flamegraph wide" "functions wide" "profile wide")
path() { # "ENDPOINT SERVICE" -> path and query
    local e=${1% *} s=${1#* } extra=""
    [ "$e" = series ] && extra="&step=60"
    echo "/api/v1/$e?service=$s&type=cpu&from=now-1h$extra"
}
get() { # NAME QUERY KIND
    local t
    t=$(curl -s -o "$T/out" -w '%{http_code} %{time_total}' "${URLS[$1]}$(path "$2")")
    [ "${t% *}" = 200 ] || { echo "server_names_query: $1 $2: HTTP ${t% *}: $(head -c 300 "$T/out")" >&2; exit 1; }
    echo "$3|$2|$1|${t#* }" >>"$T/times"
}
: >"$T/times"
rot=0
for ((r = 0; r < ROUNDS; r++)); do
    for q in "${QUERIES[@]}"; do
        # cold: each server restarted, then its first query of this kind
        order=("${NAMES[@]:rot%3}" "${NAMES[@]:0:rot%3}")
        rot=$((rot + 1))
        for n in "${order[@]}"; do start "$n"; done
        for n in "${order[@]}"; do get "$n" "$q" cold; done
        for ((k = 0; k < 3; k++)); do
            order=("${NAMES[@]:rot%3}" "${NAMES[@]:0:rot%3}")
            rot=$((rot + 1))
            for n in "${order[@]}"; do get "$n" "$q" warm; done
        done
        for n in "${NAMES[@]}"; do stop "$n"; done
    done
done

# Instructions (callgrind, counting inside hs_query_handle only: the same
# function in both builds): session "cold" runs each query once on a fresh
# server, session "all" the same and then every query 3 times more; warm =
# (all - cold) / 3. Base and new only (counts barely vary from run to run).
ir_session() { # NAME PASSES -> instructions
    local n=$1 passes=$2 out=$T/cg.$1.$2 pid url q k
    valgrind --tool=callgrind --toggle-collect=hs_query_handle --callgrind-out-file="$out" \
        "${BIN[$n]}" serve --listen 127.0.0.1:0 --data "$T/data.$n" 2>"$out.log" &
    pid=$!
    BENCH_PIDS+=($pid)
    url=$(bench_serve_url "$out.log" 600) || { echo "server_names_query: $n under callgrind did not start" >&2; exit 1; }
    for ((k = 0; k < passes; k++)); do
        for q in "${QUERIES[@]}"; do
            curl -sf -o /dev/null --max-time 120 "$url$(path "$q")" || { echo "server_names_query: $n: $q failed under callgrind" >&2; exit 1; }
        done
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    awk '/^totals:/ { print $2 }' "$out"
}
# The naming code's own share of a session: inclusive instructions of the
# query path's only memmem (query_cache.c: a fetched record checked for
# unnamed frames) and of hs_names_* (the generation read, naming a record).
naming_ir() { # CALLGRIND_OUT
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk '{ gsub(",", "", $1) } $0 ~ /(memmem|hs_names_[a-z_]+) / { s += $1 } END { print s + 0 }'
}
declare -A IR=()
if command -v valgrind >/dev/null; then
    for n in base new; do
        IR[$n.cold]=$(ir_session "$n" 1)
        IR[$n.all]=$(ir_session "$n" 4)
    done
    IR[naming.cold]=$(naming_ir "$T/cg.new.1")
    IR[naming.all]=$(naming_ir "$T/cg.new.4")
fi

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
    echo "## Server naming: queries of named profiles against the code before it"
    echo
    echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores of \"$cpu_model\"; load average at the end $load (a machine shared with other builds)."
    echo
    echo "Produced by: \`$INVOCATION\`"
    echo
    echo "Three \`hotspur serve\` at once, each with a SQLite store of its own filled through its own ingest with the same files, named before upload: **base**, the build of the code before server naming (${BENCH_BASELINE_NAME:-$BASE}); **new**, this build; **new2**, this build again (an A/A pair: what two identical servers differ by here). *real*: a CPU profile of \`hotspur symbolize\` at work, recorded with \`hotspur record -F 2000\` (deep stacks, inline frames), uploaded 30 times; *wide*: a 10 000-frame profile (bench/server_names.sh's, named by \`hotspur symbolize\`), uploaded 5 times. Each query over the last hour with curl; *cold* is a server's first query after a restart (its stack record cache empty: every record read from SQLite and, in the new code, checked for unnamed frames), *warm* the 3 after it. $ROUNDS rounds, the servers' order rotated from query to query. Medians in ms; ratios to base."
    echo
    echo "| query | | base | new | new2 | new / base | new2 / base |"
    echo "|---|---|--:|--:|--:|--:|--:|"
    for q in "${QUERIES[@]}"; do
        for kind in cold warm; do
            b=$(awk -F'|' -v k="$kind|$q|base" '$1 "|" $2 "|" $3 == k { print $4 }' "$T/times" | bench_median)
            n1=$(awk -F'|' -v k="$kind|$q|new" '$1 "|" $2 "|" $3 == k { print $4 }' "$T/times" | bench_median)
            n2=$(awk -F'|' -v k="$kind|$q|new2" '$1 "|" $2 "|" $3 == k { print $4 }' "$T/times" | bench_median)
            awk -v q="$q" -v k="$kind" -v b="$b" -v n1="$n1" -v n2="$n2" \
                'BEGIN { printf "| %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f |\n", q, k, b * 1000, n1 * 1000, n2 * 1000, n1 / b, n2 / b }'
        done
    done
    echo
    if [ -n "${IR[base.cold]:-}" ]; then
        echo "Instructions (callgrind, inside \`hs_query_handle\` only; the 7 queries above in one server, cold = each once on a fresh server, warm = each of 3 passes after):"
        echo
        echo "| | base | new | new / base |"
        echo "|---|--:|--:|--:|"
        awk -v b="${IR[base.cold]}" -v n="${IR[new.cold]}" 'BEGIN { printf "| 7 queries, cold | %.1f M | %.1f M | %.4f |\n", b / 1e6, n / 1e6, n / b }'
        awk -v b="$(((IR[base.all] - IR[base.cold]) / 3))" -v n="$(((IR[new.all] - IR[new.cold]) / 3))" \
            'BEGIN { printf "| 7 queries, warm (one pass) | %.1f M | %.1f M | %.4f |\n", b / 1e6, n / 1e6, n / b }'
        echo
        awk -v c="${IR[naming.cold]}" -v nc="${IR[new.cold]}" -v a="${IR[naming.all]}" -v na="${IR[new.all]}" 'BEGIN {
            printf "Of the new build'\''s instructions, the naming code'\''s own (the check of each record read from the store for unnamed frames, the names generation read: inclusive instructions of `memmem` and `hs_names_*` under `hs_query_handle`): %.2f M of %.1f M cold (%.2f%%), %.3f M of %.1f M per warm pass (%.3f%%). The difference from base also holds whatever else changed in the query path since (issue 26'\''s refactors): what naming adds is this check, on cold reads only.\n",
                c / 1e6, nc / 1e6, 100 * c / nc, (a - c) / 3e6, (na - nc) / 3e6, 100 * (a - c) / (na - nc) }'
        echo
    fi
    echo "The real profile: $real_desc"
} >"$T/section.md"
cat "$T/section.md"
bench_write_section server_names_query "Server naming: queries of named profiles against the code before it" "$T/section.md" "$ROOT/docs/BENCHMARKS.md"
