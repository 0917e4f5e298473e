# continuous_exec.sh — continuous mode and exec(): the image about to be
# replaced cuts its open window short and uploads it (and anything still
# queued) before the exec, waiting at most 1 s; what could not be sent in
# that time is written to its exec file (NAME.PID.execN.pb.gz) instead of
# being lost. ender computes 300 ms in ender_work, then execs /bin/true
# (which loads the agent again, as its own service); exec_fail computes
# 300 ms more in ender_more after an exec that fails. One window covers
# the whole run (10 s every 10 s): the exec cuts it short.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

# uploads_with FUNC -> how many recorded cpu uploads have FUNC, and its ns in all
uploads_with() {
    local k f n=0 total=0 v
    for k in $(fake_summary | awk -F'\t' '$4 == "cpu" { print $1 }'); do
        f="$FAKE_DIR/req.$k.body"
        v=$(through "$f" "$1" --sample-index cpu)
        if [ "$v" -gt 0 ]; then n=$((n + 1)); total=$((total + v)); fi
    done
    echo "$n $total"
}

# ender_ok MODE: run ender MODE against a fresh recorder that answers, in a
# fresh directory (left as the current one); the agent must say nothing.
ender_ok() {
    mkdir "$1" && cd "$1" || fail "cannot make $1"
    fake_start
    HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=10s HOTSPUR_DURATION=10s HOTSPUR_SERVICE=ender \
        LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" "$1" >out 2>err || fail "ender $1 failed: $(cat err)"
    [ -z "$(agent_stderr err)" ] || fail "unexpected stderr: $(cat err)"
    sleep 0.3
}

# ---- the collector answers: the window is uploaded, no file is written ----
ender_ok exec
fake_summary
read -r n ns < <(uploads_with ender_work)
echo "uploaded: $n profile(s) with ender_work, ${ns} ns"
[ "$n" -ge 1 ] || fail "the window cut short by the exec was not uploaded"
awk -v g="$ns" 'BEGIN { exit !(g >= 0.21e9 && g <= 0.39e9) }' ||
    fail "uploads before the exec hold $ns ns of ender_work, want ~300 ms"
ls
! ls ./*exec*.pb.gz >/dev/null 2>&1 || fail "an exec file was written though the upload went through"
cd ..

# ---- an exec that fails: profiling goes on, nothing is counted twice ----
ender_ok exec_fail
read -r n ns < <(uploads_with ender_work)
read -r m ms < <(uploads_with ender_more)
echo "failed exec: ender_work ${ns} ns in $n upload(s), ender_more ${ms} ns in $m"
for v in "$ns" "$ms"; do
    awk -v g="$v" 'BEGIN { exit !(g >= 0.21e9 && g <= 0.39e9) }' ||
        fail "after a failed exec: ender_work $ns ns, ender_more $ms ns, want ~300 ms each"
done
cd ..

# ---- the collector never answers: at most 1 s, then the exec file ----
mkdir hang && cd hang || fail "cannot make hang"
fake_start
fake_mode hang
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=10s HOTSPUR_DURATION=10s HOTSPUR_SERVICE=ender HOTSPUR_UPLOAD_TIMEOUT=10s \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" exec >out 2>err || fail "ender exec failed: $(cat err)"
t1=$(now)
cat err
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
f=$(ls hotspur.*.exec1.pb.gz) || fail "no exec file for the window that could not be uploaded: $(ls)"
# The window ran from the agent's start to the exec, over the 0.3 s of CPU
# work (seconds of wall time on a loaded machine); after it, at most 1 s
# before the exec and at most 2 s at /bin/true's exit, not the 10 s upload
# timeout.
read -r _ win < <(env -u LD_PRELOAD python3 "$SRC/tests/integration/continuous_server.py" info "$f")
rest=$(awk -v e="$el" -v w="$win" 'BEGIN { printf "%.2f", e - w / 1e9 }')
echo "ender + /bin/true took ${el} s, ${rest} s of it after the window cut short by the exec"
awk -v r="$rest" 'BEGIN { exit !(r <= 5) }' || fail "${rest} s after the window: the exec waited for the 10 s upload timeout"
ns=$(through "$f" ender_work --sample-index cpu)
echo "$f: ender_work ${ns} ns"
awk -v g="$ns" 'BEGIN { exit !(g >= 0.21e9 && g <= 0.39e9) }' || fail "$f holds $ns ns of ender_work, want ~300 ms"
grep -q "before exec: a cpu profile not uploaded in time is in .*$f" err || fail "the exec file is not reported"
cd ..
pass "before exec the window is uploaded, or written to its exec file within 1 s"
