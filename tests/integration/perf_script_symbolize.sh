#!/bin/bash
# perf_script_symbolize.sh — perf script frames without a symbol
# ("ADDR [unknown] (/path/to/binary)", or "ADDR (/path/to/binary)" of
# perf script -F ip,dso) are symbolized from the local binary
# by hotspur's symbolizer, with file:line and inline frames, so that `list`
# works on them. The perf script text is generated from the real binary's
# code addresses (tests/programs/perf_symbols.c, PIE and non-PIE: a leaf
# address inside ps_mix inlined into ps_leaf, the return addresses in
# ps_caller and main), in the forms perf prints: file offsets (perf 6's call
# chains), run-time addresses with the PERF_RECORD_MMAP2 records of
# --show-mmap-events, run-time addresses without them (not resolvable for a
# PIE: the frame stays [unknown]), and an MMAP2 build-id that is not the
# file's (not used). Where `perf record` works, a real recording read with
# `perf script --symfs /nonexistent` (so perf finds no symbols) too.
. "$(dirname "$0")/lib.sh"

src="$SRC/tests/programs/perf_symbols.c"
mark() { grep -n "MARK:$1" "$src" | cut -d: -f1; }
mix_line=$(mark mix); loop_line=$(( $(mark loop) + 1 )); caller_line=$(mark caller)

hex() { printf '%x' "$1"; }
# code addresses of prog: LEAF (innermost frame ps_mix), R1 (return into
# ps_caller), R2 (return into main); text segment's vaddr, offset, size
addresses() {
    local prog=$1
    objdump -d --no-show-raw-insn "$prog" > dis.txt
    LEAF=""
    for a in $(awk '/<ps_leaf>:$/ { on = 1; next } on && /^$/ { exit } on { sub(":", "", $1); print $1 }' dis.txt); do
        if [ "$(addr2line -i -f -e "$prog" "0x$a" | head -1)" = ps_mix ]; then LEAF=$((16#$a)); break; fi
    done
    [ -n "$LEAF" ] || fail "$prog: no address of ps_mix inlined in ps_leaf"
    ret_after() { awk -v f="$1" -v c="<$2>" '$0 ~ "<" f ">:$" { on = 1; next } on && /^$/ { exit }
        on && hit { sub(":", "", $1); print $1; exit } on && index($0, "call") && index($0, c) { hit = 1 }' dis.txt; }
    R1=$((16#$(ret_after ps_caller ps_leaf))); R2=$((16#$(ret_after main ps_caller)))
    read -r SEG_OFF SEG_VADDR SEG_SIZE < <(readelf -lW "$prog" | awk '$1 == "LOAD" && $0 ~ /R.E/ { print $2, $3, $5; exit }')
    SEG_OFF=$((SEG_OFF)); SEG_VADDR=$((SEG_VADDR)); SEG_SIZE=$((SEG_SIZE))
    BUILD_ID=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')
}
off() { echo $(( $1 - SEG_VADDR + SEG_OFF )); }
# gen PROG MODE > text: three samples of LEAF <- R1 <- R2
gen() {
    local prog=$1 mode=$2 base=0 i a
    case $mode in runtime*) [ "$PIE" = 1 ] && base=$((0x55d8ff958000)) ;; esac
    case $mode in
        runtime-mmap) echo "perf_symbols 100  1.000000: PERF_RECORD_MMAP2 100/100: [0x$(hex $((base + SEG_VADDR)))(0x$(hex $SEG_SIZE)) @ 0x$(hex $SEG_OFF) fe:00 1234 0]: r-xp $prog" ;;
        runtime-badid) echo "perf_symbols 100  1.000000: PERF_RECORD_MMAP2 100/100: [0x$(hex $((base + SEG_VADDR)))(0x$(hex $SEG_SIZE)) @ 0x$(hex $SEG_OFF) <0123456789abcdef0123456789abcdef01234567>]: r-xp $prog" ;;
        runtime-goodid) echo "perf_symbols 100  1.000000: PERF_RECORD_MMAP2 100/100: [0x$(hex $((base + SEG_VADDR)))(0x$(hex $SEG_SIZE)) @ 0x$(hex $SEG_OFF) <$BUILD_ID>]: r-xp $prog" ;;
    esac
    for i in 1 2 3; do
        echo "perf_symbols 100 [000] 1.00000$i:     250000 cpu-clock:ppp: "
        for a in $LEAF $R1 $R2; do
            case $mode in
                offsets) printf '\t%16x [unknown] (%s)\n' "$(off "$a")" "$prog" ;;
                dsoonly) printf '\t%16x (%s)\n' "$(off "$a")" "$prog" ;; # perf script -F ip,dso
                *) printf '\t%16x [unknown] (%s)\n' $((base + a)) "$prog" ;;
            esac
        done
        echo
    done
}
resolved() { # FILE TAG: list and top show the source of ps_leaf, ps_mix, ps_caller
    local f=$1 tag=$2
    "$HOTSPUR" list --sample-index samples ps_leaf "$f" > list.txt 2> err.txt || fail "$tag: list: $(cat err.txt)"
    grep -q "ROUTINE =* ps_leaf in .*perf_symbols.c" list.txt || { cat list.txt; fail "$tag: list has no ps_leaf routine"; }
    # flat is the inlined ps_mix's; ps_leaf's line of the inlined call has the cum
    grep -Eq "^ +\. +3 +$loop_line:" list.txt || { cat list.txt; fail "$tag: ps_leaf line $loop_line (the inlined call) lacks its 3 samples"; }
    "$HOTSPUR" list --sample-index samples ps_mix "$f" > mix.txt 2>&1 || fail "$tag: list ps_mix: $(cat mix.txt)"
    grep -Eq "^ +3 +3 +$mix_line:" mix.txt || { cat mix.txt; fail "$tag: inline frame ps_mix line $mix_line missing"; }
    "$HOTSPUR" top --lines --sample-index samples "$f" > lines.txt
    grep -Eq " ps_caller .*perf_symbols.c:$caller_line$" lines.txt || { cat lines.txt; fail "$tag: ps_caller not at line $caller_line"; }
    grep -Eq " main .*perf_symbols.c:[0-9]+$" lines.txt || { cat lines.txt; fail "$tag: main has no line"; }
    "$HOTSPUR" top "$f" | grep -q "3 addresses symbolized by hotspur from the local binaries" || fail "$tag: no note"
    echo "ok: $tag"
}
unresolved() { # FILE TAG: the frames stay [binary]
    local f=$1 tag=$2
    "$HOTSPUR" convert "$f" --to collapsed --sample-index samples > u.folded 2> err.txt || fail "$tag: $(cat err.txt)"
    [ "$(cat u.folded)" = "[$(basename "$prog")];[$(basename "$prog")];[$(basename "$prog")] 3" ] ||
        fail "$tag: expected the [unknown] frames kept, got $(cat u.folded)"
    echo "ok: $tag (kept [unknown])"
}

for prog in "$PROGS/perf_symbols" "$PROGS/perf_symbols_nopie"; do
    PIE=1; [[ $prog == *nopie ]] && PIE=0
    addresses "$prog"
    name=$(basename "$prog")
    gen "$prog" offsets > "$name.offsets.txt";        resolved "$name.offsets.txt" "$name: file offsets (perf's call chains)"
    gen "$prog" dsoonly > "$name.dsoonly.txt";        resolved "$name.dsoonly.txt" "$name: dso and offset only (-F ip,dso)"
    gen "$prog" runtime-mmap > "$name.mmap.txt";      resolved "$name.mmap.txt" "$name: run-time addresses + MMAP2"
    gen "$prog" runtime-goodid > "$name.goodid.txt";  resolved "$name.goodid.txt" "$name: MMAP2 with the file's build-id"
    gen "$prog" runtime-badid > "$name.badid.txt";    unresolved "$name.badid.txt" "$name: MMAP2 with another build-id"
    "$HOTSPUR" top "$name.badid.txt" | grep -q "build-id differs" || fail "$name: build-id mismatch not noted"
    gen "$prog" runtime > "$name.runtime.txt"
    if [ "$PIE" = 1 ]; then
        unresolved "$name.runtime.txt" "$name: run-time addresses without MMAP2"
    else # a non-PIE executable's run-time addresses are its own
        resolved "$name.runtime.txt" "$name: run-time addresses of a non-PIE executable"
    fi
    # a binary that is not there: kept
    sed "s|$prog|/nonexistent/$name|" "$name.offsets.txt" > "$name.gone.txt"
    "$HOTSPUR" convert "$name.gone.txt" --to collapsed --sample-index samples | grep -q "^\[$name\];\[$name\];\[$name\] 3$" ||
        fail "$name: missing binary: frames not kept"
done
pass "perf script [unknown] frames symbolized from local binaries (PIE and non-PIE)"

if ! perf record -q -g -o perf.data "$PROGS/perf_symbols" 3000000 > /dev/null 2> perf.err; then
    echo "NOTE: perf record does not work here ($(head -1 perf.err)): real perf data not checked"
    exit 0
fi
perf script -i perf.data --symfs /nonexistent > real.txt 2>/dev/null
grep -q '\[unknown\] (.*perf_symbols)' real.txt || fail "real perf: --symfs did not leave frames unknown"
"$HOTSPUR" list ps_leaf real.txt > list.txt 2>&1 || fail "real: list: $(cat list.txt)"
grep -q "ROUTINE =* ps_leaf in .*perf_symbols.c" list.txt || { head -20 list.txt; fail "real: no ps_leaf routine"; }
grep -Eq "^ +[^ ]+ +[0-9.]+m?s +$loop_line:" list.txt || { cat list.txt; fail "real: no samples on line $loop_line"; }
pass "real perf $(perf --version | awk '{print $3}') without symbols: list ps_leaf shows its source"

# perf record --buildid-mmap: MMAP2 records carry build-ids; the same file
# matches, a file replaced after recording does not and is not used
cp "$PROGS/perf_symbols" ./ps_copy
if perf record --buildid-mmap -q -g -o bid.data ./ps_copy 3000000 > /dev/null 2> perf.err; then
    perf script -i bid.data --show-mmap-events --symfs /nonexistent > bid.txt 2>/dev/null
    grep -q 'PERF_RECORD_MMAP2 .*<[0-9a-f]*>\]: r-xp .*ps_copy' bid.txt || fail "no build-id in perf's MMAP2 records"
    "$HOTSPUR" list ps_leaf bid.txt > list.txt 2>&1 || fail "build-id: list: $(cat list.txt)"
    grep -q "ROUTINE =* ps_leaf in .*perf_symbols.c" list.txt || fail "build-id matches, yet no ps_leaf routine"
    cp "$PROGS/perf_symbols_nopie" ./ps_copy # another build-id
    "$HOTSPUR" top bid.txt > top.txt
    grep -q "build-id differs" top.txt || fail "replaced binary: no build-id note"
    ! grep -q " ps_leaf$" top.txt || fail "replaced binary's symbols were used"
    pass "real perf --buildid-mmap: matching build-id used, a replaced binary not"
else
    echo "NOTE: perf record --buildid-mmap failed here ($(head -1 perf.err))"
fi
