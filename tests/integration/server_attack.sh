#!/usr/bin/env bash
# server_attack.sh — the holes an outside attack pass found in `hotspur
# serve` (issue 29), each replayed against a real server: regex bombs in
# filter parameters (memory and time bounded, 400 in milliseconds, server
# alive and small afterwards).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

"$HOTSPUR" convert "$SRC/tests/data/stacks.folded" --from collapsed --to pprof -o prof.pb.gz
now=$(date +%s)
server_start
st=$(server_curl up.json --data-binary @prof.pb.gz "$SERVER_URL/api/v1/ingest?service=svc&type=cpu&from=$now")
[ "$st" = 200 ] || fail "upload: $st $(cat up.json)"

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$SERVER_PID/status"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
rss0=$(rss)

# --- regex bombs: glibc's regcomp took 3.0 GB and 11 s on the first, 1.6 GB
# for eight of the second in parallel. Each is refused while the query's
# parameters are checked, for every filter, whether the service exists or not.
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
bombs=('((x{32767}){32767})' '(((a{100}){100}){100})' '((a{999}){999})' '(a{1000}){2}(b{1000}){2}')
params=(focus ignore show hide show_from tagfocus tagignore)
for b in "${bombs[@]}"; do
    for p in "${params[@]}"; do
        v=$b
        case $p in tag*) v="k=$b" ;; esac
        e=$(enc "$v")
        for svc in svc nosuch; do
            t0=$(date +%s%N)
            st=$(server_curl bomb.json "$SERVER_URL/api/v1/flamegraph?service=$svc&type=cpu&from=0&$p=$e")
            ms=$((($(date +%s%N) - t0) / 1000000))
            [ "$st" = 400 ] || fail "$p=$b on $svc: status $st $(cat bomb.json)"
            grep -q '"error"' bomb.json || fail "$p=$b: no JSON error: $(cat bomb.json)"
            [ "$ms" -lt 1000 ] || fail "$p=$b on $svc took $ms ms"
        done
    done
done
pass "regex bombs: ${#bombs[@]} patterns x ${#params[@]} filters refused with 400 in < 1 s each"

# Eight clients at once, 20 bombs each.
pids=()
e=$(enc '(((a{100}){100}){100})')
for c in 1 2 3 4 5 6 7 8; do
    (for i in $(seq 20); do
        st=$(server_curl /dev/null "$SERVER_URL/api/v1/functions?service=svc&type=cpu&from=0&focus=$e")
        [ "$st" = 400 ] || { echo "client $c: $st" >par.err; exit 1; }
    done) &
    pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the server is a child too
[ ! -s par.err ] || fail "parallel bombs: $(cat par.err)"
server_alive || fail "the server died"
peak=$(hwm)
# The server's whole peak, fixture and all, stays small (glibc: 1.6-3.0 GB).
[ "$peak" -lt $((200 * 1024)) ] || fail "server peak RSS ${peak} kB after the bombs (started at ${rss0} kB)"
pass "160 parallel bombs: server alive, peak RSS $((peak / 1024)) MiB"

# A legitimate filter still works after all that.
st=$(server_curl fn.json "$SERVER_URL/api/v1/functions?service=svc&type=cpu&from=0&focus=$(enc '(?i)^PUSH_|\bcompute$')")
[ "$st" = 200 ] || fail "legit filter: $st $(cat fn.json)"
grep -q 'compute' fn.json || fail "legit filter lost compute: $(cat fn.json)"
pass "a legitimate RE2 filter still answers"
