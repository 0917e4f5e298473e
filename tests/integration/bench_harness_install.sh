#!/usr/bin/env bash
# bench_harness_install: `cmake --install` puts the harness where users find
# it — lib/libhotspur_bench.a, include/hotspur/bench.h and
# lib/pkgconfig/hotspur-bench.pc (relocatable) — and a benchmark file built
# with `pkg-config --cflags --libs hotspur-bench` against that prefix alone
# runs, counts its allocations and warns that it was not optimized.
source "$(dirname "$0")/lib.sh"

build=$(cd "$(dirname "$HOTSPUR")/.." && pwd)
cmake --install "$build" --prefix "$TMP/prefix" >install.log 2>&1 || { cat install.log >&2; fail "cmake --install failed"; }
pc=$(find "$TMP/prefix" -name hotspur-bench.pc | head -n1)
[ -n "$pc" ] || fail "hotspur-bench.pc not installed"
[ -f "$TMP/prefix/include/hotspur/bench.h" ] || fail "bench.h not installed"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs hotspur-bench) || fail "pkg-config does not know hotspur-bench"
case "$flags" in *"$TMP/prefix"*) ;; *) fail "pkg-config flags do not point into the prefix: $flags" ;; esac
cat >user.c <<'C'
#include <hotspur/bench.h>
#include <stdlib.h>
HS_BENCH_WITH(user_alloc, .params = "size=16,4096")
{
    long size = hs_bench_arg(b, "size");
    while (hs_bench_loop(b)) {
        void *p = malloc((size_t)size);
        hs_do_not_optimize(p);
        free(p);
    }
}
C
san=""
if [ -n "$asan_rt" ]; then san="-fsanitize=address,undefined"; fi
# -O0 on purpose: the harness must say so.
# shellcheck disable=SC2086 # flags are a list
cc -O0 $san user.c $flags -o user || fail "a benchmark does not build with pkg-config's flags"
./user --list >list.txt || fail "--list failed"
[ "$(cat list.txt)" = "$(printf 'user_alloc/size=16\nuser_alloc/size=4096')" ] || { cat list.txt; fail "wrong cases"; }
./user --forks 1 --iterations 2 --time 10ms --format csv --out res.csv >table.txt 2>err.txt || { cat err.txt; fail "run failed"; }
cat table.txt err.txt
grep -Eq '^user_alloc/size=4096 +avgt .* 4096 +1$' table.txt || fail "4096 B/op and 1 allocs/op not reported"
grep -q 'compiled without optimization' err.txt || fail "no warning for an unoptimized benchmark"
pass "installed harness: pkg-config hotspur-bench builds a benchmark that runs and counts"
