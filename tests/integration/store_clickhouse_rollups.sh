#!/bin/bash
# store_clickhouse_rollups.sh — the ClickHouse checks of merges (rollups, series, daily rollups, days found complete) on one server:
# part of store_clickhouse.sh, a ctest test of its own to keep each under
# ctest's timeout.
CH_PART=one_rollups
. "$SRC/tests/integration/store_clickhouse.sh"
