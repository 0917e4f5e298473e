# live_container.sh — a process in another mount namespace (as in a
# container) is named from the files it sees, not from the host's file at
# the same path: inside, DIR/tw is live_twin_a (twin_spin_a), on a tmpfs
# mounted in its own namespace; on the host, DIR/tw is live_twin_b, whose
# twin_spin_b sits at the same address. `record -p` and `record -a` must name
# its frames twin_spin_a (they read its files under /proc/PID/root); named
# from the host's path they were twin_spin_b.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (perf events, mount namespaces)"
command -v unshare >/dev/null || fail "unshare (util-linux) is not installed"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
unset LD_PRELOAD
mkdir -p "$TMP/ns"
cp "$PROGS/live_twin_b" "$TMP/ns/tw" # the host's file at that path
unshare -m --propagation private sh -c \
    "mount -t tmpfs none '$TMP/ns' && cp '$PROGS/live_twin_a' '$TMP/ns/tw' && exec '$TMP/ns/tw' 60" &
PIDS+=($!)
T=""
for ((i = 0; i < 100; i++)); do
    T=$(pgrep -f "^$TMP/ns/tw 60" | head -1 || true)
    [ -n "$T" ] && [ "$(readlink /proc/$T/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break
    T=""
    sleep 0.05
done
[ -n "$T" ] || fail "the process in its own mount namespace did not start"
PIDS+=($T)
sleep 0.2
cmp -s "/proc/$T/root$TMP/ns/tw" "$PROGS/live_twin_a" || fail "premise: inside, the file is not live_twin_a"
cmp -s "$TMP/ns/tw" "$PROGS/live_twin_b" || fail "premise: on the host, the file is not live_twin_b"
check() {
    "$HOTSPUR" top -n 30 --tagfocus "pid=$T" "$1" >"top.$2" 2>&1 || fail "$2: top: $(cat "top.$2")"
    grep -q ' twin_spin_a$' "top.$2" || fail "$2: twin_spin_a missing: $(cat "top.$2")"
    if grep -q ' twin_spin_b$' "top.$2"; then fail "$2: named from the host's file: $(cat "top.$2")"; fi
}
"$HOTSPUR" record -p "$T" -F 99 --duration 1 -o p.pb.gz 2>rec.err || fail "record -p: $(cat rec.err)"
check p.pb.gz "record -p"
"$HOTSPUR" record -a -F 99 --duration 1 -o a.pb.gz 2>rec.err || fail "record -a: $(cat rec.err)"
check a.pb.gz "record -a"
pass "a process in its own mount namespace: named from its own files (record -p and -a)"
