# agent_cpu_short.sh — short threads and processes are not under-counted
# (issue 13): 200 threads x 5 ms of CPU and 100 processes x 5 ms at 100 Hz
# (a 10 ms period: each lives half a period). Each timer starts at a random
# phase and a period that expired but was not delivered at the end is
# counted, so the profile's total equals the measured CPU in expectation.
# With ~100 and ~50 samples expected (each thread or process gets 0 or 1),
# the standard deviations are about 7% and 10%: the tolerances are 3.5 and
# 3 of them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

HOTSPUR_OUTPUT="$TMP/t.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cpu_short" threads 200 5 >t.out
want=$(sed -n 's/^cpu_ns=\([0-9]*\).*/\1/p' t.out)
# The worker threads' samples: all but the main thread's (a period that
# ends as a thread ends is counted at its start routine, not at short_work;
# under ASan that routine is ASan's thread wrapper, not worker).
got=$(( $(total t.pb.gz --sample-index cpu) - $(through t.pb.gz main --sample-index cpu) ))
echo "threads: profile ${got} ns, measured ${want} ns ($(pct "$got" "$want")%)"
ratio_ok "$got" "$want" 0.75 1.25 || fail "200 threads x 5 ms: the profile has $got ns of $want ns"

mkdir procs
HOTSPUR_OUTPUT="$TMP/procs/p.%p.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cpu_short" procs 100 5 >p.out
want=$(sed -n 's/^cpu_ns=\([0-9]*\).*/\1/p' p.out)
ppid=$(sed -n 's/.* pid=//p' p.out)
got=0
n=0
for f in procs/*.pb.gz; do
    n=$((n + 1))
    [ "$f" = "procs/p.$ppid.pb.gz" ] && continue # the parent's own (it forks and waits)
    got=$((got + $(total "$f" --sample-index cpu)))
done
[ "$n" -ge 100 ] || fail "only $n profiles for 101 processes"
echo "procs: profile ${got} ns, measured ${want} ns ($(pct "$got" "$want")%) in $n files"
ratio_ok "$got" "$want" 0.7 1.3 || fail "100 processes x 5 ms: the profiles have $got ns of $want ns"
pass "short threads and processes: CPU totals right"
