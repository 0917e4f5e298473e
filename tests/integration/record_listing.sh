# record_listing.sh — `hotspur record` lists every profile of the run and
# says the truth when there is none (issue 13):
#  - the part an image wrote before exec() (NAME.PID.execN) is listed and
#    symbolized;
#  - after `hotspur ctl PID dump`, the process's exit file is the next
#    numbered part (NAME.2.pb.gz): listed, with the dump itself (record used
#    to say no profile was written);
#  - a daemon that outlives CMD (double fork): record waits for it a
#    bounded time (--wait) and lists its file; one still running is named
#    with the file it will write, and `hotspur symbolize` names that file's
#    frames once it is there;
#  - -o NAME without .pb.gz: NAME is listed;
#  - a static program (and, when the test runs as root, a set-user-ID one)
#    gets a message saying the agent could not run in it;
#  - many processes (a build): past 20 files, the other processes' files
#    without a sample are counted on one line, not listed one each; the
#    files with samples and the command's own are listed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

# exec: ender computes 300 ms in ender_work, then execs /bin/true
"$HOTSPUR" record -o ex.pb.gz -- "$PROGS/ender" exec 2>ex.err || fail "record of ender exec failed: $(cat ex.err)"
cat ex.err
part=$(ls ex.*.exec1.pb.gz 2>/dev/null) || fail "no exec part was written"
grep -q "^hotspur: wrote $TMP/$part " ex.err || fail "record did not list $part: $(cat ex.err)"
grep -q "^hotspur: wrote $TMP/ex.pb.gz " ex.err || fail "record did not list the exec'd image's ex.pb.gz"
[ "$(through "$part" ender_work)" -gt 0 ] || fail "$part has no ender_work"
! grep -q "no profile" ex.err || fail "record said no profile was written: $(cat ex.err)"

# -o without the .pb.gz suffix: the file is listed under its own name (record
# said "no profile written" while it had been)
"$HOTSPUR" record -o plain -- /bin/true 2>plain.err || fail "record -o plain failed: $(cat plain.err)"
cat plain.err
[ -s plain ] || fail "record -o plain wrote no file plain"
grep -q "^hotspur: wrote $TMP/plain " plain.err || fail "record did not list plain: $(cat plain.err)"
! grep -q "no profile" plain.err || fail "record said no profile was written: $(cat plain.err)"

# ctl dump, then the exit file is part 2
echo 0 >phase
"$HOTSPUR" record -o d.pb.gz -- "$PROGS/daemon" "$TMP/phase" >daemon.out 2>d.err &
rec=$!
bg_track "$rec"
wait_until 60 grep -q ready daemon.out || fail "daemon did not start"
dpid=$(tr -d " " <"/proc/$rec/task/$rec/children") # (pgrep hangs under an ASan preload)
[ -n "$dpid" ] || fail "no daemon under record"
bg_track "$dpid"
echo 1 >phase
sleep 0.5
"$HOTSPUR" ctl "$dpid" dump >dump.txt 2>&1 || fail "ctl dump failed: $(cat dump.txt)"
kill -TERM "$dpid"
wait "$rec" || fail "record of the daemon failed: $(cat d.err)"
cat d.err
grep -q "^hotspur: wrote $TMP/d.1.pb.gz " d.err || fail "the dump d.1.pb.gz is not listed: $(cat d.err)"
grep -q "^hotspur: wrote $TMP/d.2.pb.gz " d.err || fail "the exit part d.2.pb.gz is not listed: $(cat d.err)"
! grep -q "no profile" d.err || fail "record said no profile was written: $(cat d.err)"
[ "$(through d.2.pb.gz idle_wait)" -gt 0 ] || [ "$("$HOTSPUR" top d.2.pb.gz | grep -c ' 0x[0-9a-f]* \[daemon\]')" = 0 ] ||
    fail "d.2.pb.gz is not symbolized"

# A daemon: sh starts a subshell that outlives it by a second (then 300 ms
# of CPU: many seconds on a loaded machine; record returns as soon as it
# ends, so the bound only says when to give up).
"$HOTSPUR" record --wait 120 -o dm.pb.gz -- sh -c "(sleep 1; exec $PROGS/ender _exit) & exit 0" 2>dm.err ||
    fail "record of the daemon failed: $(cat dm.err)"
cat dm.err
late=$(for f in dm.*.pb.gz; do if [ "$(through "$f" ender_work)" -gt 0 ]; then echo "$f"; fi; done | head -n 1)
[ -n "$late" ] || fail "no file of the daemon has ender_work (waited for it?): $(ls dm.*)"
grep -q "^hotspur: wrote $TMP/$late " dm.err || fail "the daemon's $late is not listed"

# One that outlives --wait: named, then symbolized by hand.
"$HOTSPUR" record --wait 0 -o lt.pb.gz -- sh -c "(sleep 2; exec $PROGS/ender _exit) & exit 0" 2>lt.err ||
    fail "record of the late daemon failed: $(cat lt.err)"
cat lt.err
said=$(sed -n 's/^hotspur: process [0-9]* (.*) of this run is still running: it writes \([^ ]*\) when it ends.*/\1/p' lt.err)
[ -n "$said" ] || fail "record did not name the processes still running: $(cat lt.err)"
for f in $said; do wait_until 120 test -s "$f" || fail "$f never appeared"; done
sleep 0.5
named=0
for f in $said; do
    [ "$(through "$f" ender_work)" = 0 ] || fail "$f is symbolized already: the test proves nothing"
    "$HOTSPUR" symbolize "$f" || fail "symbolize $f failed"
    if [ "$(through "$f" ender_work)" -gt 0 ]; then named=1; fi
done
[ "$named" = 1 ] || fail "no file of the late daemon has ender_work after symbolize: $said"

# A static program: the agent can't run in it.
printf 'int main(void) { return 0; }\n' >st.c
cc -static -o st st.c || fail "cannot build a static program (libc6-dev's libc.a)"
"$HOTSPUR" record -o st.pb.gz -- ./st 2>st.err || fail "record of a static program failed"
cat st.err
grep -q "statically linked" st.err || fail "no message about the static program: $(cat st.err)"
if [ "$(id -u)" = 0 ]; then
    cp /bin/true suid && chown nobody suid && chmod u+s suid
    "$HOTSPUR" record -o su.pb.gz -- ./suid 2>su.err || fail "record of a setuid program failed"
    cat su.err
    if [ -e su.pb.gz ]; then
        echo "note: the set-user-ID bit had no effect here (a nosuid mount?): the agent ran"
    else
        grep -q "set-user-ID" su.err || fail "no message about the setuid program: $(cat su.err)"
    fi
else
    echo "note: not root: the set-user-ID case is not tested (it needs a program owned by another user)"
fi
pass "record lists exec parts, numbered exit parts, daemons' files, and says why a static program has none"

# many short processes: 30 /bin/true and one child that computes
mkdir many
"$HOTSPUR" record -o many/m.pb.gz -- sh -c 'for i in $(seq 30); do /bin/true; done; "$0" exec' "$PROGS/ender" \
    2>many.err || fail "record of 30 short processes failed: $(cat many.err)"
cat many.err
on_disk=$(find many -name '*.pb.gz' | wc -l)
[ "$on_disk" -ge 32 ] || fail "expected at least 32 files in many/, found $on_disk"
listed=$(grep -c '^hotspur: wrote ' many.err || true)
counted=$(sed -n 's/^hotspur: and \([0-9]*\) more files without a sample (.*), such as .*/\1/p' many.err)
[ -n "$counted" ] || fail "no line counting the files without a sample: $(cat many.err)"
[ $((listed + counted)) = "$on_disk" ] || fail "$listed listed + $counted counted != $on_disk files on disk"
# listed: sh's own file, the computing child's, and each /bin/true that
# caught a sample (its CPU is 1-2 ms against the 10 ms interval: 4 of 30 in a
# fresh-clone CI run on a quiet machine); the 20-odd without one are counted
[ "$listed" -le 12 ] || fail "$listed files listed one by one (expected the few with samples)"
grep -q "^hotspur: wrote $TMP/many/m.pb.gz " many.err || fail "the command's own file is not listed"
grep -Eq "^hotspur: wrote $TMP/many/m\.[0-9]+\.(exec1\.)?pb\.gz \([1-9][0-9]* samples" many.err ||
    fail "the child with samples is not listed: $(cat many.err)"
pass "past 20 files, the files without a sample are counted on one line"
