# agent_stress.sh — the agent must never break its host: `stress` runs
# waves of threads (some blocking all signals), forks and an exec, its own
# SIGPROF timer, a SIGUSR1 storm and grabs every real-time signal. Under the
# agent at 1000 Hz with %p output (so fork children profile themselves) the
# output and status equal a plain run, every written profile is valid, and
# the parent's profile has samples from the worker threads.
source "$(dirname "$0")/lib.sh"

"$PROGS/stress" 12 16 > plain.out
HOTSPUR_OUTPUT="$TMP/stress.%p.pb.gz" HOTSPUR_CPU_HZ=1000 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/stress" 12 16 > prof.out
cmp -s plain.out prof.out || fail "output differs: $(cat plain.out) vs $(cat prof.out)"
n=$(ls stress.*.pb.gz | wc -l)
# parent + 8 forked children that exit() (4 exec /bin/true, whose agent
# also writes since the name has %p): at least 9 files
[ "$n" -ge 9 ] || fail "only $n profiles written"
for f in stress.*.pb.gz; do
    "$HOTSPUR" top "$f" > /dev/null || fail "$f is not a valid profile"
done
# The parent is the file with the most samples; its workers' time is there,
# including threads that blocked every signal (id % 3 == 0 run the same code).
parent=$(for f in stress.*.pb.gz; do
    printf '%s %s\n' "$("$HOTSPUR" traces "$f" 2>/dev/null | grep -c stress_work || true)" "$f"; done | sort -n | tail -1 | cut -d' ' -f2)
"$HOTSPUR" top -n 100 "$parent" | grep -q ' stress_work$' || fail "no worker samples in $parent"

# Same under record (no %p: only the first process writes).
"$HOTSPUR" record -F 1000 -o rec.pb.gz -- "$PROGS/stress" 6 16 > rec.out 2>/dev/null
"$PROGS/stress" 6 16 > plain6.out
cmp -s plain6.out rec.out || fail "output under record differs"
pass "stress: output identical, $n valid profiles"
