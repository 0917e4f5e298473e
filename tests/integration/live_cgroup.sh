# live_cgroup.sh — the `cgroup` label of `record -a` and `record -p`: a
# process moved into a cgroup v2 directory of our own (made under the
# cgroup2 mount, removed at the end) carries that cgroup's path as its
# label (`/NAME`, what /proc/PID/cgroup's "0::" line says: the systemd unit
# or the container on a real host), `--tagfocus cgroup=` narrows to it, and
# a process outside it is not labelled with it. Not applicable (said so)
# only where no cgroup2 file system is mounted writable.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (perf events, cgroup directories)"
PIDS=()
CG=""
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -z "$CG" ] || rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT
unset LD_PRELOAD

ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
NAME=hotspur-test-$$.scope
if [ -z "$ROOT" ] || ! mkdir "$ROOT/$NAME" 2>/dev/null; then
    echo "NOT APPLICABLE: no writable cgroup2 file system (mount: '${ROOT:-none}'): the cgroup label is not tested here"
    exit 0
fi
CG=$ROOT/$NAME
IN=lcgin$$ OUT=lcgout$$ # names of their own: other live_target processes may run meanwhile
cp "$PROGS/live_target" "$IN"
cp "$PROGS/live_target" "$OUT"
# one in the cgroup from its first instruction (a shell moved in, then exec),
# one outside it; both burn burn_a for 10 min of CPU (killed at the end)
sh -c "echo \$\$ >'$CG/cgroup.procs' && exec './$IN' exit 600000" & TI=$!
PIDS+=($TI)
"./$OUT" exit 600000 & TO=$!
PIDS+=($TO)
sleep 0.3
# its path as /proc/PID/cgroup gives it (relative to our cgroup namespace's
# root: /NAME on a host)
WANT=$(awk -F'::' '/^0::/ { print $2 }' /proc/$TI/cgroup)
echo "the process in $CG: /proc/$TI/cgroup says '$WANT'"
case $WANT in */"$NAME") ;; *) fail "could not move the process into $CG ('$WANT')" ;; esac

"$HOTSPUR" record -a --duration 2 -o all.pb.gz 2>rec.err || fail "record -a: $(cat rec.err)"
"$HOTSPUR" record -p "$TI,$TO" --duration 2 -o p.pb.gz 2>rec.err || fail "record -p: $(cat rec.err)"
for f in all p; do
    "$HOTSPUR" tags --tagfocus pid="$TI" "$f.pb.gz" >"$f.in.tags"
    "$HOTSPUR" tags --tagfocus pid="$TO" "$f.pb.gz" >"$f.out.tags"
    # the cgroup values of each process's samples
    cgs() { awk '/^ *cgroup:/ { on = 1; next } /^ *[a-z]+:/ { on = 0 } on && NF { print $NF }' "$1"; }
    echo "$f: in the cgroup: $(cgs "$f.in.tags" | tr '\n' ' '); outside: $(cgs "$f.out.tags" | tr '\n' ' ')"
    [ "$(cgs "$f.in.tags")" = "$WANT" ] || fail "$f: the process in $WANT is labelled '$(cgs "$f.in.tags")'"
    [ -n "$(cgs "$f.out.tags")" ] || fail "$f: the process outside the cgroup has no cgroup label"
    ! cgs "$f.out.tags" | grep -qxF "$WANT" || fail "$f: the process outside is labelled $WANT"
    "$HOTSPUR" top --tagfocus cgroup="$WANT" "$f.pb.gz" >"$f.top" || fail "$f: top --tagfocus cgroup="
    grep -q " burn_a$" "$f.top" || fail "$f: --tagfocus cgroup=$WANT has no burn_a"
    "$HOTSPUR" tags --tagfocus cgroup="$WANT" "$f.pb.gz" >"$f.focus.tags"
    pids=$(awk '/^ *pid:/ { on = 1; next } /^ *[a-z]+:/ { on = 0 } on && NF { print $NF }' "$f.focus.tags" | tr '\n' ' ')
    [ "$pids" = "$TI " ] || fail "$f: --tagfocus cgroup=$WANT holds pids '$pids', not only $TI"
done
pass "the cgroup label names the process's cgroup v2 path ($WANT), under record -a and -p"
