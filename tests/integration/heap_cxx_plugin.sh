# heap_cxx_plugin.sh — a C program (no libstdc++ of its own) dlopens a C++
# plugin with RTLD_LOCAL, as ar and nm load GCC's LTO plugin. The agent,
# which does not bring libstdc++ itself (symlib.h), finds the plugin's
# operator new outside the global scope: the program runs as without the
# agent, and every site's four figures equal the truth in exact mode.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

readelf -d "$PROGS/cxx_plugin_host" | grep -q 'NEEDED.*libstdc++' && fail "cxx_plugin_host links libstdc++ itself"
"$PROGS/cxx_plugin_host" "$PROGS/cxx_plugin.so" >truth.txt || fail "cxx_plugin_host failed alone"
"$HOTSPUR" record --heap --heap-rate 1 -o plug.pb.gz -- "$PROGS/cxx_plugin_host" "$PROGS/cxx_plugin.so" \
    >rec.out 2>rec.err || fail "cxx_plugin_host exited $? under record: $(cat rec.err)"
cmp -s truth.txt rec.out || fail "output under record differs from a plain run"
sites_equal_truth plug.pb.gz truth.txt "plugin sites"
"$HOTSPUR" convert --to collapsed --sample-index alloc_objects plug.pb.gz >stacks.txt
grep ';site_plugin_' stacks.txt | grep -Eq ';operator new[^;]* [0-9]+$' ||
    fail "the plugin's allocations do not go through operator new: $(cat stacks.txt)"
# And LTO's own case, when gcc is here: ar loading liblto_plugin.
if command -v gcc >/dev/null && command -v ar >/dev/null; then
    echo 'int f(void) { return 1; }' >lto.c
    gcc -flto -c lto.c -o lto.o || fail "gcc -flto failed"
    HOTSPUR_OUTPUT="$TMP/ar.pb.gz" HOTSPUR_HEAP=1 LD_PRELOAD="$AGENT_PRELOAD" ar rcs lto.a lto.o ||
        fail "ar with the LTO plugin failed under the agent"
    [ -s ar.cpu.pb.gz ] && [ -s ar.heap.pb.gz ] || fail "ar under the agent wrote no profiles"
fi
pass "a C program's RTLD_LOCAL C++ plugin: runs, and its new/new[] sites equal the truth"
