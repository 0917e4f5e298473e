# agent_dlopen_reuse.sh — two plugins loaded alternately at the same address
# (dlopen, work, dlclose, five rounds each, the same work in each) get their
# own samples (issue 13): each about half, not one of them all. When a
# module is unloaded, the agent moves its samples' addresses to a range of
# their own, kept with that module.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/services.inc"

HOTSPUR_OUTPUT="$TMP/p.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/plugins" "$PROGS/dlib.so" dlib_burn "$PROGS/dlib2.so" dlib2_burn 5 >out.txt || fail "plugins failed"
grep -q same_address=1 out.txt || fail "the loader did not reuse the address: the test proves nothing ($(cat out.txt))"
all=$(total p.pb.gz)
a=$(through p.pb.gz dlib_burn)
b=$(through p.pb.gz dlib2_burn)
echo "dlib_burn $(pct "$a" "$all")%, dlib2_burn $(pct "$b" "$all")% of $all"
ratio_ok "$a" "$b" 0.6 1.66 || fail "dlib_burn $a vs dlib2_burn $b: not about half each"
ratio_ok "$((a + b))" "$all" 0.9 1 || fail "the plugins' samples are not all named ($((a + b)) of $all)"

# The same through record (symbolized outside the program, from the mappings).
"$HOTSPUR" record -o rec.pb.gz -- "$PROGS/plugins" "$PROGS/dlib.so" dlib_burn "$PROGS/dlib2.so" dlib2_burn 5 >/dev/null 2>&1 ||
    fail "record plugins failed"
a=$(through rec.pb.gz dlib_burn)
b=$(through rec.pb.gz dlib2_burn)
ratio_ok "$a" "$b" 0.6 1.66 || fail "under record: dlib_burn $a vs dlib2_burn $b"
pass "plugins at the same address keep their own samples (agent and record)"

# dlopen()ed by a relative path ("./dlib.so", as plugin hosts often do): the
# loader keeps that name, which meant nothing to the symbolizer, so every
# frame of the unloaded plugins was an address (issue 30: perf named
# alpha_hot 48.8% and beta_hot 47.9%; hotspur neither).
(cd "$PROGS" && "$HOTSPUR" record -o "$TMP/rel.pb.gz" -- ./plugins ./dlib.so dlib_burn ./dlib2.so dlib2_burn 5 \
    >"$TMP/rel.out" 2>"$TMP/rel.err") || fail "record plugins (relative paths) failed: $(cat rel.err)"
grep -q same_address=1 rel.out || fail "the loader did not reuse the address ($(cat rel.out))"
all=$(total rel.pb.gz)
a=$(through rel.pb.gz dlib_burn)
b=$(through rel.pb.gz dlib2_burn)
echo "relative paths: dlib_burn $(pct "$a" "$all")%, dlib2_burn $(pct "$b" "$all")% of $all"
ratio_ok "$a" "$b" 0.6 1.66 || fail "relative paths: dlib_burn $a vs dlib2_burn $b"
ratio_ok "$((a + b))" "$all" 0.9 1 || fail "relative paths: the plugins' samples are not all named ($((a + b)) of $all)"
"$HOTSPUR" raw rel.pb.gz | sed -n '/^Mappings/,$p' | grep -q ' \./dlib' && fail "a mapping keeps the relative path"
pass "plugins dlopen()ed by relative paths are named too"
