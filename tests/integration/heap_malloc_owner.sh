# heap_malloc_owner.sh — the agent warns that the heap profile will be empty
# only when its malloc really is not the one the program calls (issue 13:
# python3 got "malloc belongs to /usr/bin/python3 ... the heap profile will
# be empty" while its heap profile was right: a non-PIE executable that
# takes malloc's address makes its PLT stub malloc's canonical address,
# which dlsym(RTLD_DEFAULT) returns; the first object that defines malloc
# is still the agent). With jemalloc preloaded before the agent, the
# warning is true and must stay.
source "$(dirname "$0")/lib.sh"
needs_malloc_interposition
PY=/usr/bin/python3
[ -x "$PY" ] || fail "$PY is missing (scripts/install-deps: python3)"

# 20000 x bytearray(1000): 20 MB allocated through malloc (buffers over
# pymalloc's 512 bytes), freed by the interpreter as it finalizes.
HOTSPUR_OUTPUT="$TMP/py.pb.gz" HOTSPUR_HEAP=1 HOTSPUR_CPU=0 LD_PRELOAD="$AGENT_PRELOAD" \
    "$PY" -c 'x = [bytearray(1000) for i in range(20000)]' 2>py.err || fail "python3 failed: $(cat py.err)"
cat py.err
grep -q "belongs to" py.err && fail "false warning for python3: $(cat py.err)"
alloc=$("$HOTSPUR" convert --to collapsed --sample-index alloc_space py.pb.gz | awk '{ s += $NF } END { printf "%.0f\n", s }')
echo "python3: ${alloc} bytes allocated (20 MB by the program, plus the interpreter's own)"
awk -v v="$alloc" 'BEGIN { exit !(v >= 16e6 && v <= 60e6) }' || fail "python3's heap profile has $alloc bytes allocated, not 20 MB and more"

JE=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null) || fail "libjemalloc.so.2 is missing (scripts/install-deps: libjemalloc2)"
HOTSPUR_OUTPUT="$TMP/je.pb.gz" HOTSPUR_HEAP=1 HOTSPUR_CPU=0 LD_PRELOAD="$JE:$AGENT_PRELOAD" /bin/true 2>je.err ||
    fail "/bin/true with jemalloc first failed"
cat je.err
grep -q "malloc belongs to .*libjemalloc" je.err || fail "no warning with jemalloc's malloc before the agent's: $(cat je.err)"
pass "the malloc warning is given exactly when the agent's malloc is not the program's"
