# agent_endings.sh — processes that end without exit() still write what
# they collected (issue 13): a forked child ending with _exit, a process
# calling _exit, dying of SIGSEGV, SIGABRT or SIGBUS (after writing, the
# signal ends it as before: same status, a core dump where there was one),
# and `sh -c` (dash ends with _exit).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

# status MODE [env...]: run ender MODE with core dumps on; prints
# "exit N" or "signal N core|nocore" as waitpid saw it.
status() {
    local mode=$1; shift
    (ulimit -c unlimited 2>/dev/null || true
     python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    for kv in sys.argv[3:]:
        k, v = kv.split("=", 1)
        os.environ[k] = v
    os.execv(sys.argv[1], sys.argv[1:3])
_, st = os.waitpid(pid, 0)
if os.WIFSIGNALED(st):
    print("signal", os.WTERMSIG(st), "core" if os.WCOREDUMP(st) else "nocore")
else:
    print("exit", os.WEXITSTATUS(st))' "$PROGS/ender" "$mode" "$@")
}

modes="_exit segv abort bus"
# Under an ASan build (its runtime preloaded into everything) ASan owns the
# crash signals and reports them itself: the agent leaves them alone.
[ -n "$asan_rt" ] && { echo "NOT APPLICABLE under ASan: crash signals (ASan handles them)"; modes=_exit; }
for mode in $modes; do
    mkdir -p "plain-$mode" "prof-$mode"
    plain=$(cd "plain-$mode" && status "$mode")
    prof=$(cd "prof-$mode" && status "$mode" HOTSPUR_OUTPUT="$TMP/prof-$mode/e.pb.gz" LD_PRELOAD="$AGENT_PRELOAD")
    echo "$mode: alone '$plain', under the agent '$prof'"
    [ "$plain" = "$prof" ] || fail "$mode: ended '$prof' under the agent, '$plain' alone"
    [ -s "prof-$mode/e.pb.gz" ] || fail "$mode: no profile written"
    ns=$(through "prof-$mode/e.pb.gz" ender_work --sample-index cpu)
    ratio_ok "$ns" 300000000 0.8 1.2 || fail "$mode: ender_work has $ns ns of ~300 ms"
done

HOTSPUR_OUTPUT="$TMP/fe.%p.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" fork_exit || fail "fork_exit failed"
child=0
for f in fe.*.pb.gz; do
    ns=$(through "$f" ender_work --sample-index cpu)
    [ "$ns" -gt 0 ] && child=$ns
done
ratio_ok "$child" 300000000 0.8 1.2 || fail "the forked child that ended with _exit: $child ns of ~300 ms"

# A root `sh -c` whose last command is not exec'd: dash runs it as a child
# and ends with _exit.
HOTSPUR_OUTPUT="$TMP/sh.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" sh -c "$PROGS/ender fork_exit; true"
[ -s sh.pb.gz ] || fail "sh -c wrote no profile"
pass "profiles written at _exit and fatal signals, statuses unchanged"
