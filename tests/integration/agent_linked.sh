# agent_linked.sh — the agent used by linking instead of LD_PRELOAD: the
# program is profiled from the environment, hotspur_dump() writes a valid
# mid-run profile, and the exit-time profile holds at least as much.
source "$(dirname "$0")/lib.sh"

HOTSPUR_OUTPUT="$TMP/exit.%p.pb.gz" "$PROGS/linked" "$TMP/mid.pb.gz" > out.txt
grep -q "^agent [0-9]" out.txt || fail "hotspur_version: $(cat out.txt)"
[ -s mid.pb.gz ] || fail "hotspur_dump wrote nothing"
exit_file=$(ls exit.*.pb.gz)
total() { "$HOTSPUR" top "$1" | awk '/^Duration:/ { print $0 }' | sed 's/.*Total samples = \([^ ]*\).*/\1/'; }
"$HOTSPUR" top mid.pb.gz | grep -q ' linked_work$' || fail "mid-run profile lacks linked_work"
"$HOTSPUR" top "$exit_file" | grep -q ' linked_work$' || fail "exit profile lacks linked_work"
echo "mid-run total: $(total mid.pb.gz); at exit: $(total "$exit_file")"
# Disabled agent: no file.
rm -f exit.*.pb.gz
HOTSPUR_DISABLE=1 HOTSPUR_OUTPUT="$TMP/exit.%p.pb.gz" "$PROGS/linked" "$TMP/mid2.pb.gz" > /dev/null 2>&1 && fail "dump succeeded while disabled"
ls exit.*.pb.gz 2>/dev/null && fail "disabled agent wrote a profile"
echo "linked agent and hotspur_dump: ok"

# Threads that existed before hotspur_start() are sampled too (found in
# /proc/self/task); the program needs no environment at all.
env -u HOTSPUR_OUTPUT "$PROGS/late_start" "$TMP/late.pb.gz" || fail "late_start failed"
"$HOTSPUR" top late.pb.gz > late.txt
awk '$6 == "early_thread_work" { sub("%", "", $5); ok = $5 + 0 >= 80 } END { exit !ok }' late.txt ||
    fail "threads started before the agent are not sampled: $(cat late.txt)"
pass "threads that predate hotspur_start are sampled"
