# debuginfo_lib.sh — programs for the server naming tests (sourced after
# lib.sh and server_lib.sh; not a test itself). build_pair makes, in $TMP:
#   app            a C++ program built -g that spins for $1 seconds in
#                  app::Spinner<N>::run (a template), an always-inline
#                  helper and nm_work of libnm.so, loaded from $TMP/lib;
#   lib/libnm.so   version A (nm::alpha_step) or, rebuilt at the same path,
#                  version B (nm::beta_step): two builds, two build IDs;
#   *.debug        their debug info (objcopy --only-keep-debug).
# raw_profile OUT  runs app with the agent and HOTSPUR_SYMBOLIZE=server;
# strip_all        strips app and lib/libnm.so in place (build IDs stay).
# top_ours FILE|URL  the `top --lines` rows of our own sources, the part a
#                  reference and the server must agree on byte for byte
#                  (less sum%, which counts the rows of other files above).

# curl hangs with the ASan runtime lib.sh preloads in sanitized builds (make
# check SANITIZE=1); the app gets it back through AGENT_PRELOAD.
unset LD_PRELOAD
command -v g++ >/dev/null || fail "g++ is missing (build-essential)"
command -v objcopy >/dev/null || fail "objcopy is missing (binutils)"

build_lib() { # VERSION (alpha|beta)
    mkdir -p "$TMP/lib"
    cat >"$TMP/libnm.cc" <<SRC
#include <cmath>
namespace nm {
static volatile int seed = 5;
static inline __attribute__((always_inline)) double mix(int i) {
    double x = 0;
    for (int k = 0; k < 400; k++) x += std::sqrt((double)((i * k) % seed + 1));
    return x;
}
__attribute__((noinline)) double $1_step(int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += mix(i);
    return s;
}
}
extern "C" double nm_work(int n) { return nm::$1_step(n); }
SRC
    g++ -g -O2 -fPIC -shared -Wl,--build-id -o "$TMP/lib/libnm.so" "$TMP/libnm.cc" || fail "cannot build libnm ($1)"
    objcopy --only-keep-debug "$TMP/lib/libnm.so" "$TMP/libnm.$1.debug"
    cp "$TMP/lib/libnm.so" "$TMP/libnm.$1.so.unstripped"
}

build_app() {
    cat >"$TMP/app.cc" <<'SRC'
#include <cstdio>
#include <cstdlib>
#include <ctime>
extern "C" double nm_work(int n);
namespace app {
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
template <int N> struct Spinner {
    static inline __attribute__((always_inline)) double inner(int i) {
        double x = 0;
        for (int k = 0; k < 300; k++) x += (i * k + N) % 7;
        return x;
    }
    __attribute__((noinline)) static double run(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += inner(i);
        return s;
    }
};
}
int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1, t0 = app::now(), sink = 0;
    while (app::now() - t0 < secs) { sink += app::Spinner<3>::run(300); sink += nm_work(60); }
    printf("%d\n", sink > 0);
    return 0;
}
SRC
    g++ -g -O2 -Wl,--build-id -o "$TMP/app" "$TMP/app.cc" -L"$TMP/lib" -lnm -Wl,-rpath,"$TMP/lib" ||
        fail "cannot build app"
    objcopy --only-keep-debug "$TMP/app" "$TMP/app.debug"
}

build_id_of() { readelf -n "$1" | awk '/Build ID/ { print $3 }'; }

raw_profile() { # OUT [SECONDS]
    HOTSPUR_SYMBOLIZE=server HOTSPUR_OUTPUT="$1" LD_PRELOAD="$AGENT_PRELOAD" "$TMP/app" "${2:-1.5}" >/dev/null ||
        fail "app under the agent failed"
    [ -s "$1" ] || fail "no profile $1"
}

strip_all() {
    strip -g -s "$TMP/app" "$TMP/lib/libnm.so" || fail "strip failed"
}

top_ours() { # without the sum% column: it sums the rows above, other files' rows included
    "$HOTSPUR" top --lines --nodecount 100000 "$1" | grep -E 'app\.cc|libnm\.cc' | awk '{ $3 = ""; print }' || true
}

ingest() { # FILE SERVICE
    local st
    st=$(server_curl "$TMP/ingest.out" --data-binary @"$1" "$SERVER_URL/api/v1/ingest?service=$2&type=cpu")
    [ "$st" = 200 ] || fail "ingest of $1 answered $st: $(cat "$TMP/ingest.out")"
}

query() { echo "$SERVER_URL/api/v1/profile?service=$1&type=cpu&from=now-1h"; }
