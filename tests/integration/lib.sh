# lib.sh — shared helpers for integration tests (sourced). Each test gets a
# clean $TMP; fail() prints a message and exits 1. Tests never skip silently:
# a missing peer is a failure.
set -euo pipefail
: "${HOTSPUR:?}" "${HOTSPUR_LIB:?}" "${PROGS:?}" "${SRC:?}" "${TMP:?}"

# An ASan build of the agent (make check SANITIZE=1) can only be preloaded
# after ASan's runtime: preload the runtime into everything the test runs.
# Leak reports are left to the unit tests: the programs we profile (sort,
# sh, ...) are not ours to fix.
asan_rt=$(ldd "$HOTSPUR_LIB" 2>/dev/null | awk '/libasan/ { print $3 }' || true)
if [ -n "$asan_rt" ]; then
    export LD_PRELOAD="$asan_rt${LD_PRELOAD:+:$LD_PRELOAD}"
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
rm -rf "$TMP"; mkdir -p "$TMP"; cd "$TMP"
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }
# Heap profiling interposes malloc; under an ASan build ASan's runtime is
# preloaded first and owns malloc, so the agent never sees an allocation.
# Tests of heap figures say so and stop there (they run in the normal build).
needs_malloc_interposition() {
    if [ -n "$asan_rt" ]; then
        echo "NOT APPLICABLE: ASan's runtime owns malloc in this build (make check SANITIZE=1);" \
             "heap figures are tested by the normal build"
        exit 0
    fi
}

# The LD_PRELOAD value that loads the agent (after whatever is preloaded).
AGENT_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$HOTSPUR_LIB"
