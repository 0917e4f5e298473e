# symbolize_cli.sh — `hotspur symbolize FILE` names the frames of a profile
# the agent wrote with raw addresses (HOTSPUR_DEFER_SYMBOLS=1: what a daemon
# that outlives `hotspur record` leaves behind; issue 13), in place or to -o;
# a second run changes nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

HOTSPUR_OUTPUT="$TMP/raw.pb.gz" HOTSPUR_DEFER_SYMBOLS=1 LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/ender" _exit || [ $? = 3 ] ||
    fail "ender failed"
[ -s raw.pb.gz ] || fail "no profile"
[ "$(through raw.pb.gz ender_work)" = 0 ] || fail "the raw profile is symbolized already: the test proves nothing"
cp raw.pb.gz inplace.pb.gz
"$HOTSPUR" symbolize -o named.pb.gz raw.pb.gz || fail "symbolize -o failed"
"$HOTSPUR" symbolize inplace.pb.gz || fail "symbolize in place failed"
for f in named.pb.gz inplace.pb.gz; do
    all=$(total "$f")
    at=$(through "$f" ender_work)
    echo "$f: ${at} of ${all} in ender_work"
    ratio_ok "$at" "$all" 0.8 1 || fail "$f: ender_work has $at of $all after symbolizing"
    "$HOTSPUR" top "$f" | grep -q ' main$' || fail "$f: main is not named"
done
cp named.pb.gz again.pb.gz
"$HOTSPUR" symbolize again.pb.gz || fail "symbolizing again failed"
[ "$("$HOTSPUR" top again.pb.gz | tail -n +2)" = "$("$HOTSPUR" top named.pb.gz | tail -n +2)" ] ||
    fail "symbolizing twice changed the report"
"$HOTSPUR" symbolize missing.pb.gz 2>/dev/null && fail "a missing file is not an error"
pass "symbolize names a raw profile's frames"
