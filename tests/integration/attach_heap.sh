# attach_heap.sh — `hotspur attach PID --heap`: the agent started in a daemon
# that runs already (issue 32). The daemon (attach_daemon) allocates known
# sizes at known sites on request. Attached in exact mode after it allocated
# and kept blocks: those blocks, freed after the attach, go to libc untouched
# and are not in the profile; the sites' bytes after the attach are exact,
# a library dlopened after the attach is hooked too; the report's header says
# what is not counted; `hotspur ctl` lists the process; detach writes the
# files and the daemon answers exactly as an unattached one; attach again
# works (50 cycles: attach_cycles.sh); the C++ build (new[]/delete[]) is
# exact as well; refusals are one line each.
source "$(dirname "$0")/lib.sh"
PLUGIN="$PROGS/libattach_plugin.so"

source "$(dirname "$0")/attach_lib.sh"
# site FILE INDEX SITE: the site's value (0 if absent)
site() { site_values "$1" "$2" | awk -v s="$3" '$1 == s { v = $2 } END { print v + 0 }'; }
# expect FILE SITE ALLOC_SPACE INUSE_SPACE
expect() {
    local a i
    a=$(site "$1" alloc_space "$2")
    i=$(site "$1" inuse_space "$2")
    [ "$a" = "$3" ] && [ "$i" = "$4" ] ||
        fail "$1: $2 allocated $a bytes, $i in use; want $3 and $4: $(site_values "$1" alloc_space)"
}

# Under an ASan build lib.sh preloads ASan's runtime into the daemon: its
# malloc is ASan's, and a heap attach must refuse (libc's free of ASan's
# blocks would crash it), in one line. The rest needs glibc's malloc.
if [ -n "$asan_rt" ]; then
    start_daemon "$PROGS/attach_daemon"
    "$HOTSPUR" attach "$dpid" --exact >asan.out 2>&1 && fail "heap attach with ASan's malloc was accepted"
    grep -q "its malloc is not glibc's" asan.out || fail "heap attach with ASan's malloc: $(cat asan.out)"
    [ "$(wc -l <asan.out)" = 1 ] || fail "the refusal is not one line: $(cat asan.out)"
    ask "round 1"
    stop_daemon
fi
needs_malloc_interposition
source "$(dirname "$0")/heap_lib.sh"

# 1. Exact mode, C daemon. 5 rounds before the attach (kept: 10 blocks of
# which none may count), then after it: they are freed, 7 rounds, a plugin.
start_daemon "$PROGS/attach_daemon"
ask "round 5"
"$HOTSPUR" attach "$dpid" --exact -o "$TMP/exact.pb.gz" >attach.out 2>&1 || fail "attach failed: $(cat attach.out)"
cat attach.out
grep -q "attached to process $dpid: heap, every allocation" attach.out || fail "attach said: $(cat attach.out)"
ask "free"
ask "round 7"
ask "strdup 100"
ask "dlopen $PLUGIN"
for _ in $(seq 40); do # the agent's socket is bound 50 ms after its start
    "$HOTSPUR" ctl >ctl.out 2>&1 || fail "hotspur ctl failed: $(cat ctl.out)"
    grep -Eq "^$dpid " ctl.out && break
    sleep 0.05
done
grep -Eq "^$dpid +attach_daemon +heap" ctl.out || fail "hotspur ctl does not list the attached daemon: $(cat ctl.out)"
"$HOTSPUR" attach "$dpid" --exact >again.out 2>&1 && fail "a second attach was accepted: $(cat again.out)"
grep -q "attached there already" again.out || fail "a second attach: $(cat again.out)"
[ "$(wc -l <again.out)" = 1 ] || fail "the refusal is not one line: $(cat again.out)"
"$HOTSPUR" attach "$dpid" --detach >detach.out 2>&1 || fail "detach failed: $(cat detach.out)"
cat detach.out
grep -q "wrote $TMP/exact.pb.gz" detach.out || fail "detach did not name the profile: $(cat detach.out)"
[ -s exact.pb.gz ] && [ -s exact.peak.pb.gz ] || fail "exact.pb.gz or exact.peak.pb.gz missing: $(ls)"
expect exact.pb.gz site_keep 7000 7000
expect exact.pb.gz site_temp 21000 0
expect exact.pb.gz site_calloc 1680 1680
expect exact.pb.gz site_plugin 3108 3108
# Allocated inside libc (strdup's malloc, through libc's own GOT entry).
expect exact.pb.gz site_strdup 100 100
"$HOTSPUR" top exact.pb.gz >top.out 2>&1 || fail "top failed: $(cat top.out)"
grep -q "blocks allocated before the attach are not counted" top.out || fail "the header does not say what is not counted: $(head -5 top.out)"

# 2. After the detach: the same answers as a daemon never attached to.
ask "round 3"
"$HOTSPUR" attach "$dpid" --detach >detach2.out 2>&1 && fail "detach of a detached process succeeded"
grep -q "not attached" detach2.out || fail "detach of a detached process: $(cat detach2.out)"

# 3. Attach again (sampled, the default). (50 attach/detach cycles:
# attach_cycles.sh.)
"$HOTSPUR" attach "$dpid" -o "$TMP/sampled.pb.gz" >attach3.out 2>&1 || fail "attach again failed: $(cat attach3.out)"
grep -q "heap, sampled" attach3.out || fail "attach again said: $(cat attach3.out)"
ask "round 50000"
"$HOTSPUR" attach "$dpid" --detach >detach3.out 2>&1 || fail "detach again failed: $(cat detach3.out)"
[ -s sampled.pb.gz ] || fail "the second attach wrote nothing: $(cat detach3.out)"
# Sampled (every 512 KiB on average): each site's bytes are an unbiased
# estimate whose standard deviation is about sqrt(B * 524288) for B bytes in
# blocks much smaller than the rate (docs/attach.md); held to 4 of them.
for sb in site_temp:150000000 site_keep:50000000; do
    got=$(site sampled.pb.gz alloc_space "${sb%%:*}")
    awk -v g="$got" -v b="${sb#*:}" 'BEGIN { sd = sqrt(b * 524288); d = g - b; if (d < 0) d = -d
        printf "%s: %d bytes sampled, %d allocated (%.1f sd)\n", "'"${sb%%:*}"'", g, b, d / sd; exit !(d <= 4 * sd) }' ||
        fail "sampled ${sb%%:*}: $got bytes, want ${sb#*:} within 4 sd"
done
stop_daemon
cp daemon.out attached.out
start_daemon "$PROGS/attach_daemon"
for r in "round 5" "free" "round 7" "strdup 100" "dlopen $PLUGIN" "round 3" "round 50000"; do ask "$r"; done
stop_daemon
sed "s/^ready .*/ready/" attached.out >a.txt
sed "s/^ready .*/ready/" daemon.out >b.txt
cmp -s a.txt b.txt || fail "the attached daemon answered differently: $(diff a.txt b.txt | head -5)"

# 4. C++: new[] and delete[] (through libstdc++, whose GOT is rewritten);
# and a library the daemon dlopened before the attach (its GOT rewritten at
# the attach: the second "dlopen" finds it loaded and calls it again).
start_daemon "$PROGS/attach_daemon_cxx"
ask "round 4"
ask "dlopen $PLUGIN"
"$HOTSPUR" attach "$dpid" --exact -o "$TMP/cxx.pb.gz" >attach4.out 2>&1 || fail "attach C++ failed: $(cat attach4.out)"
ask "free"
ask "round 7"
ask "dlopen $PLUGIN"
"$HOTSPUR" attach "$dpid" --detach >detach4.out 2>&1 || fail "detach C++ failed: $(cat detach4.out)"
expect cxx.pb.gz site_keep 7000 7000
expect cxx.pb.gz site_temp 21000 0
expect cxx.pb.gz site_calloc 1680 1680
expect cxx.pb.gz site_plugin 3108 3108
stop_daemon

# 5. --leaks with --duration: attach, detach by itself 1.5 s later; the leak
# profile has what was allocated after the attach and dropped (not the
# kept blocks, which the daemon still points at, nor a leak from before).
start_daemon "$PROGS/attach_daemon"
ask "round 1"
ask "leak 999"
"$HOTSPUR" attach "$dpid" --leaks --stats --duration 1.5 -o "$TMP/lk.pb.gz" >dur.out 2>&1 &
cpid=$!
for _ in $(seq 200); do grep -q "attached to" dur.out && break; sleep 0.05; done
grep -q "attached to process $dpid: heap with leaks" dur.out || fail "attach --leaks: $(cat dur.out)"
ask "leak 4321"
ask "round 2"
wait "$cpid" || fail "attach --duration exited $?: $(cat dur.out)"
cat dur.out
grep -q "wrote $TMP/lk.leaks.pb.gz" dur.out || fail "--duration did not detach and write: $(cat dur.out)"
"$HOTSPUR" convert --to collapsed lk.leaks.pb.gz | collapsed_sites >leaks.txt
[ "$(cat leaks.txt)" = "site_leak 4321" ] || fail "leaks: want only site_leak 4321, got: $(cat leaks.txt)"
expect lk.pb.gz site_keep 2000 2000
# The scan neither waited for the agent's own threads (they block every
# signal: it used to wait its whole timeout for them, seconds under load)
# nor read the live table's untouched pages (128 MB faulted in: ~0.8 s).
grep "leak scan:" daemon.err
grep -q "leak scan: 0 thread(s) did not stop in time" daemon.err || fail "the leak scan waited: $(cat daemon.err)"
read -r got all < <(sed -n 's/.*, \([0-9]*\) of \([0-9]*\) live-table pages read.*/\1 \2/p' daemon.err)
[ -n "$all" ] && [ "$got" -lt $((all / 10)) ] || fail "the leak scan read $got of $all live-table pages"
stop_daemon

# 6. Refusals, one line each.
"$HOTSPUR" attach "$$" --cpu >cpu.out 2>&1 && fail "--cpu was accepted"
grep -q "hotspur record -p PID" cpu.out || fail "--cpu: $(cat cpu.out)"
HOTSPUR_CPU=0 HOTSPUR_HEAP=1 HOTSPUR_OUTPUT="$TMP/pre.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" \
    "$PROGS/attach_reader" <fifo.in >pre.out 2>&1 &
ppid=$!
exec 7>fifo.in
for _ in $(seq 100); do grep -q ready pre.out && break; sleep 0.05; done
"$HOTSPUR" attach "$ppid" >pre_attach.out 2>&1 && fail "attach to a preloaded process was accepted"
grep -q "runs there from the start" pre_attach.out || fail "attach to a preloaded process: $(cat pre_attach.out)"
[ "$(wc -l <pre_attach.out)" = 1 ] || fail "the refusal is not one line: $(cat pre_attach.out)"
echo x >&7
exec 7>&-
wait "$ppid" || fail "the preloaded reader failed: $(cat pre.out)"

pass "attach --heap: exact to the byte (C, C++, a module dlopened after), blocks from before not counted, detach restores the answers, attach again, --leaks --duration"
