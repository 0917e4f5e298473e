# continuous_errors.sh — how the agent takes the collector's answers:
# 500 and 429 are retried later with the same id (so a retry is never
# stored twice) after a backoff (no hot loop), and once the collector
# answers 200 the profiles arrive; 400 drops the profile at once (no
# retry), reported once and counted.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

# ---- 500 for 3 s, then 200 ----
for code in 500 429; do
    fake_start
    fake_mode "$code"
    HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms \
        LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 6000 0 >out 2>err &
    prog=$!
    sleep 3
    fake_mode ok
    wait "$prog" || fail "phases failed: $(cat err)"
    cat err
    sleep 0.3
    fake_summary >sum
    awk -F'\t' '{ print $1, $7 }' sum >ids
    # Requests answered $code: those before the switch (the recorder
    # answers by the mode at receipt; the switch time is approximate, so
    # count by id: an id seen more than once was retried).
    total=$(wc -l <sum)
    distinct=$(cut -f7 sum | sort -u | wc -l)
    echo "$code: $total requests for $distinct profiles"
    [ "$total" -gt "$distinct" ] || fail "$code: no profile was retried"
    # Backoff: 1 s doubling (capped at the 1 s period), jittered [0.5, 1] x:
    # at most ~3 s / 0.5 s + 1 attempts while failing, plus the later
    # profiles' first attempts.
    [ "$((total - distinct))" -le 8 ] || fail "$code: $((total - distinct)) retries in 3 s: no backoff"
    grep -q "cannot upload to .*: $code " err || fail "$code not reported: $(cat err)"
    sent=$(sed -n 's/.*: \([0-9]*\) sent, .*/\1/p' err)
    [ -z "$sent" ] || [ "$sent" -ge "$distinct" ] || fail "$code: $sent sent of $distinct"
    fake_stop
done

# ---- 400: refused, dropped at once ----
fake_start
fake_mode 400
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 3000 0 >out 2>err || fail "phases failed: $(cat err)"
cat err
sleep 0.3
fake_summary >sum
total=$(wc -l <sum)
distinct=$(cut -f7 sum | sort -u | wc -l)
[ "$total" -ge 2 ] || fail "400: only $total requests in 3 s"
[ "$total" = "$distinct" ] || fail "400: a refused profile was retried ($total requests, $distinct ids)"
[ "$(grep -c 'refused a cpu profile: 400' err)" = 1 ] || fail "400: not reported exactly once: $(cat err)"
refused=$(sed -n 's/.* \([0-9]*\) refused by the server.*/\1/p' err)
[ "$refused" = "$total" ] || fail "400: $refused counted as refused, $total refused"
pass "500 and 429 retried with the same id after a backoff; 400 dropped and counted"
