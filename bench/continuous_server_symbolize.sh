#!/usr/bin/env bash
# continuous_server_symbolize.sh BUILD_DIR — continuous_defaults.sh with the
# agent copy under HOTSPUR_SYMBOLIZE=server (issue 31): what the program
# pays when the server names its frames. Writes the "## Continuous mode at
# the defaults, server symbolization" section of docs/BENCHMARKS.md.
# BENCH_SKIP_DEFAULTS=1 skips it too.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_DEFAULTS_SYMBOLIZE=server exec "$HERE/continuous_defaults.sh" "$@"
