#!/bin/bash
# store_clickhouse_cluster_checks.sh — the ClickHouse-only checks
# (test_store_clickhouse) but the merges' on a cluster of two shards: part of
# store_clickhouse.sh, a ctest test of its own to keep each under ctest's
# timeout.
CH_PART=cluster_checks
. "$SRC/tests/integration/store_clickhouse.sh"
