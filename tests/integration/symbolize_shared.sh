# symbolize_shared.sh — one symbolizer serves many profiles (issue 13:
# `record -- make` symbolized its 649 profiles one after another, opening
# and indexing libc and the compiler again for each): `hotspur symbolize A
# B C` and `hotspur record` open each module once (record: once per worker
# process), and the names, files and lines are the same as when each
# profile is symbolized alone — also when the program was loaded at a
# different address in each run (ASLR).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"
command -v strace >/dev/null || fail "strace is missing (scripts/install-deps)"

PROG=$PROGS/ender # a PIE with DWARF; `ender _exit` spins in ender_work, then _exit(3)
for i in 1 2 3; do
    HOTSPUR_OUTPUT="$TMP/raw$i.pb.gz" HOTSPUR_DEFER_SYMBOLS=1 LD_PRELOAD="$AGENT_PRELOAD" "$PROG" _exit ||
        [ $? = 3 ] || fail "ender run $i failed"
    [ "$(through raw$i.pb.gz ender_work)" = 0 ] || fail "raw$i is symbolized already: the test proves nothing"
    "$HOTSPUR" symbolize -o alone$i.pb.gz raw$i.pb.gz || fail "symbolize -o alone$i failed"
    cp raw$i.pb.gz shared$i.pb.gz
done
strace -f -qq -e trace=open,openat -o "$TMP/sym.strace" "$HOTSPUR" symbolize shared1.pb.gz shared2.pb.gz shared3.pb.gz ||
    fail "symbolize of three files failed"
opens=$(grep -c "\"$PROG\"" "$TMP/sym.strace" || true)
echo "hotspur symbolize of 3 profiles opened $PROG $opens times"
# once to check its ELF header and build-id, once for its DWARF (a fresh
# symbolizer per profile: 3 opens per profile)
[ "$opens" -ge 1 ] && [ "$opens" -le 2 ] || fail "the program was opened $opens times for 3 profiles (want 2)"
for i in 1 2 3; do
    "$HOTSPUR" traces shared$i.pb.gz >shared$i.txt
    "$HOTSPUR" traces alone$i.pb.gz >alone$i.txt
    cmp -s shared$i.txt alone$i.txt || { diff alone$i.txt shared$i.txt | head -20; fail "profile $i: shared symbolizer differs from a fresh one"; }
    [ "$(through shared$i.pb.gz ender_work)" -gt 0 ] || fail "profile $i: ender_work not named"
done

# record: its children's files, symbolized by its workers (at most one per
# CPU), each opening the program once.
workers=$(nproc)
[ "$workers" -le 8 ] || workers=8
strace -f -qq -e trace=open,openat -o "$TMP/rec.strace" \
    "$HOTSPUR" record -o rec.pb.gz -- sh -c "for i in 1 2 3 4 5 6; do $PROG _exit; done" 2>rec.err ||
    [ $? = 3 ] || fail "record failed: $(cat rec.err)"
written=$(grep -c '^hotspur: wrote' rec.err || true)
[ "$written" = 7 ] || fail "record listed $written files, want 7 (sh and 6 children): $(cat rec.err)"
opens=$(grep -c "openat(.*\"$PROG\"" "$TMP/rec.strace" || true)
echo "record symbolized 6 profiles of $PROG opening it $opens times ($workers workers at most, 2 opens each)"
[ "$opens" -le $((2 * workers)) ] || fail "record opened the program $opens times for 6 profiles (want <= 2 per worker)"
for f in rec.*.pb.gz; do
    if [ "$("$HOTSPUR" top "$f" | grep -c ' 0x[0-9a-f]* \[ender\]')" != 0 ]; then
        fail "$f has unsymbolized ender frames"
    fi
done
pass "one symbolizer per process for many profiles, same frames as alone"
