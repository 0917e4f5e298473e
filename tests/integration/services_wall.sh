# services_wall.sh — the wall-clock profile, by construction: sleeper's
# worker thread sleeps about 70% of its wall time in sleep_phase and computes
# 30% in compute_phase, and prints the split it measured. The wall profile
# must give sleep_phase the measured share within 10 points (and about 70%);
# its wall nanoseconds must add up to the thread's real time; the CPU
# profile, recorded at the same time, must show compute_phase only (95% or
# more of the worker's CPU; sleep_phase gets only the skid of nanosleep). The main
# thread, blocked in pthread_join the whole time, must be sampled too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

"$HOTSPUR" record --cpu -F 500 --wall -o sl.pb.gz -- "$PROGS/sleeper" 3000 >sleeper.out 2>record.err ||
    fail "record failed: $(cat record.err)"
for t in cpu wall; do
    grep -q "wrote .*sl\.$t\.pb\.gz" record.err || fail "no $t file listed: $(cat record.err)"
    [ -s "sl.$t.pb.gz" ] || fail "sl.$t.pb.gz missing"
done
"$HOTSPUR" top sl.wall.pb.gz | grep >/dev/null '^Type: wall' || fail "sl.wall.pb.gz is not a wall profile"

read -r sleep_ms compute_ms measured < <(sed -n 's/^sleep_ms=\([0-9.]*\) compute_ms=\([0-9.]*\) sleep_pct=\([0-9.]*\)$/\1 \2 \3/p' sleeper.out)
[ -n "${measured:-}" ] || fail "sleeper printed no split: $(cat sleeper.out)"
worker=(--tagfocus thread_name=worker)
w_all=$(total sl.wall.pb.gz --sample-index wall "${worker[@]}")
w_sleep=$(through sl.wall.pb.gz sleep_phase --sample-index wall "${worker[@]}")
w_comp=$(through sl.wall.pb.gz compute_phase --sample-index wall "${worker[@]}")
s_pct=$(pct "$w_sleep" "$w_all"); c_pct=$(pct "$w_comp" "$w_all")
echo "measured by the program: sleep ${measured}% (${sleep_ms} ms asleep, ${compute_ms} ms computing)"
echo "wall profile, worker thread: sleep_phase ${s_pct}%, compute_phase ${c_pct}%, total ${w_all} ns"
within "$s_pct" "$measured" 10 || fail "sleep_phase has ${s_pct}% of the wall time, the program measured ${measured}%"
within "$s_pct" 70 10 || fail "sleep_phase has ${s_pct}% of the wall time, not about 70%"
within "$c_pct" "$(awk -v m="$measured" 'BEGIN { print 100 - m }')" 10 ||
    fail "compute_phase has ${c_pct}% of the wall time, the program measured $(awk -v m="$measured" 'BEGIN { print 100 - m }')%"
# The samples' weights estimate the thread's real time (a sampler that
# skips ticks when it runs late must weigh the next sample by the time that
# really passed).
real_ns=$(awk -v a="$sleep_ms" -v b="$compute_ms" 'BEGIN { printf "%.0f", (a + b) * 1e6 }')
ratio_ok "$w_all" "$real_ns" 0.8 1.2 || fail "worker's wall total ${w_all} ns is not within 20% of its real ${real_ns} ns"

# The main thread waits in pthread_join the whole time: a blocked thread is
# sampled too, with about the same wall time.
w_main=$(total sl.wall.pb.gz --sample-index wall --tagfocus 'thread_name=^sleeper$')
w_join=$(through sl.wall.pb.gz main --sample-index wall --tagfocus 'thread_name=^sleeper$')
echo "wall profile, main thread: ${w_main} ns (${w_join} ns under main)"
ratio_ok "$w_main" "$real_ns" 0.7 1.3 || fail "main thread's wall total ${w_main} ns is not near ${real_ns} ns"
"$HOTSPUR" top --sample-index wall --tagfocus 'thread_name=^sleeper$' sl.wall.pb.gz | grep >/dev/null 'pthread_join\|__futex\|futex' ||
    fail "the main thread's wall samples are not in pthread_join: $("$HOTSPUR" top --tagfocus 'thread_name=^sleeper$' sl.wall.pb.gz)"

# CPU: compute_phase only.
c_all=$(total sl.cpu.pb.gz "${worker[@]}")
c_comp=$(through sl.cpu.pb.gz compute_phase "${worker[@]}")
c_sleep=$(through sl.cpu.pb.gz sleep_phase "${worker[@]}")
echo "cpu profile, worker thread: compute_phase $(pct "$c_comp" "$c_all")%, sleep_phase $(pct "$c_sleep" "$c_all")%"
[ "$c_all" -gt 0 ] || fail "the CPU profile has no samples of the worker"
awk -v a="$c_comp" -v b="$c_all" 'BEGIN { exit !(a >= 0.95 * b) }' || fail "compute_phase has less than 95% of the worker's CPU"
# The kernel's CPU time of nanosleep itself is charged to the thread, and its
# timer signal arrives as the thread returns to user code, in sleep_phase:
# a few samples, not more.
awk -v a="$c_sleep" -v b="$c_all" 'BEGIN { exit !(a <= 0.05 * b) }' || fail "sleep_phase has more than 5% of the worker's CPU"

# Any pprof reader reads the wall profile.
go tool pprof -sample_index=wall -top sl.wall.pb.gz 2>/dev/null | grep >/dev/null ' sleep_phase$\| nanosleep' ||
    fail "go tool pprof does not read the wall profile"
pass "wall profile: sleep_phase ${s_pct}% (program: ${measured}%), CPU profile: compute_phase only"
