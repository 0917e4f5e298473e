# attach_inject.sh — `hotspur attach PID --load LIB` (issue 32, step 1): a
# library is loaded into a running process through its own dlopen and the
# process runs on as before: a read() on a pipe interrupted 20 times by
# attaches returns the data written afterwards, not EINTR; a sleep in
# progress keeps its length (nanosleep restarted with its restart block);
# a process spinning in user code is loaded into too, and one busy in
# malloc (stopped outside libc, where it holds no lock dlopen needs); the library's
# constructor runs once however many loads; a failed dlopen is reported with
# the loader's message and leaves the process alive; a statically linked
# process, a process traced by another tracer and (run as root) another
# user's process are refused in one line.
source "$(dirname "$0")/lib.sh"
PROBE="$PROGS/libattach_probe.so"

# 1. blocked in read() on a pipe
mkfifo fifo
"$PROGS/attach_reader" <fifo >reader.out 2>&1 &
rpid=$!
exec 7>fifo
for _ in $(seq 50); do grep -q ready reader.out && break; sleep 0.1; done
grep -q "ready $rpid" reader.out || fail "the reader did not start: $(cat reader.out)"
for i in $(seq 20); do
    "$HOTSPUR" attach "$rpid" --load "$PROBE" --call attach_probe_mark --arg "$TMP/mark" >attach.out 2>&1 ||
        fail "attach $i failed: $(cat attach.out)"
done
cat attach.out
grep -q "attach_probe_mark returned 4242" attach.out || fail "the call's result is not reported: $(cat attach.out)"
grep -q "system call restarted" attach.out || fail "the reader's read() was not seen as interrupted: $(cat attach.out)"
[ "$(cat mark)" = "pid $rpid loads 1" ] || fail "the probe did not run in the reader once loaded: $(cat mark)"
echo hello >&7
exec 7>&-
wait "$rpid" || fail "the reader failed after the attaches: $(cat reader.out)"
cat reader.out
grep -q "^read 6: hello$" reader.out || fail "the read did not return the data: $(cat reader.out)"
! grep -q "read -1\|nanosleep:" reader.out || fail "a system call failed in the reader: $(cat reader.out)"

# 2. a sleep in progress keeps its length
start=$(date +%s%N)
sleep 1.5 &
spid=$!
sleep 0.3
grep -q libc.so /proc/$spid/maps || fail "sleep has not loaded libc after 0.3 s"
"$HOTSPUR" attach "$spid" --load "$PROBE" >attach2.out 2>&1 || fail "attach to sleep failed: $(cat attach2.out)"
wait "$spid" || fail "sleep failed after the attach"
ms=$((($(date +%s%N) - start) / 1000000))
echo "sleep 1.5 lasted $ms ms with an attach in the middle"
[ "$ms" -ge 1450 ] || fail "the sleep was cut short by the attach: $ms ms"

# 3. spinning in user code (no system call to restart)
"$PROGS/spin_until_signal" own >spin.out 2>&1 &
xpid=$!
for _ in $(seq 50); do grep -q ready spin.out && break; sleep 0.1; done
"$HOTSPUR" attach "$xpid" --load "$PROBE" --call attach_probe_mark --arg "$TMP/mark3" >attach3.out 2>&1 ||
    fail "attach to a spinning process failed: $(cat attach3.out)"
! grep -q "restarted" attach3.out || fail "a spinning process reported as in a system call: $(cat attach3.out)"
[ "$(cat mark3)" = "pid $xpid loads 1" ] || fail "the probe did not run in the spinning process: $(cat mark3)"
kill -INT "$xpid"
wait "$xpid" || fail "the spinning process did not end by its own handler: $(cat spin.out)"
grep -q handled spin.out || fail "its SIGINT handler did not run: $(cat spin.out)"

# 3b. a thread busy in malloc (the arena's lock held half the time): it is
# stopped outside libc, else dlopen's own malloc waits for that lock forever
"$PROGS/attach_mallocer" >malloc.out 2>&1 &
mpid=$!
for _ in $(seq 50); do grep -q ready malloc.out && break; sleep 0.1; done
for i in $(seq 40); do
    timeout 20 "$HOTSPUR" attach "$mpid" --load "$PROBE" --call attach_probe_mark --arg "$TMP/mark4" \
        >attach4.out 2>&1 || { kill -9 "$mpid" 2>/dev/null || true; fail "attach $i to a process in malloc failed or hung: $(cat attach4.out)"; }
done
cat attach4.out
kill -INT "$mpid"
timeout 10 tail --pid="$mpid" -f /dev/null || { kill -9 "$mpid" 2>/dev/null || true; fail "the malloc loop hangs after the attaches"; }
wait "$mpid" || fail "the malloc loop failed: $(cat malloc.out)"
grep -q "^rounds [1-9]" malloc.out || fail "the malloc loop did not go on: $(cat malloc.out)"

# 4. a dlopen that fails: the loader's message, the process lives on
sleep 30 &
spid=$!
for _ in $(seq 50); do grep -q libc.so /proc/$spid/maps && break; sleep 0.1; done
echo "not an ELF file" >bogus.so
set +e
"$HOTSPUR" attach "$spid" --load "$TMP/bogus.so" >bad.out 2>&1
rc=$?
set -e
cat bad.out
[ "$rc" = 1 ] || fail "a failed dlopen exited $rc"
grep -q "dlopen in process $spid failed: .*bogus.so" bad.out || fail "no loader message: $(cat bad.out)"
kill -0 "$spid" || fail "the process died after a failed dlopen"
# a FIFO would block the target in dlopen's read(), loader lock held: refused
set +e
timeout 20 "$HOTSPUR" attach "$spid" --load "$TMP/fifo" >fifo.out 2>&1
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "not a regular file" fifo.out || fail "a FIFO is not refused (exit $rc): $(cat fifo.out)"
"$HOTSPUR" attach "$spid" --check | grep -q "can be attached to" || fail "--check refuses a plain process"

# 5. refusals, one line each, nothing done to the process
strace -o /dev/null -p "$spid" 2>/dev/null &
tpid=$!
for _ in $(seq 50); do [ "$(awk '/TracerPid/ { print $2 }' /proc/$spid/status)" != 0 ] && break; sleep 0.1; done
set +e
"$HOTSPUR" attach "$spid" --load "$PROBE" >traced.out 2>&1
rc=$?
set -e
cat traced.out
[ "$rc" = 1 ] && [ "$(wc -l <traced.out)" = 1 ] && grep -q "already traced by process $tpid" traced.out ||
    fail "a traced process is not refused in one line: $(cat traced.out)"
kill "$tpid"; wait "$tpid" || true
# not the owner: as root, run attach as nobody against our process
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    set +e
    setpriv --reuid=65534 --regid=65534 --clear-groups "$HOTSPUR" attach "$spid" >owner.out 2>&1
    rc=$?
    set -e
    cat owner.out
    [ "$rc" = 1 ] && [ "$(wc -l <owner.out)" = 1 ] && grep -q "belongs to uid $(id -u), not to you (uid 65534): run attach as that user, or as root" owner.out ||
        fail "another user's process is not refused in one line: $(cat owner.out)"
fi
kill "$spid"; wait "$spid" || true

"$PROGS/attach_reader_static" </dev/zero >/dev/null 2>&1 &
zpid=$!
sleep 0.2
set +e
"$HOTSPUR" attach "$zpid" --load "$PROBE" >static.out 2>&1
rc=$?
set -e
kill "$zpid"; wait "$zpid" || true
cat static.out
[ "$rc" = 1 ] && [ "$(wc -l <static.out)" = 1 ] && grep -q "statically linked" static.out ||
    fail "a static process is not refused in one line: $(cat static.out)"
pass "20 loads into a blocked read, a sleep, a spinning process; failures and refusals reported"
