# live_lib.sh — the set-up the live_* tests share (sourced after lib.sh; not
# a test itself): root is needed (perf events), every process whose pid a
# test adds to PIDS is killed when the test exits, pass or fail, and no
# LD_PRELOAD (ASan's runtime under make check SANITIZE=1) reaches the
# programs the test starts.
[ "$(id -u)" = 0 ] || fail "needs root (perf events)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
unset LD_PRELOAD
