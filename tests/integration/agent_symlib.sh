# agent_symlib.sh — the symbolizer is a second object, libhotspur-symbolize.so
# beside libhotspur.so, loaded only when a profile is symbolized in the
# process (src/agent/symlib.h). Checks: the agent itself needs none of the
# symbolizer's libraries; under `hotspur record` (symbols deferred) a
# program never maps them, and its profile is still symbolized (by record);
# without record the agent loads it as it starts and the profile has names;
# a program forking from its first moment is not hurt;
# found beside an agent preloaded by a relative path after the program
# changed directory; a missing companion gives one clear message, the
# program's own exit status and a profile of addresses that `hotspur
# symbolize` names.
source "$(dirname "$0")/lib.sh"

lib_dir=$(dirname "$HOTSPUR_LIB")
[ -f "$lib_dir/libhotspur-symbolize.so" ] || fail "no libhotspur-symbolize.so beside $HOTSPUR_LIB"
needed=$(readelf -d "$HOTSPUR_LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "libhotspur.so needs: $needed"
for l in libdw libelf libstdc++ libdeflate; do
    case " $needed" in *" $l"*) fail "libhotspur.so needs $l: $needed" ;; esac
done

# Under record: the symbolizer never enters the program.
"$HOTSPUR" record -o rec.pb.gz -- bash -c 'sleep 0.3; cat /proc/$$/maps >rec.maps; true' 2>rec.err ||
    fail "record failed: $(cat rec.err)"
grep -q libhotspur.so rec.maps || fail "the agent was not loaded under record"
if grep -E 'libhotspur-symbolize|libdw|libelf' rec.maps; then
    fail "the symbolizer was loaded into a program under record"
fi
"$HOTSPUR" top -n 100 rec.pb.gz >rec.top || fail "cannot read rec.pb.gz"
grep -q 'Showing' rec.top || fail "rec.pb.gz: no report: $(cat rec.top)"

# Without record: loaded as the agent starts; the profile has names.
HOTSPUR_OUTPUT="$TMP/plain.pb.gz" HOTSPUR_CPU_HZ=500 LD_PRELOAD="$AGENT_PRELOAD" \
    bash -c 'sleep 0.3; cat /proc/$$/maps >plain.maps; true' 2>plain.err || fail "bash under the agent failed"
grep -q libhotspur-symbolize plain.maps || fail "the agent did not load the symbolizer at start"
HOTSPUR_OUTPUT="$TMP/burn.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/cd_burn" 300 2>burn.err ||
    fail "cd_burn failed: $(cat burn.err)"
"$HOTSPUR" top -n 100 burn.pb.gz | grep -q 'cd_burn_work' || fail "burn.pb.gz is not symbolized in the process"

mkdir fe
# A program that forks from its first moment: no child may meet the load
# half done (it was on the agent thread, racing with main: children got
# relocation errors or hung at exit).
for i in 1 2 3 4 5; do
    HOTSPUR_OUTPUT="$TMP/fe/fe.%p.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" timeout 60 "$PROGS/fork_early" 50 2>fe.err ||
        fail "fork_early under the agent: status $? (124: hung): $(cat fe.err)"
    grep -q 'hotspur:' fe.err && fail "fork_early under the agent: $(cat fe.err)"
done

# A relative preload path, resolved after the program changed directory:
# the periodic profile is symbolized in the process when the window ends.
mkdir rel
cp "$HOTSPUR_LIB" "$lib_dir/libhotspur-symbolize.so" rel/
preload="${LD_PRELOAD:+$LD_PRELOAD:}rel/libhotspur.so"
HOTSPUR_OUTPUT="$TMP/per.%n.pb.gz" HOTSPUR_PERIOD=10s HOTSPUR_DURATION=300ms HOTSPUR_DEFER_SYMBOLS=1 \
    LD_PRELOAD="$preload" "$PROGS/cd_burn" 800 2>rel.err || fail "cd_burn with a relative preload failed: $(cat rel.err)"
[ -s per.1.pb.gz ] || fail "no periodic profile: $(ls) $(cat rel.err)"
grep -q 'cannot' rel.err && fail "relative preload: $(cat rel.err)"
"$HOTSPUR" top -n 100 per.1.pb.gz | grep -q 'cd_burn_work' || fail "per.1.pb.gz is not symbolized"

# No companion: one message, the program's status, addresses only.
mkdir alone
cp "$HOTSPUR_LIB" alone/
set +e
HOTSPUR_OUTPUT="$TMP/alone.pb.gz" LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$TMP/alone/libhotspur.so" \
    "$PROGS/cd_burn" 300 2>alone.err
rc=$?
set -e
[ "$rc" = 0 ] || fail "cd_burn without the companion exited $rc: $(cat alone.err)"
cat alone.err
[ "$(grep -c 'hotspur: cannot load the symbolizer' alone.err)" = 1 ] ||
    fail "want one message about the missing symbolizer: $(cat alone.err)"
grep -q "alone/libhotspur-symbolize.so" alone.err || fail "the message does not name the file: $(cat alone.err)"
[ -s alone.pb.gz ] || fail "no profile without the companion"
"$HOTSPUR" top -n 100 alone.pb.gz | grep -q 'cd_burn_work' && fail "alone.pb.gz has names without a symbolizer"
"$HOTSPUR" symbolize alone.pb.gz >sym.out 2>&1 || fail "hotspur symbolize failed: $(cat sym.out)"
"$HOTSPUR" top -n 100 alone.pb.gz | grep -q 'cd_burn_work' || fail "hotspur symbolize did not name alone.pb.gz"
pass "the symbolizer is loaded only where profiles are symbolized, found beside the agent, and missed clearly"
