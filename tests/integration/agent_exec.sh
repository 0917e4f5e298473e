# agent_exec.sh — the code a process runs before it exec()s is not lost
# (issue 13): the image writes its profile before it is replaced, named
# NAME.PID.execN so the new image (same pid, same name) does not overwrite
# it; an exec that fails changes nothing (profiling goes on, the exit file
# covers what follows).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

HOTSPUR_OUTPUT="$TMP/x.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" exec || fail "ender exec failed"
ls
pre=$(ls x.*.exec1.pb.gz) || fail "no profile of the image before exec"
ns=$(through "$pre" ender_work --sample-index cpu)
echo "before exec: $pre has ender_work ${ns} ns"
ratio_ok "$ns" 300000000 0.8 1.2 || fail "the image before exec: ender_work $ns ns of ~300 ms"
[ -s x.pb.gz ] || fail "the new image (/bin/true) wrote no profile"

HOTSPUR_OUTPUT="$TMP/y.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" exec_fail || fail "ender exec_fail failed"
pre=$(ls y.*.exec1.pb.gz) || fail "no profile before the failed exec"
a=$(through "$pre" ender_work --sample-index cpu)
b=$(through y.pb.gz ender_more --sample-index cpu)
c=$(through y.pb.gz ender_work --sample-index cpu)
echo "failed exec: before ${a} ns of ender_work; exit file ${b} ns of ender_more, ${c} ns of ender_work"
ratio_ok "$a" 300000000 0.8 1.2 || fail "before the failed exec: ender_work $a ns"
ratio_ok "$b" 300000000 0.8 1.2 || fail "after the failed exec: ender_more $b ns (profiling did not go on)"
[ "$c" = 0 ] || fail "the exit file counts ender_work again ($c ns)"
pass "the image before exec is written; a failed exec goes on"
