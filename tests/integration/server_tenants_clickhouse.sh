#!/usr/bin/env bash
# server_tenants_clickhouse.sh — server_tenants.sh with a ClickHouse store (a
# throwaway server, clickhouse_lib.sh): tenants are databases of their own.
# Skips (exit 0, "SKIP") only when no ClickHouse server is installed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/clickhouse_lib.sh"
if ! ch_available; then
    echo "SKIP: $(basename "$0"): clickhouse-server is not installed (scripts/install-deps installs it)"
    exit 0
fi
HS_TENANTS_BACKEND=clickhouse exec bash "$(dirname "$0")/server_tenants.sh"
