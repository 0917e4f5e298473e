#!/bin/bash
# cli_every_command.sh — every command of `hotspur --help` parses its argv
# with the one option parser (src/cli/cli_options.c), so for each:
#  - an unknown option is one line "hotspur CMD: unknown option '--no-such-option'
#    (see hotspur CMD --help)" on stderr and exit status 2, nothing on stdout;
#  - --help exits 0 with its usage line and names every option its table
#    takes (the parser lists one the text leaves out under "Options not
#    described above": no command may need that);
#  - the commands that are not reports (cli_help_options covers those) accept
#    every option their --help lists: each is fed back last, in a line that
#    stops after parsing (a missing or extra positional argument), and is
#    never refused as unknown.
. "$(dirname "$0")/lib.sh"

cmds=$("$HOTSPUR" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ "$(echo "$cmds" | wc -l)" -ge 20 ] || fail "hotspur --help lists only: $cmds"
# the words before the option: a subcommand, or live mode's -p
words_of() {
    case $1 in
        bench) echo "bench compare" ;;
        debuginfo) echo "debuginfo upload" ;;
        *) echo "$1" ;;
    esac
}
n=0
for c in $cmds record-live; do
    # the name in messages: the command (debuginfo's subcommands share its options), bench compare
    case $c in
        record-live) w="record -p 1"; name=record ;;
        bench) w=$(words_of "$c"); name="bench compare" ;;
        *) w=$(words_of "$c"); name=$c ;;
    esac
    rc=0
    # shellcheck disable=SC2086
    "$HOTSPUR" $w --no-such-option > out.txt 2> err.txt < /dev/null || rc=$?
    [ "$rc" = 2 ] || fail "$w --no-such-option: exit $rc: $(cat err.txt)"
    [ ! -s out.txt ] || fail "$w --no-such-option wrote to stdout: $(cat out.txt)"
    [ "$(wc -l < err.txt)" = 1 ] || fail "$w --no-such-option: not one line: $(cat err.txt)"
    [ "$(cat err.txt)" = "hotspur $name: unknown option '--no-such-option' (see hotspur $name --help)" ] ||
        fail "$w --no-such-option: $(cat err.txt)"
    # shellcheck disable=SC2086
    "$HOTSPUR" $w --help > help.txt 2> err.txt || fail "$w --help exits $?: $(cat err.txt)"
    head -1 help.txt | grep -q "^usage: hotspur ${w%% *}" || fail "$w --help: $(head -1 help.txt)"
    if grep -q "Options not described above" help.txt; then
        fail "$w --help leaves out: $(sed -n '/Options not described above/,$p' help.txt | tail -n +2)"
    fi
    n=$((n + 1))
done

# Non-report commands: each listed option is accepted. The words around it
# make each run stop once parsed: no command (or -p/-a beside --heap) for
# record, a positional argument serve and agent do not take, no PID for
# attach, three for ctl.
export HOTSPUR_SERVER=http://127.0.0.1:1 # debuginfo --vdso: a refused connection
checked=0
for c in record agent attach ctl serve symbolize debuginfo bench; do
    case $c in
        # --heap (running CMD) with any -p/-a option is refused after parsing,
        # and without a CMD nothing runs: record -a alone would record
        record) pre="record --heap"; post="" ;;
        agent) pre="agent"; post="unexpected-argument" ;;
        attach) pre="attach"; post="" ;;
        ctl) pre="ctl 1 2 3"; post="" ;;
        serve) pre="serve"; post="unexpected-argument" ;;
        symbolize) pre="symbolize"; post="" ;;
        debuginfo) pre="debuginfo upload"; post="" ;;
        bench) pre="bench compare"; post="" ;;
    esac
    # shellcheck disable=SC2086
    "$HOTSPUR" $pre --help > help.txt
    opts=$(grep -E '^ {1,6}-' help.txt | tr ' ' '\n' | sed 's/,$//' |
           grep -E '^--?[a-zA-Z][a-z0-9-]*$' | grep -vxE -- '-h|--help' | sort -u)
    [ -n "$opts" ] || fail "$pre --help lists no option"
    for o in $opts; do
        rc=0
        # shellcheck disable=SC2086
        timeout 20 "$HOTSPUR" $pre $post $o > out.txt 2> err.txt < /dev/null || rc=$?
        [ "$rc" -ne 124 ] || fail "$pre $post $o: timed out"
        if grep -qE "unknown option|does not apply" err.txt; then
            fail "$pre --help lists $o, which it refuses: $(head -1 err.txt)"
        fi
        checked=$((checked + 1))
    done
done
pass "$n commands: an unknown option is one line and exit 2, --help names every option; $checked listed options of 8 non-report commands accepted"
