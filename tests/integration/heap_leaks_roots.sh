# heap_leaks_roots.sh — the leak check's roots beyond data/bss: `heap_sites
# roots` keeps one block only in a local variable of a thread that is still
# running at exit (site_thread_stack) and one only in that thread's __thread
# variable (site_thread_tls); both can still be freed by the program, so
# they are not leaks. The leaks profile must hold exactly the deliberately
# leaked sites besides. A third block lives only in the main thread's
# __thread variable (site_main_tls): the exiting thread's TLS is a root too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

"$PROGS/heap_sites" roots > truth.txt
"$HOTSPUR" record --heap --leaks -o roots.pb.gz -- "$PROGS/heap_sites" roots > rec.out 2> rec.err ||
    fail "record exited $?: $(cat rec.err)"
cmp -s truth.txt rec.out || fail "output differs from a plain run"
[ -s roots.leaks.pb.gz ] || fail "no leaks profile: $(ls)"
got=$(site_values roots.leaks.pb.gz inuse_space)
main_tls=$(value_of site_main_tls <<< "$got")
[ "$main_tls" = 0 ] || fail "the block held only by the main thread's TLS is reported as leaked ($main_tls bytes)"
want=$(truth_values truth.txt leak_space)
if [ "$got" != "$want" ]; then
    echo "--- leaks profile vs truth (site bytes):" >&2
    diff <(echo "$want") <(echo "$got") >&2 || true
    for s in site_thread_stack site_thread_tls; do
        [ "$(value_of $s <<< "$got")" = 0 ] || echo "$s: reachable, reported as leaked" >&2
    done
    fail "the leaks are not exactly the leaked sites"
fi
pass "leaks: a live thread's stack and TLS are roots"
