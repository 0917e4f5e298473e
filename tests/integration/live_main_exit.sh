# live_main_exit.sh — a process whose main thread leaves (pthread_exit)
# while another thread runs on: it is still running, so `record -p` keeps
# recording it to the end of --duration (its main thread's events ending
# is not the process ending), and its samples stay named (process label and
# frames) under record -p attached before or after the main thread left and
# under record -a, though /proc/PID/maps of a process whose main thread is
# gone is empty (its mappings are read through a thread that lives).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"

share() { awk -v f="$1" '/^Showing nodes accounting for/ { t = $(NF - 3); sub("%,?", "", t) }
                         $6 == f { c = $5; sub("%", "", c) } END { if (t > 0) printf "%.1f", 100 * c / t }' "$2"; }
# the profile's duration in seconds ("Duration: 3s", "2.98s", "450ms")
duration() { awk '/^Duration:/ { v = $2; sub(",", "", v); if (v ~ /ms$/) { sub("ms", "", v); print v / 1000 } else { sub("s", "", v); print v + 0 } }' "$1"; }

# 1. attached before the main thread leaves (it sleeps 700 ms, then leaves);
# the worker burns in burn_b all along. The main thread's events hang up
# when it leaves: the recording goes on to its end (it stopped there), and
# the process is one process to the end (its samples were charged to a
# second process, as if the pid had been reused).
NAME=lmx$$ # a name of its own: other live_target processes may run meanwhile
cp "$PROGS/live_target" "$NAME"
"./$NAME" mainexit 700 & T=$!
PIDS+=($T)
sleep 0.05
"$HOTSPUR" record -p "$T" -F 100 --duration 3 -o before.pb.gz 2>rec1.err || fail "record -p: $(cat rec1.err)"
cat rec1.err
grep -q 'State:.*Z' /proc/$T/status || fail "the main thread did not leave: $(grep State /proc/$T/status)"
"$HOTSPUR" top --tagfocus process=$NAME before.pb.gz >top1.txt 2>&1 || fail "top: $(cat top1.txt)"
d1=$(duration top1.txt)
s1=$(share burn_b top1.txt)
echo "attached before: recorded ${d1:-0} s of 3, burn_b ${s1:-0}% of the process's samples"
awk -v d="${d1:-0}" 'BEGIN { exit !(d >= 2.9) }' || fail "record -p stopped when the main thread left: $(head -15 top1.txt)"
grep -q ' from 1 process ' rec1.err || fail "the process was taken for two when its main thread left: $(cat rec1.err)"
awk -v s="${s1:-0}" 'BEGIN { exit !(s >= 90) }' || fail "record -p: burn_b not named: $(head -15 top1.txt)"

# 2. attached after the main thread left (its /proc/PID/maps is empty now)
"$HOTSPUR" record -p "$T" -F 100 --duration 1.5 -o after.pb.gz 2>rec2.err || fail "record -p after: $(cat rec2.err)"
"$HOTSPUR" top --tagfocus process=$NAME after.pb.gz >top2.txt 2>&1 || fail "top: $(cat top2.txt)"
s2=$(share burn_b top2.txt)
echo "attached after: burn_b ${s2:-0}% of the process's samples"
awk -v s="${s2:-0}" 'BEGIN { exit !(s >= 90) }' || fail "record -p after the main thread left: $(head -15 top2.txt)"

# 3. record -a: the process named and its frames named
"$HOTSPUR" record -a -F 100 --duration 1.5 -o all.pb.gz 2>rec3.err || fail "record -a: $(cat rec3.err)"
"$HOTSPUR" top --tagfocus process=$NAME all.pb.gz >top3.txt 2>&1 || fail "top -a: $(cat top3.txt)"
s3=$(share burn_b top3.txt)
echo "record -a: burn_b ${s3:-0}% of the process's samples"
awk -v s="${s3:-0}" 'BEGIN { exit !(s >= 90) }' || fail "record -a after the main thread left: $(head -15 top3.txt)"
pass "a process whose main thread left: recorded to the end, named, under -p and -a"
