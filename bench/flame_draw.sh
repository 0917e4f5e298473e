#!/usr/bin/env bash
# flame_draw.sh BUILD_DIR [REV] — the browser's share of a 100 000-node flame
# graph (bench/flame_draw.js: fromServer + layout + first draw of
# web/flamegraph.js on a stub canvas, in node), flat and differential. With
# REV (a git revision), web/flamegraph.js of REV is timed beside the working
# tree's in the same process, interleaved. BUILD_DIR is unused (make bench
# passes it). Figures: docs/BENCHMARKS.md, "flame graph drawing".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
command -v node >/dev/null || { echo "flame_draw: node is needed" >&2; exit 1; }
old=()
if [ $# -ge 2 ]; then
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    git -C "$ROOT" show "$2:web/flamegraph.js" > "$tmp"
    old=("$tmp")
fi
echo "flame_draw: web/flamegraph.js${2:+ against $2}; load $(cut -d' ' -f1-3 /proc/loadavg)"
node "$HERE/flame_draw.js" "$ROOT/web/flamegraph.js" "${old[@]}"
