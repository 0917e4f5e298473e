# live_lib.sh — the set-up the live_* tests share (sourced after lib.sh; not
# a test itself): root is needed (perf events), every process whose pid a
# test adds to PIDS is killed when the test exits, pass or fail, and no
# LD_PRELOAD (ASan's runtime under make check SANITIZE=1) reaches the
# programs the test starts. sampling_wait waits for `hotspur record` to be
# sampling, cpu_wait for a process to have run.
[ "$(id -u)" = 0 ] || fail "needs root (perf events)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
unset LD_PRELOAD

# cpu_wait PID MS: wait until PID's main thread has run MS ms of CPU from now
# and 2 s have passed; 60 s at most (status 1 then). At load 20 on 2 cores a
# process gets a tenth of a CPU: a fixed sleep gave it too little to judge.
cpu_wait() {
    local c0 c t
    c0=$(awk '{ print $1 }' /proc/$1/schedstat) || return 1
    for ((t = 0; t < 600; t++)); do
        c=$(awk '{ print $1 }' /proc/$1/schedstat 2>/dev/null) || return 1
        [ $t -ge 20 ] && [ $((c - c0)) -ge $(($2 * 1000000)) ] && return 0
        sleep 0.1
    done
    return 1
}

# sampling_wait PID: wait until `hotspur record` PID blocks in poll(2) on its
# rings, which it does only once its window began (record -a reads every
# process's maps first: many seconds at load 20 on 2 cores, while its targets
# ran on unsampled); 60 s at most (status 1 then). x86_64 poll 7, ppoll 271;
# aarch64 ppoll 73.
sampling_wait() {
    local t
    for ((t = 0; t < 600; t++)); do
        case $(cut -d' ' -f1 /proc/$1/syscall 2>/dev/null) in 7 | 73 | 271) return 0 ;; esac
        sleep 0.1
    done
    return 1
}
