#!/bin/bash
# store_clickhouse.sh — the ClickHouse store against real ClickHouse servers
# (Debian's clickhouse-server, 18.16 on Debian 12), on loopback ports with
# throwaway configs and data (clickhouse_lib.sh):
#   1. one server: the backend-agnostic store suite (test_store, the one
#      the SQLite backend passes) and the ClickHouse-only checks
#      (test_store_clickhouse: duplicate copies and orphans invisible,
#      concurrent puts of one id, day-partition retention and compaction, quoting,
#      unreachable / slow / stopped-and-restarted ClickHouse);
#   2. a cluster of two shards (remote_servers, Distributed tables): the
#      same two suites again, and the rows really spread over both shards.
# Each part is a ctest test of its own (all three runs in one test came
# near ctest's 300 s under load): this file, CH_PART=one, runs the store
# suite and the ClickHouse checks but the merges' on one server;
# store_clickhouse_rollups.sh, store_clickhouse_cluster.sh,
# store_clickhouse_cluster_checks.sh and store_clickhouse_cluster_rollups.sh
# set CH_PART (one_rollups, cluster, cluster_checks, cluster_rollups) and
# source it (the checks in two halves: HS_CH_TEST_PART, basic or rollups).
# Skips (exit 0, "SKIP") only when no ClickHouse server is installed.
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/clickhouse_lib.sh"
# Nothing here runs under the agent, and curl hangs with the ASan runtime
# that lib.sh preloads in sanitized builds (hotspur links it itself).
unset LD_PRELOAD

if ! ch_available; then
    echo "SKIP: $(basename "$0"): clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
TEST_STORE=${TEST_STORE:-$PROGS/../test_store}
TEST_CH=${TEST_STORE_CLICKHOUSE:-$PROGS/../test_store_clickhouse}
for t in "$TEST_STORE" "$TEST_CH"; do
    [ -x "$t" ] || fail "$t is not built (make)"
done
trap ch_stop_all EXIT

ch_ports 6
read -r H1 T1 I1 H2 T2 I2 <<<"$CH_PORTS"
CLUSTER=hs_two_shards
remote="<$CLUSTER>"
for t in "$T1" "$T2"; do
    remote+="<shard><replica><host>127.0.0.1</host><port>$t</port></replica></shard>"
done
remote+="</$CLUSTER>"
ch_config a "$H1" "$T1" "$I1" "$remote"
ch_config b "$H2" "$T2" "$I2" "$remote"
CH_PART=${CH_PART:-one}
ch_start a
ch_wait a "$H1"
if [ "${CH_PART#one}" = "$CH_PART" ]; then # (the cluster parts)
    ch_start b
    ch_wait b "$H2"
fi
echo "clickhouse $(ch_sql "$H1" 'SELECT version()') on ports $H1 and $H2"

run_suite() { # NAME ENV... PROGRAM
    local name=$1 out="$TMP/$1.log"
    shift
    if ! env "$@" >"$out" 2>&1; then
        cat "$out" >&2
        fail "$name"
    fi
    grep -E '^\[  (PASSED|SKIPPED) ' "$out" || true
    pass "$name"
}

# 1. One server.
if [ "$CH_PART" = one ] || [ "$CH_PART" = one_rollups ]; then
    part=basic
    if [ "$CH_PART" = one ]; then
        run_suite "store suite, one server" HS_STORE_TEST_URL="clickhouse://127.0.0.1:$H1/hs_test_1" "$TEST_STORE"
    else
        part=rollups
    fi
    run_suite "clickhouse checks ($part), one server" HS_CH_TEST_HOSTS="127.0.0.1:$H1" HS_CH_TEST_PART=$part \
        HS_CH_TEST_STOP="$(ch_stop_cmd a)" HS_CH_TEST_START="$(ch_start_cmd a "$H1")" "$TEST_CH"
    grep -q '^\[  SKIPPED \]' "$TMP/clickhouse checks ($part), one server.log" && fail "a ClickHouse check was skipped"
    pass "ClickHouse store, one server ($part)"
    exit 0
fi

# 2. Two shards.
hosts="127.0.0.1:$H1,127.0.0.1:$H2"
if [ "$CH_PART" = cluster ]; then
    run_suite "store suite, two shards" HS_STORE_TEST_URL="clickhouse://$hosts/hs_test_2?cluster=$CLUSTER" "$TEST_STORE"
    for what in "samples:rowtype = 0" "samples:rowtype = 1" "stacks:1"; do
        t=${what%%:*} cond=${what#*:}
        n1=$(ch_sql "$H1" "SELECT count() FROM hs_test_2.${t}_local WHERE $cond")
        n2=$(ch_sql "$H2" "SELECT count() FROM hs_test_2.${t}_local WHERE $cond")
        all=$(ch_sql "$H1" "SELECT count() FROM hs_test_2.$t WHERE $cond")
        echo "$t WHERE $cond: $n1 rows on shard 1, $n2 on shard 2, $all through the Distributed table"
        [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || fail "$t WHERE $cond: rows are not spread over both shards ($n1, $n2)"
        [ "$all" -eq $((n1 + n2)) ] || fail "$t WHERE $cond: the Distributed table sees $all rows, the shards hold $((n1 + n2))"
    done
    pass "ClickHouse store suite, two shards"
    exit 0
fi
part=basic
[ "$CH_PART" = cluster_rollups ] && part=rollups
run_suite "clickhouse checks ($part), two shards" HS_CH_TEST_HOSTS="$hosts" HS_CH_TEST_CLUSTER="$CLUSTER" \
    HS_CH_TEST_PART=$part HS_CH_TEST_STOP="$(ch_stop_cmd a)" HS_CH_TEST_START="$(ch_start_cmd a "$H1")" "$TEST_CH"
grep -q '^\[  SKIPPED \]' "$TMP/clickhouse checks ($part), two shards.log" && fail "a ClickHouse check was skipped"
pass "ClickHouse checks ($part), two shards"
