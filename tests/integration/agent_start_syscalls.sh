# agent_start_syscalls.sh — what the agent asks of the kernel in a process
# that starts and ends at once (issue 13: ~2 000 of them in a `make -j2`
# under record). Counted, not timed: its control socket is bound only once
# the process has run 50 ms, so /bin/true creates and deletes no socket
# file (on ext4 a file created and deleted per process cost ~0.2 ms); the
# main thread's stack bounds come without reading /proc/self/maps; libm is
# not loaded unless the heap is profiled. A
# process that lives gets its socket (hotspur ctl reaches it) and removes it
# at exit, also when it ends while the socket is being bound.
source "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace is missing (scripts/install-deps)"
export HOTSPUR_RUNTIME_DIR="$TMP/rt"

# (symbols deferred as under record: else the symbolizer, which needs libm, is loaded)
strace -f -qq -e trace=bind,unlink,mkdir,openat -o "$TMP/true.strace" \
    env HOTSPUR_OUTPUT="$TMP/true.pb.gz" HOTSPUR_DEFER_SYMBOLS=1 LD_PRELOAD="$AGENT_PRELOAD" /bin/true ||
    fail "/bin/true under the agent failed"
[ -s true.pb.gz ] || fail "/bin/true wrote no profile"
! grep -E '^[0-9]+ +(bind|unlink|mkdir)\(' true.strace | grep -v 'true\.pb\.gz' | grep . ||
    fail "/bin/true under the agent made its control socket"
if [ -z "$asan_rt" ]; then # (ASan's runtime reads the maps itself)
    ! grep '/proc/self/maps' true.strace || fail "/bin/true under the agent read /proc/self/maps"
fi
[ ! -e rt ] || [ -z "$(ls rt)" ] || fail "a socket file was left: $(ls rt)"
# libm is the heap profiler's (dlopened when it starts): not loaded for CPU.
if [ -z "$asan_rt" ]; then # (ASan's runtime needs libm itself)
    ! grep 'libm\.so' true.strace || fail "/bin/true under the agent (CPU only) loaded libm"
fi

# A process that lives: its socket appears, answers, and is gone at exit.
LD_PRELOAD="$AGENT_PRELOAD" HOTSPUR_OUTPUT="$TMP/sleep.pb.gz" sleep 2 &
pid=$!
for _ in $(seq 100); do [ -S "rt/$pid.sock" ] && break; sleep 0.05; done
[ -S "rt/$pid.sock" ] || fail "no control socket rt/$pid.sock after 5 s"
env -u LD_PRELOAD "$HOTSPUR" ctl "$pid" status >status.txt 2>&1 || fail "ctl status: $(cat status.txt)"
grep -q "^ok pid=$pid " status.txt || fail "ctl status: $(cat status.txt)"
wait "$pid" || fail "sleep under the agent failed"
[ ! -e "rt/$pid.sock" ] || fail "the control socket was left behind at exit"

# Processes that end around the moment the socket is bound (40-60 ms):
# none leaves its socket file behind.
for i in $(seq 0 19); do
    LD_PRELOAD="$AGENT_PRELOAD" HOTSPUR_OUTPUT="$TMP/edge.%p.pb.gz" sleep "0.0$((40 + i))" &
done
wait
n=$(ls edge.*.pb.gz | wc -l)
[ "$n" = 20 ] || fail "$n of 20 processes wrote a profile"
[ -z "$(ls rt)" ] || fail "sockets left behind: $(ls rt)"
pass "a short process makes no control socket and reads no maps; a longer one gets its socket and removes it"
