# server_vdso.sh — vDSO frames named at the server (issue 31). A program
# that spends its time in clock_gettime (the vDSO's code), profiled with
# HOTSPUR_SYMBOLIZE=server: its "[vdso]" frames reach the server as
# addresses with the vDSO's build ID. A server on a host with that vDSO
# (the same kernel build: same build ID) names them from its own, exactly as
# `hotspur symbolize` does; with the "path" source left out they stay
# "[vdso]+0x..."; a profile whose vDSO has another build ID (another
# kernel) is never named from this host's vDSO, by the server or by
# `hotspur symbolize`; an uploaded vDSO image (`hotspur debuginfo upload
# --vdso` on a host of that kernel) names them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl and the server need no agent (and hang on ASan's runtime); the app gets it back
AGENT_PRELOAD=$HOTSPUR_LIB${asan_rt:+ }${asan_rt:-}
[ -z "$asan_rt" ] || AGENT_PRELOAD="$asan_rt $HOTSPUR_LIB"

cat >"$TMP/vd.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) static long spin_clock(double secs)
{
    struct timespec t0, t;
    long n = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
        n++;
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    return n;
}
int main(int argc, char **argv) { printf("%ld\n", spin_clock(argc > 1 ? atof(argv[1]) : 1)); return 0; }
SRC
cc -O2 -g -o "$TMP/vd" "$TMP/vd.c" || fail "cannot build vd"
HOTSPUR_SYMBOLIZE=server HOTSPUR_OUTPUT=raw.pb.gz LD_PRELOAD="$AGENT_PRELOAD" "$TMP/vd" 1.5 >/dev/null ||
    fail "vd under the agent failed"
[ -s raw.pb.gz ] || fail "no profile"
gzip -dc raw.pb.gz | grep -qa '\[vdso\]' || fail "the profile has no [vdso] mapping"

vdso_rows() { # FILE|URL: top's rows of vDSO frames, less sum%
    "$HOTSPUR" top --unit ms --nodecount 100000 "$1" | grep -E '__vdso|\[vdso\]' | awk '{ $3 = ""; print }' || true
}
"$HOTSPUR" symbolize -o ref.pb.gz raw.pb.gz || fail "symbolize failed"
vdso_rows ref.pb.gz >ref.txt
grep -q '__vdso_clock_gettime' ref.txt || fail "the reference names no vDSO function: $(cat ref.txt)"

ingest() { # URL FILE SERVICE
    local st
    st=$(server_curl "$TMP/ingest.out" --data-binary @"$2" "$1/api/v1/ingest?service=$3&type=cpu")
    [ "$st" = 200 ] || fail "ingest of $2 answered $st: $(cat "$TMP/ingest.out")"
}
query() { echo "$1/api/v1/profile?service=$2&type=cpu&from=now-1h"; }

# a server that only has uploads: the frames stay addresses with the vDSO's build ID
server_start --debuginfo-sources upload
URL2=$SERVER_URL
ingest "$URL2" raw.pb.gz vd
vdso_rows "$(query "$URL2" vd)" >upload_only.txt
grep -q '__vdso' upload_only.txt && fail "vDSO named without the path source: $(cat upload_only.txt)"
grep -qE '\[vdso\]\+0x' upload_only.txt || fail "no [vdso]+0x rows before the upload: $(cat upload_only.txt)"
# the [vdso] mapping's build ID, read from the raw profile (pprof: Mapping
# is field 3, its filename 5 and build_id 6, indices into the strings, 6)
VBID=$(python3 - <<'PY'
import gzip
def fields(b):
    i = 0
    while i < len(b):
        k = 0; s = 0
        while True:
            c = b[i]; i += 1; k |= (c & 0x7f) << s; s += 7
            if c < 0x80: break
        num, wt = k >> 3, k & 7
        if wt == 0:
            v = 0; s = 0
            while True:
                c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
                if c < 0x80: break
            yield num, v
        elif wt == 2:
            n = 0; s = 0
            while True:
                c = b[i]; i += 1; n |= (c & 0x7f) << s; s += 7
                if c < 0x80: break
            yield num, b[i:i + n]; i += n
        else:
            raise SystemExit("unexpected wire type %d" % wt)
data = gzip.open("raw.pb.gz").read()
strings = [v.decode() for n, v in fields(data) if n == 6]
for n, v in fields(data):
    if n == 3:
        m = dict(fields(v))
        if strings[m.get(5, 0)] == "[vdso]":
            print(strings[m.get(6, 0)])
PY
)
[ -n "$VBID" ] || fail "the [vdso] mapping has no build ID"
curl -s --max-time 30 "$(query "$URL2" vd)" | gzip -dc | grep -qa "build-id:$VBID:" ||
    fail "the stored vDSO frames lost their build ID $VBID"
UPLOAD_PID=$SERVER_PID
pass "raw profile: [vdso] frames kept as addresses with build ID $VBID; the reference names $(grep -c . ref.txt) vDSO rows"

# another kernel's vDSO: the same profile with another build ID
python3 - "$VBID" <<'PY'
import gzip, sys
bid = sys.argv[1]
other = "".join("%x" % ((int(c, 16) + 1) % 16) for c in bid)
data = gzip.open("raw.pb.gz").read()
assert data.count(bid.encode()) >= 1
open("other.bid", "w").write(other)
gzip.open("other.pb.gz", "wb").write(data.replace(bid.encode(), other.encode()))
PY
OTHER=$(cat other.bid)

server_start --debuginfo-sources path
URL1=$SERVER_URL
ingest "$URL1" raw.pb.gz vd
vdso_rows "$(query "$URL1" vd)" >server.txt
diff ref.txt server.txt >/dev/null || { diff ref.txt server.txt | head; fail "vDSO frames named at the server differ from symbolize's"; }
pass "the server names vDSO frames from its own vDSO, as hotspur symbolize does ($(grep -c . server.txt) rows)"

ingest "$URL1" other.pb.gz other
vdso_rows "$(query "$URL1" other)" >other_server.txt
grep -q '__vdso' other_server.txt && fail "another kernel's vDSO named from this host's: $(cat other_server.txt)"
grep -qE '\[vdso\]\+0x' other_server.txt || fail "unnamed vDSO frames do not read [vdso]+0x...: $(cat other_server.txt)"
curl -s --max-time 30 "$(query "$URL1" other)" | gzip -dc | grep -qa "build-id:$OTHER:" ||
    fail "the other kernel's vDSO frames lost their build ID"
"$HOTSPUR" symbolize -o other_sym.pb.gz other.pb.gz || fail "symbolize other failed"
vdso_rows other_sym.pb.gz >other_sym.txt
grep -q '__vdso' other_sym.txt && fail "hotspur symbolize named another kernel's vDSO from this host's: $(cat other_sym.txt)"
pass "a vDSO with another build ID stays [vdso]+0x..., at the server and in hotspur symbolize"
server_stop

# this host's vDSO, uploaded as another host's would be: names them after the fact
"$HOTSPUR" debuginfo upload --server "$URL2" --vdso >up.txt || fail "debuginfo upload --vdso failed: $(cat up.txt)"
grep -q "$VBID" up.txt || fail "upload --vdso did not print the vDSO's build ID: $(cat up.txt)"
vdso_rows "$(query "$URL2" vd)" >uploaded.txt
diff ref.txt uploaded.txt >/dev/null || { diff ref.txt uploaded.txt | head; fail "vDSO named from the upload differs from symbolize's"; }
pass "before an upload [vdso]+0x...; after \`debuginfo upload --vdso\`, named as symbolize does"
server_stop "$UPLOAD_PID"
