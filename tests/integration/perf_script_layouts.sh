#!/bin/bash
# perf_script_layouts.sh — `perf script` text in the field layouts that
# FlameGraph's stackcollapse-perf.pl reads, and the ones -F makes beyond
# them: each hand-written fixture (two samples of main;work_a;spin and one of
# main;work_b;spin) must import to exactly those stacks, with the pid, tid,
# comm, event and period the header carries; what cannot be read is refused
# with its line number. Then, where `perf record` works here, the same
# layouts printed by real perf from one recording must all give the same
# stacks as perf script's default output.
. "$(dirname "$0")/lib.sh"

want='main;work_a;spin 2
main;work_b;spin 1'

# frames of the three samples, with or without "+0xoff (dso)"
frames() { # $1: dso suffix style: full | nodso | nooff
    local a=$'\t' s1 s2 s3 s4
    case $1 in
        full) s1=" spin+0x2e (/tmp/busy)"; s2=" work_a+0x21 (/tmp/busy)"; s3=" main+0x52 (/tmp/busy)"; s4=" work_b+0x21 (/tmp/busy)" ;;
        nodso) s1=" spin"; s2=" work_a"; s3=" main"; s4=" work_b" ;;
        nooff) s1=" spin (/tmp/busy)"; s2=" work_a (/tmp/busy)"; s3=" main (/tmp/busy)"; s4=" work_b (/tmp/busy)" ;;
    esac
    case $2 in
        a) printf '%s            1177%s\n%s            11b1%s\n%s            1221%s\n' "$a" "$s1" "$a" "$s2" "$a" "$s3" ;;
        b) printf '%s            1177%s\n%s            11e1%s\n%s            1231%s\n' "$a" "$s1" "$a" "$s4" "$a" "$s3" ;;
    esac
}
# fixture NAME STYLE HEADER_A1 HEADER_A2 HEADER_B: three samples, blank-line separated
fixture() {
    local name=$1 style=$2
    { echo "$3"; frames "$style" a; echo; echo "$4"; frames "$style" a; echo; echo "$5"; frames "$style" b; echo; } > "$name.txt"
}
check() { # NAME [label checks...]
    local name=$1; shift
    "$HOTSPUR" convert "$name.txt" --to collapsed --sample-index samples > "$name.folded" 2> "$name.err" ||
        fail "$name: refused: $(cat "$name.err")"
    [ "$(LC_ALL=C sort "$name.folded")" = "$want" ] || fail "$name: stacks $(cat "$name.folded")"
    "$HOTSPUR" traces "$name.txt" > "$name.traces"
    for c in "$@"; do grep -Eq "$c" "$name.traces" || { cat "$name.traces"; fail "$name: no '$c' in traces"; }; done
    echo "ok: $name"
}

# 1. perf script's default: comm pid [cpu] time: period event:modifiers:
fixture default full "busy 2012 [000] 9864.974652:     250000 cpu-clock:ppp: " \
    "busy 2012 [000] 9864.974902:     250000 cpu-clock:ppp: " "busy 2012 [001] 9864.975149:     250000 cpu-clock:ppp: "
check default 'pid:  2012' 'comm:  busy' '^Type: cpu-clock'
"$HOTSPUR" top default.txt | grep -q '^Duration: 497us' || fail "default: time span not read"
# 2. comm with spaces, pid/tid, cycles with a count period (stackcollapse-perf's examples)
fixture threads full "V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:" \
    "V8 WorkerThread 24636/25607 [000] 94564.109300: 100 cycles:" "V8 WorkerThread 24636/25608 [002] 94564.109400: 300 cycles:"
check threads 'comm:  V8 WorkerThread' 'tid:  25608' 'pid:  24636' '^Type: cycles'
"$HOTSPUR" top threads.txt | grep -q '100% of 500 total' || { "$HOTSPUR" top threads.txt; fail "threads: cycles periods not summed"; }
# 3. -F comm,pid,tid,time,ip,sym: no event name, no dso (right-aligned comm)
fixture noevent nodso "            busy  2012/2012   9864.974652: " "            busy  2012/2012   9864.974902: " \
    "            busy  2012/2013   9864.975149: "
check noevent 'tid:  2013' 'comm:  busy'
# 4. -F comm,ip,sym,dso: the comm alone
fixture commonly nooff "busy " "busy " "busy "
check commonly 'comm:  busy'
# 5. -F tid,period,event,ip,sym,dso: no comm, no time, indented
fixture tidperiod nooff " 2012     250000 cpu-clock:ppp: " " 2012     250000 cpu-clock:ppp: " " 2013     750000 cpu-clock:ppp: "
check tidperiod 'tid:  2013' '^Type: cpu-clock'
"$HOTSPUR" top tidperiod.txt | grep -q '100% of 1250us total' || { "$HOTSPUR" top tidperiod.txt; fail "tidperiod: periods"; }
# 6. -F comm,tid,period,ip,sym,dso: a period without time or event
fixture commperiod nooff "busy  2012     250000 " "busy  2012     250000 " "busy  2012     500000 "
check commperiod 'pid:  2012' '^Type: period'
# 7. -F +srcline: file:line under each frame, "dso[addr]" where perf has none
{ echo "busy 2012 9864.974652: 250000 cpu-clock:"; printf '\t 1177 spin+0x2e (/tmp/busy)\n  busy.c:12\n\t 11b1 work_a+0x21 (/tmp/busy)\n  busy_n[11b1]\n\t 1221 main+0x52 (/tmp/busy)\n  ??:0\n\n'
  echo "busy 2012 9864.974700: 250000 cpu-clock:"; printf '\t 1177 spin+0x2e (/tmp/busy)\n  busy.c:12\n\t 11b1 work_a+0x21 (/tmp/busy)\n\t 1221 main+0x52 (/tmp/busy)\n\n'
  echo "busy 2012 9864.974800: 250000 cpu-clock:"; frames full b; echo; } > srcline.txt
check srcline
"$HOTSPUR" top --lines srcline.txt | grep -q ' spin busy.c:12$' || fail "srcline: busy.c:12 not on spin"
# 8. --show-mmap-events: side-band records between the samples
{ echo "busy  2012  9864.974434: PERF_RECORD_MMAP2 2012/2012: [0x55d8ff959000(0x1000) @ 0x1000 fe:00 11809067 2742487274]: r-xp /tmp/busy"
  echo "busy  2012  9864.974500: PERF_RECORD_COMM: busy:2012/2012"
  echo "busy 2012 9864.974652: 250000 cpu-clock:"; frames full a; echo
  echo "swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1277288) @ 0xffffffff81000000]: x [kernel.kallsyms]_text"
  echo "busy 2012 9864.974700: 250000 cpu-clock:"; frames full a; echo
  echo "busy 2012 9864.974800: 250000 cpu-clock:"; frames full b; echo
  echo "busy  2012  9864.975000: PERF_RECORD_EXIT(2012:2012):(2012:2012)"; } > mmap.txt
check mmap
# 9. one line per sample (perf record without -g, or perf script -G)
printf '%s\n' "            busy  2012  9864.974652:     250000 cpu-clock:ppp:      55d8ff959177 spin+0x2e (/tmp/busy)" \
    "            busy  2012  9864.974902:     250000 cpu-clock:ppp:      55d8ff959177 spin+0x2e (/tmp/busy)" \
    "            busy  2012  9864.975149:     250000 cpu-clock:ppp:      55d8ff9591e1 work_b+0x21 (/tmp/busy)" > oneline.txt
"$HOTSPUR" convert oneline.txt --to collapsed --sample-index samples | LC_ALL=C sort > oneline.folded
[ "$(cat oneline.folded)" = $'spin 2\nwork_b 1' ] || fail "oneline: $(cat oneline.folded)"
echo "ok: oneline"

# 10. a field after the event (-F +addr: the data address) over a call chain is not a frame
fixture addrfield full "busy 2012 9864.974652: 1 mem-loads:      7ffd1234 " \
    "busy 2012 9864.974700: 1 mem-loads:      7ffd1240 " "busy 2012 9864.974800: 1 mem-loads:      7ffd1250 "
check addrfield '^Type: mem-loads'

# refused, with the line
refused() { # NAME WORDS...
    local name=$1; shift
    "$HOTSPUR" convert "$name.txt" --to collapsed > /dev/null 2> "$name.err" && fail "$name: accepted"
    grep -q "$*" "$name.err" || fail "$name: message $(cat "$name.err"), want '$*'"
    echo "refused: $name: $(cat "$name.err")"
}
frames full a > noheader.txt            # -F ip,sym,dso: samples cannot be told apart
refused noheader "perf script line 1: a stack frame outside a sample"
{ echo "busy 2012 9864.974652: 250000 cpu-clock:"; frames full a; printf '\tnot a frame at all\n\n'; } > garbage.txt
refused garbage "perf script line 5: expected a sample header or"
{ echo "busy 2012 9864.974652: 250000 cpu-clock:"; echo "busy 2012 9864.974700: 250000 cpu-clock:"; frames full a; } > nostack.txt
refused nostack "perf script line 1: sample has no stack"
pass "perf script layouts: 10 read, 3 refused with their line"

# Real perf, where it may record: every layout of one recording gives the
# stacks of perf script's default output.
cc -O0 -g -fno-omit-frame-pointer -o busy "$SRC/tests/data/busy.c"
if ! perf record -q -g -o perf.data ./busy 3000000 > /dev/null 2> perf.err; then
    echo "NOTE: perf record does not work here ($(head -1 perf.err)): real layouts not checked"
    exit 0
fi
# this checks the parsing: frames as perf printed them, not symbolized from
# the local binaries (which adds inline frames where a dso has debug info,
# and only where perf printed the dso)
export HOTSPUR_PERF_SYMBOLIZE=0
perf script -i perf.data > real.txt 2>/dev/null
"$HOTSPUR" convert real.txt --to collapsed --sample-index samples | LC_ALL=C sort > real.folded
grep -q 'main;work_a;spin [0-9]' real.folded || fail "real perf: no main;work_a;spin in $(head -3 real.folded)"
n=0
for F in "-F comm,pid,tid,time,ip,sym" "-F comm,ip,sym,dso" "-F tid,period,event,ip,sym,dso" \
         "-F comm,tid,period,ip,sym,dso" "-F +srcline" "-F comm,pid,tid,time,period,event,ip,sym,dso,symoff" \
         "--show-mmap-events" "--show-task-events"; do
    perf script -i perf.data $F > layout.txt 2>/dev/null || fail "perf script $F failed"
    "$HOTSPUR" convert layout.txt --to collapsed --sample-index samples 2> err.txt | LC_ALL=C sort > layout.folded ||
        fail "real perf script $F refused: $(cat err.txt)"
    case $F in *dso*|*mmap*|*task*|*srcline*|*symoff*) cmp -s real.folded layout.folded ;;
        *) # without dso, [unknown] frames are named [unknown], not [dso]
           diff <(sed 's/\[[^];]*\]/[x]/g' real.folded) <(sed 's/\[[^];]*\]/[x]/g' layout.folded) > /dev/null ;;
    esac || { diff real.folded layout.folded | head; fail "real perf script $F: other stacks"; }
    n=$((n + 1))
done
perf script -i perf.data -G -F comm,tid,time,event,period,ip,sym,dso > oneline-real.txt 2>/dev/null
"$HOTSPUR" convert oneline-real.txt --to collapsed --sample-index samples | grep -q '^spin [0-9]' ||
    fail "real one-line samples: no spin"
pass "real perf $(perf --version | awk '{print $3}'): $((n + 1)) layouts read, the same stacks"
