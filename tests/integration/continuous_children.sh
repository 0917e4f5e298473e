# continuous_children.sh — continuous mode across fork and exec: forktwo's
# parent burns in parent_burn, a forked child in child_one_burn, an
# exec'ed child in child_two_burn. With children followed, each process
# uploads its own windows from its own upload thread (a fork child starts
# with an empty queue and clean counters), so every function arrives, and
# no window of one process holds another's function.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_FOLLOW=1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/forktwo" 2500 >out 2>err || fail "forktwo failed: $(cat err)"
cat out
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
sleep 0.3
fake_summary | awk -F'\t' '$4 == "cpu"' >cpu
[ "$(cut -f7 cpu | sort -u | wc -l)" = "$(wc -l <cpu)" ] || fail "an upload was sent twice"
seen=""
while IFS=$'\t' read -r k _; do
    f="$FAKE_DIR/req.$k.body"
    fns=""
    for fn in parent_burn child_one_burn child_two_burn; do
        [ "$(through "$f" "$fn")" -gt 0 ] && fns="$fns $fn"
    done
    echo "upload $k:${fns:- (idle)}"
    [ "$(echo "$fns" | wc -w)" -le 1 ] || fail "upload $k mixes processes:$fns"
    seen="$seen$fns"
done <cpu
for fn in parent_burn child_one_burn child_two_burn; do
    case " $seen " in *" $fn "*) ;; *) fail "no upload holds $fn" ;; esac
done
pass "parent, fork child and exec'ed child each uploaded their own windows"
