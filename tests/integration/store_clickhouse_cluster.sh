#!/bin/bash
# store_clickhouse_cluster.sh — the backend-agnostic store suite on a
# ClickHouse cluster of two shards (Distributed tables), and its rows
# spread over both: part of store_clickhouse.sh, a ctest test of its own
# to keep each under ctest's timeout.
CH_PART=cluster
. "$SRC/tests/integration/store_clickhouse.sh"
