# agent_startup.sh — what the agent costs a process that starts and ends at
# once (issue 13: `make -j2` under record took 2.4x the wall time; a loop
# of 200 /bin/true was 17x slower). Counted, not timed: a short process
# under the agent holds no more than 2 MiB of extra anonymous memory (the
# sample tables are pre-faulted only once a process has lived 100 ms; they
# were 4 MiB populated at every start), and writing its profile costs no
# fsync (~10 ms each on this machine's disk). A process that lives longer
# gets its tables pre-faulted.
source "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace is missing (scripts/install-deps)"
[ -z "$asan_rt" ] || { echo "NOT APPLICABLE: ASan's runtime maps its own memory at start"; exit 0; }

rss_anon() { awk '/^RssAnon:/ { print $2 }' "$1"; }
grep RssAnon /proc/self/status >plain.txt
HOTSPUR_OUTPUT="$TMP/short.%p.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" grep RssAnon /proc/self/status >agent.txt ||
    fail "grep under the agent failed"
plain=$(rss_anon plain.txt) agent=$(rss_anon agent.txt)
echo "RssAnon of a short process: $plain kB alone, $agent kB under the agent"
[ $((agent - plain)) -le 2048 ] || fail "the agent adds $((agent - plain)) kB of anonymous memory to a short process (want <= 2048)"
ls short.*.pb.gz >/dev/null 2>&1 || fail "the short process wrote no profile"

strace -f -qq -e trace=fsync,fdatasync,sync_file_range,madvise -o "$TMP/true.strace" \
    env HOTSPUR_OUTPUT="$TMP/true.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" /bin/true || fail "/bin/true under the agent failed"
[ -s true.pb.gz ] || fail "/bin/true wrote no profile"
syncs=$(grep -cE 'fsync|fdatasync|sync_file_range' "$TMP/true.strace" || true)
echo "/bin/true under the agent: $syncs fsync-like calls"
[ "$syncs" = 0 ] || fail "writing a profile called fsync $syncs times: $(grep sync "$TMP/true.strace")"
grep -q MADV_POPULATE_WRITE "$TMP/true.strace" && fail "a process that ended at once pre-faulted its tables"

# A process that lives: its CPU table is pre-faulted by the agent thread.
strace -f -qq -e trace=madvise -o "$TMP/sleep.strace" \
    env HOTSPUR_OUTPUT="$TMP/sleep.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" sleep 0.5 || fail "sleep under the agent failed"
grep -q MADV_POPULATE_WRITE "$TMP/sleep.strace" || fail "a process that lived 0.5 s did not pre-fault its sample table"
pass "a short process pays no table population and no fsync"
