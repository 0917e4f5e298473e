# services_ctl.sh — `hotspur ctl` as a user meets it: the listing (a
# profiled daemon appears with its command, types and state; a socket left
# by a dead process is removed quietly), the default socket directory
# (/tmp/hotspur-UID, mode 0700), exit statuses and messages for usage
# errors, a process without the agent, a process that is gone; clients
# slowed down by a loaded machine are answered; and the same-user rule: a
# client of another uid is refused at the directory and, if it gets past
# it, by the agent itself (SO_PEERCRED).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

# rc CMD...: run CMD, print its exit status (stdout/stderr to out.txt/err.txt).
rc() { set +e; "$@" >out.txt 2>err.txt; echo $?; set -e; }

# The default directory: this daemon does not get HOTSPUR_RUNTIME_DIR.
defdir="/tmp/hotspur-$(id -u)"
echo 0 >phase
env -u HOTSPUR_RUNTIME_DIR HOTSPUR_OUTPUT="$TMP/c.pb.gz" HOTSPUR_WALL_HZ=50 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/daemon" "$TMP/phase" >daemon.out 2>daemon.err &
pid=$!
bg_track "$pid"
wait_until 10 test -S "$defdir/$pid.sock" || fail "no socket $defdir/$pid.sock: $(cat daemon.err)"
[ "$(stat -c %a "$defdir")" = 700 ] || fail "$defdir has mode $(stat -c %a "$defdir"), not 700"
[ "$(stat -c %u "$defdir")" = "$(id -u)" ] || fail "$defdir is not ours"

# The listing of the default directory. It is shared with every agent of
# this user (other tests running beside this one, other builds): only what
# ctl says of ours counts.
[ "$(rc env -u HOTSPUR_RUNTIME_DIR "$HOTSPUR" ctl)" = 0 ] || fail "ctl (list) failed: $(cat err.txt)"
cat out.txt
grep -q "^PID  *COMMAND  *TYPES  *STATE" out.txt || fail "no header: $(cat out.txt)"
grep -q "^$pid  *daemon  *cpu,wall  *running  *0$" out.txt || fail "daemon $pid not listed: $(cat out.txt)"
! grep -E "(: |process )$pid[: ]" err.txt || fail "ctl printed on stderr about $pid: $(cat err.txt)"

# The stale socket of an agent killed by SIGKILL, in a directory of this
# test's own (in the shared one, a listing run by another test would remove
# it first): removed quietly by the listing.
own="$HOTSPUR_RUNTIME_DIR"
HOTSPUR_OUTPUT="$TMP/k.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/daemon" "$TMP/phase" >/dev/null 2>&1 &
dead=$!
bg_track "$dead"
wait_until 10 test -S "$own/$dead.sock" || fail "no socket $own/$dead.sock"
kill -KILL "$dead"
wait "$dead" 2>/dev/null || true
kill -0 "$dead" 2>/dev/null && fail "pid $dead still in use"
[ -S "$own/$dead.sock" ] || fail "SIGKILL removed the socket? (the test needs a stale one)"
[ "$(rc "$HOTSPUR" ctl)" = 0 ] || fail "ctl (list of $own) failed: $(cat err.txt)"
[ "$(cat err.txt)" = "hotspur ctl: no process to reach in $own" ] ||
    fail "ctl printed more than 'no process to reach' (stale sockets are removed quietly): $(cat err.txt)"
[ ! -e "$own/$dead.sock" ] || fail "stale socket left"
export HOTSPUR_RUNTIME_DIR="$defdir" # the rest talks to that daemon

# Exit statuses and one-line messages.
[ "$(rc "$HOTSPUR" ctl --help)" = 0 ] && grep -q 'dump' out.txt || fail "ctl --help"
[ "$(rc "$HOTSPUR" ctl "$pid" status)" = 0 ] && grep -q "^ok pid=$pid " out.txt || fail "status: $(cat out.txt err.txt)"
[ "$(rc "$HOTSPUR" ctl "$pid")" = 0 ] && grep -q "^ok pid=$pid " out.txt || fail "ctl PID is not status"
for bad in "notapid" "$pid frobnicate" "$pid status extra" "$pid stop -o x" "$pid dump -o" "--bogus" "-t 0 $pid"; do
    # shellcheck disable=SC2086
    r=$(rc "$HOTSPUR" ctl $bad)
    [ "$r" = 2 ] || fail "ctl $bad exits $r, not 2"
    [ "$(wc -l <err.txt)" = 1 ] && grep -q '^hotspur ctl: ' err.txt || fail "ctl $bad: $(cat err.txt)"
done
[ "$(rc "$HOTSPUR" ctl "$dead" status)" = 2 ] && grep -q "no such process: $dead" err.txt ||
    fail "dead pid: $(cat err.txt)"
[ "$(rc "$HOTSPUR" ctl "$$" status)" = 2 ] && grep -q "no hotspur agent" err.txt ||
    fail "process without agent: $(cat err.txt)"

# The timeout in the one duration grammar (base/units.h), through the shared
# option parser: a listener that never answers is given up after 300ms (the
# old hand-written loop refused '300ms').
mkdir -p "$TMP/silent"
env -u LD_PRELOAD python3 - "$TMP/silent" "$HOTSPUR" >silent.txt 2>&1 <<'PY' || fail "ctl -t 300ms: $(cat silent.txt)"
import os, socket, subprocess, sys, time
pid = os.getpid()
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(os.path.join(sys.argv[1], "%d.sock" % pid))
srv.listen(4)
env = dict(os.environ, HOTSPUR_RUNTIME_DIR=sys.argv[1])
for words in (["-t", "300ms"], ["--timeout=0.3"], ["-t0.3s"]):
    t0 = time.monotonic()
    r = subprocess.run([sys.argv[2], "ctl", *words, str(pid), "status"], capture_output=True, text=True, env=env)
    took = time.monotonic() - t0
    print(words, "->", r.returncode, r.stderr.strip(), "in %.2f s" % took)
    assert r.returncode == 1 and "no answer within 0.3 s" in r.stderr, r
    assert 0.25 < took < 5, took
PY
cat silent.txt

# Clients as a loaded machine makes them: one that sends its request a
# second after connecting, in two pieces, is answered; while one connected
# and sent nothing, others are answered at once (the agent thread waits on
# no client: its wall ticks and periodic windows go on).
env -u LD_PRELOAD python3 - "$defdir/$pid.sock" "$HOTSPUR" "$pid" >slow.txt 2>&1 <<'PY' || fail "slow clients: $(cat slow.txt)"
import socket, subprocess, sys, time
def talk(pieces, pause):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(sys.argv[1])
    for p in pieces:
        time.sleep(pause)
        s.sendall(p)
    reply = b""
    while True:
        b = s.recv(4096)
        if not b:
            return reply.decode()
        reply += b
silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
silent.connect(sys.argv[1])
t0 = time.monotonic()
got = subprocess.run([sys.argv[2], "ctl", sys.argv[3], "status"], capture_output=True, text=True).stdout
print("beside a silent client, ctl got in %.2f s: %s" % (time.monotonic() - t0, got.strip()))
assert got.startswith("ok pid="), got
slow = talk([b"sta", b"tus\n"], 0.6)
print("a client that took 1.2 s to send 'status' got:", slow.strip())
assert slow.startswith("ok pid="), slow
silent.close()
PY
cat slow.txt

# Clients that leave before the answer (a ctl killed by ^C): the agent's
# reply to a closed socket must not raise SIGPIPE in the program (it writes
# on the agent thread, which blocks every signal).
env -u LD_PRELOAD python3 - "$defdir/$pid.sock" >gone.txt 2>&1 <<'PY' || fail "leaving clients: $(cat gone.txt)"
import socket, sys
for i in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"status\n")
    s.close()
print("200 clients sent 'status' and left at once")
PY
cat gone.txt
sleep 0.5
kill -0 "$pid" 2>/dev/null || fail "the daemon died after clients left before their answer: $(cat daemon.err)"
[ "$(rc "$HOTSPUR" ctl "$pid" status)" = 0 ] || fail "ctl status after leaving clients: $(cat err.txt)"

# Another uid. As root we can be someone else; otherwise this part can't run.
if [ "$(id -u)" = 0 ]; then
    bindir=$(mktemp -d /tmp/hs-ctl-XXXXXX)
    trap 'bg_cleanup; rm -rf "$bindir"' EXIT
    cp "$HOTSPUR" "$bindir/hotspur"
    chmod 755 "$bindir" "$bindir/hotspur"
    r=$(rc setpriv --reuid=65534 --regid=65534 --clear-groups "$bindir/hotspur" ctl "$pid" status)
    echo "as uid 65534: exit $r: $(cat err.txt)"
    [ "$r" = 2 ] && grep -qi "permission denied" err.txt || fail "another uid: exit $r: $(cat out.txt err.txt)"
    [ ! -s out.txt ] || fail "another uid got an answer: $(cat out.txt)"
    # Past the directory (file-system uid 0, effective uid 65534): the agent
    # itself must refuse the peer.
    /usr/bin/python3 - "$defdir/$pid.sock" >peer.txt 2>&1 <<'PY' || fail "peer test: $(cat peer.txt)"
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
os.setresgid(65534, 65534, 0)
os.setresuid(65534, 65534, 0)   # saved uid 0 lets us set the fs uid back
libc.setfsuid(0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    s.sendall(b"status\n")
    reply = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        reply += b
except OSError as e:
    reply = ("<%s>" % e).encode()
print("reply:", reply.decode(errors="replace").strip() or "<closed>")
sys.exit(1 if reply.startswith(b"ok") else 0)
PY
    cat peer.txt
    kill -0 "$pid" || fail "the daemon died of a foreign peer"
else
    echo "not root: the other-uid part needs root (setpriv) and was not run"
fi
kill -TERM "$pid"
wait "$pid" || fail "daemon exited with $?"
pass "ctl listing, stale sockets, exit statuses, other uids refused"
