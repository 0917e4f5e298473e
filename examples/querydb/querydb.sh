#!/bin/sh
# querydb.sh — the wrapper script querydb is started through (as daemons
# often are): sets its environment, then execs it with the arguments given.
# `hotspur record -- examples/querydb/querydb.sh ...` follows the exec and
# the forked workers.
dir=${QUERYDB_BIN_DIR:-$(dirname "$0")}
export QUERYDB_STARTED_BY=querydb.sh
exec "$dir/querydb" "$@"
