# input_truncated.sh — an input file truncated by another process while
# hotspur reads it is a clean error, not a SIGBUS: hotspur ends as it does
# for a file of the bytes it got (same status, same message, same output).
# The truncation is played by tests/programs/truncate_shim.so, preloaded
# into hotspur: the input is cut to 4096 bytes at the first read of it (at
# the first mapping of it, for a build that maps its input: the reads past
# the cut then raise SIGBUS). A gzipped profile through `top` and
# `convert`, and a collapsed-stacks text.
source "$(dirname "$0")/lib.sh"
SHIM=$PROGS/truncate_shim.so
[ -e "$SHIM" ] || fail "$SHIM is missing"

# inputs of several pages: 3000 distinct stacks over names that do not
# compress to nothing
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "main;mod%d_fn%x;leaf_%d_%x %d\n", i % 17, i * 2654435761 % 4294967296, i, i * 40503, i % 50 + 1 }' >stacks.folded
"$HOTSPUR" convert --from collapsed stacks.folded --to pprof -o full.pb.gz
size=$(stat -c %s full.pb.gz)
[ "$size" -gt 12288 ] || fail "the test profile is only $size bytes: the cut would not leave unread pages"
[ "$(stat -c %s stacks.folded)" -gt 12288 ] || fail "the test stacks are too small"
"$HOTSPUR" top full.pb.gz >/dev/null || fail "top of the whole profile failed"
mkdir -p cut want

# cut_check WHAT SOURCE NAME ARGS...: run `hotspur ARGS...` in cut/ on a copy
# NAME of SOURCE that the shim cuts to 4096 bytes, and in want/ on a file
# NAME of SOURCE's first 4096 bytes: status, stderr and stdout must match,
# and the status must not be a signal's.
cut_check() {
    local what=$1 src=$2 name=$3 rc=0 rc_want=0
    shift 3
    cp "$src" "cut/$name"
    head -c 4096 "$src" >"want/$name"
    (cd want && "$HOTSPUR" "$@" >out.txt 2>err.txt) || rc_want=$?
    (cd cut && env LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$SHIM" HS_TRUNC_PATH="$name" HS_TRUNC_TO=4096 \
        "$HOTSPUR" "$@" >out.txt 2>err.txt) || rc=$?
    [ "$(stat -c %s "cut/$name")" = 4096 ] || fail "$what: the shim did not truncate the input"
    [ "$rc" -lt 128 ] || fail "$what: killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || true)): $(cat cut/err.txt)"
    [ "$rc" = "$rc_want" ] || fail "$what: exit $rc; for the first 4096 bytes: $rc_want"
    cmp -s cut/err.txt want/err.txt || fail "$what: message '$(cat cut/err.txt)'; for the first 4096 bytes: '$(cat want/err.txt)'"
    cmp -s cut/out.txt want/out.txt || fail "$what: output differs from the first 4096 bytes'"
    echo "$what: exit $rc: $(head -n 1 cut/err.txt)"
}

cut_check "top of a gzipped profile" full.pb.gz p.pb.gz top p.pb.gz
[ -s cut/err.txt ] || fail "top of a cut profile: no message"
grep -q "truncated" cut/err.txt || fail "top: the message does not say truncated: $(cat cut/err.txt)"
cut_check "convert of a gzipped profile" full.pb.gz p.pb.gz convert p.pb.gz --to collapsed -o o.txt
[ ! -e cut/o.txt ] || fail "convert of a cut profile left an output file"
cut_check "convert of collapsed stacks" stacks.folded s.folded convert --from collapsed s.folded --to collapsed
pass "inputs truncated while read: the same clean ends as for the bytes read, no SIGBUS"
