#!/bin/bash
# cli_help_options.sh — every report command's --help lists only options it
# accepts: each option named in the option lines of `hotspur CMD --help`
# (lines that start with a few spaces and a dash) is fed back to CMD, and
# none may be refused as "unknown option" or "does not apply". The inputs
# do not exist, so each run stops right after parsing (web never serves).
# Also: -o to a FIFO writes into it.
. "$(dirname "$0")/lib.sh"

cmds="top peek list tree traces tags raw disasm diff merge flame graph convert web"
total=0
for c in $cmds; do
    "$HOTSPUR" "$c" --help > help.txt || fail "$c --help exits $?"
    # option words on option lines: "-o, --output FILE", "--focus RE --ignore RE"
    opts=$(grep -E '^ {1,6}-' help.txt | tr ' ' '\n' | sed 's/,$//' |
           grep -E '^--?[a-z][a-z0-9-]*$' | sort -u)
    n=$(echo "$opts" | grep -c . || true)
    case $c in
        top|tree|diff|graph) min=32 ;;   # shared filters + trimming + own
        raw) min=4 ;;                    # -o, --output, -h, --help
        web) min=7 ;;
        merge) min=11 ;;
        *) min=27 ;;                     # shared filters + own
    esac
    [ "$n" -ge "$min" ] || fail "$c --help: only $n options found (expected >= $min): $opts"
    case $c in
        peek|list|disasm) pos="main missing.pb.gz" ;;
        diff) pos="missing-a.pb.gz missing-b.pb.gz" ;;
        *) pos="missing.pb.gz" ;;
    esac
    for o in $opts; do
        # the option last: one taking an argument says it needs one
        rc=0
        timeout 20 "$HOTSPUR" "$c" $pos "$o" > out.txt 2> err.txt < /dev/null || rc=$?
        if grep -qE "unknown option|does not apply" err.txt; then
            fail "$c --help lists $o, which $c refuses: $(head -1 err.txt)"
        fi
        [ "$rc" -ne 124 ] || fail "$c $o: timed out"
        total=$((total + 1))
    done
done
# the check can fail: an option of another command is refused in these words
"$HOTSPUR" flame --nodecount 3 missing.pb.gz 2> err.txt && fail "flame took --nodecount"
grep -q "does not apply" err.txt || fail "flame --nodecount: $(cat err.txt)"
"$HOTSPUR" top --palette mem missing.pb.gz 2> err.txt && fail "top took --palette"
grep -q "unknown option '--palette'" err.txt || fail "top --palette: $(cat err.txt)"
# -o names a FIFO (or a device such as /dev/null): written in place, not
# replaced by a regular file through the temp-file-and-rename of regular files
printf 'main;a 3\nmain;b 1\n' > s.folded
mkfifo out.fifo
timeout 20 cat out.fifo > got.txt &
reader=$!
"$HOTSPUR" convert s.folded --to collapsed -o out.fifo || fail "convert -o FIFO failed"
wait "$reader" || fail "nothing read from the FIFO"
[ -p out.fifo ] || fail "convert -o FIFO replaced the FIFO with a regular file"
[ "$(LC_ALL=C sort got.txt)" = $'main;a 3\nmain;b 1' ] || fail "FIFO got: $(cat got.txt)"
# The same for a written profile (merge -o; record -o and symbolize -o
# write through the same hs_profile_write_file)
"$HOTSPUR" convert s.folded --to pprof -o s.pb.gz || fail "convert --to pprof failed"
timeout 20 cat out.fifo > got.pb.gz &
reader=$!
"$HOTSPUR" merge s.pb.gz s.pb.gz -o out.fifo || fail "merge -o FIFO failed"
wait "$reader" || fail "nothing read from the FIFO (merge)"
[ -p out.fifo ] || fail "merge -o FIFO replaced the FIFO with a regular file"
[ "$("$HOTSPUR" convert got.pb.gz --to collapsed | LC_ALL=C sort)" = $'main;a 6\nmain;b 2' ] ||
    fail "merge through the FIFO gave: $("$HOTSPUR" convert got.pb.gz --to collapsed)"
pass "$total options listed by the --help of $(echo $cmds | wc -w) commands are all accepted"
