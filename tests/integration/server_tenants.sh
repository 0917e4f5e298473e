#!/usr/bin/env bash
# server_tenants.sh — tenants (docs/server.md, "Tenants"): three tenants
# (acme, beta and the default) upload profiles of the same service "shop"
# with functions, labels and versions of their own, through every ingest
# route (pprof, Pyroscope's /ingest, OTLP), and acme uploads debug info.
# Then every route `hotspur serve --print-routes` lists is asked by each
# tenant (server_tenants.py): each sees its own data and nothing of the
# others'. First with a token map (--tokens: the token is the tenant; a
# header naming another tenant is a 403), then, on the same data, with
# X-Scope-OrgID alone; no header is the default tenant, whose store is the
# one configured (DIR/hotspur.db, unchanged). Retention reaches a tenant's
# store. HS_TENANTS_BACKEND=clickhouse (server_tenants_clickhouse.sh) runs
# it on a throwaway ClickHouse server.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl hangs with ASan's runtime preloaded (see server_ingest.sh)

if [ "${HS_TENANTS_BACKEND:-sqlite}" = clickhouse ]; then
    source "$(dirname "$0")/clickhouse_lib.sh"
    trap 'server_stop_all; ch_stop_all' EXIT
    ch_ports 3
    read -r CH_H CH_T CH_I <<<"$CH_PORTS"
    ch_config t "$CH_H" "$CH_T" "$CH_I"
    ch_start t
    ch_wait t "$CH_H"
    STORE=(--store "clickhouse://127.0.0.1:$CH_H/hs_ten" --debuginfo-dir "$TMP/dbg")
else
    STORE=(--data "$TMP/data")
fi

"$HOTSPUR" serve --print-routes >routes
grep -qx 'GET /api/v1/flamegraph' routes || fail "--print-routes: $(cat routes)"
# debug info to upload: a small program built -g, with a build ID
printf 'int main(void) { return 0; }\n' >dbg.c
cc -g -Wl,--build-id -o dbg.elf dbg.c || fail "cc failed"
BUILD_ID=$(readelf -n dbg.elf | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$BUILD_ID" ] || fail "dbg.elf has no build ID"

# the profiles: every tenant's service is "shop"; a tenant's function,
# zone label and version are its secrets
mk() { # OUT FUNC
    printf 'main;%s 40\nmain;work 10\n' "$2" >"$1.folded"
    "$HOTSPUR" convert --from collapsed --to pprof -o "$1" "$1.folded"
}
mk acme.pb.gz acme_secret_fn
mk beta.pb.gz beta_secret_fn
mk dflt.pb.gz dflt_secret_fn

printf '# token tenant\ntokA acme\ntokB beta  # a comment\ntokD default\n' >tokens
server_start "${STORE[@]}" --tokens tokens --token admin

# ingest(AUTH_ARGS...) with pprof: 200
up() { # NAME ZONE VERSION ID curl-args...
    local name=$1 zone=$2 ver=$3 id=$4
    shift 4
    st=$(server_curl out -X POST --data-binary @"$name.pb.gz" "$@" \
        "$SERVER_URL/api/v1/ingest?service=shop&type=cpu&version=$ver&label=zone=$zone&id=$id")
    [ "$st" = 200 ] || fail "ingest $name: $st $(cat out)"
}
up acme acme-zone acme-v1 acmeid1 -H "Authorization: Bearer tokA"
up beta beta-zone beta-v1 betaid1 -H "Authorization: Bearer tokB"
up dflt dflt-zone dflt-v1 dfltid1 -H "Authorization: Bearer tokD"
# acme through Pyroscope's /ingest (folded) and OTLP
st=$(server_curl out -X POST --data-binary $'main;acme_secret_fn 7\n' -H "Authorization: Bearer tokA" \
    "$SERVER_URL/ingest?name=acme-pyro.cpu%7Bzone=acme-zone%7D&format=folded&from=$(date +%s)")
[ "$st" = 200 ] || fail "pyroscope ingest as acme: $st $(cat out)"
OTLP_NOW=$(date +%s) OTLP_SERVICE=acme-otlp python3 "$SRC/tests/integration/otlp_body.py" proto >acme.otlp
st=$(server_curl out -X POST --data-binary @acme.otlp -H "Content-Type: application/x-protobuf" \
    -H "Authorization: Bearer tokA" "$SERVER_URL/v1development/profiles")
[ "$st" = 200 ] || fail "OTLP ingest as acme: $st $(cat out)"
# debug info, acme's
st=$(server_curl out -X PUT --data-binary @dbg.elf -H "Authorization: Bearer tokA" \
    "$SERVER_URL/api/v1/debuginfo/$BUILD_ID")
[ "$st" = 201 ] || fail "debuginfo upload as acme: $st $(cat out)"

export AUTH_acme="Authorization: Bearer tokA" AUTH_beta="Authorization: Bearer tokB"
export AUTH_default="Authorization: Bearer tokD" PROFILES="acme=3,beta=1,default=1"
python3 "$SRC/tests/integration/server_tenants.py" "$SERVER_URL" routes "$BUILD_ID" ||
    fail "tenants leak (token map)"
# the admin token names any tenant; the same walk
export AUTH_acme=$'Authorization: Bearer admin\nX-Scope-OrgID: acme'
export AUTH_beta=$'Authorization: Bearer admin\nX-Scope-OrgID: beta' AUTH_default="Authorization: Bearer admin"
python3 "$SRC/tests/integration/server_tenants.py" "$SERVER_URL" routes "$BUILD_ID" ||
    fail "tenants leak (admin token, X-Scope-OrgID)"

# refusals: a header naming another tenant than the token's, no token, a
# bad name, two headers
st=$(server_curl out -H "Authorization: Bearer tokB" -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/services")
[ "$st" = 403 ] || fail "tokB asking as acme: $st $(cat out)"
st=$(server_curl out -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/services")
[ "$st" = 401 ] || fail "no token with --tokens: $st $(cat out)"
st=$(server_curl out -H "Authorization: Bearer tokA" -H "X-Scope-OrgID: ../x" "$SERVER_URL/api/v1/services")
[ "$st" = 400 ] || fail "a bad tenant name: $st $(cat out)"
st=$(server_curl out -H "Authorization: Bearer admin" -H "X-Scope-OrgID: acme" -H "X-Scope-OrgID: beta" \
    "$SERVER_URL/api/v1/services")
[ "$st" = 400 ] || fail "two X-Scope-OrgID headers: $st $(cat out)"
server_stop || fail "the server did not stop cleanly"

# ---- X-Scope-OrgID alone, on the same stores ----
server_start "${STORE[@]}"
export AUTH_acme="X-Scope-OrgID: acme" AUTH_beta="X-Scope-OrgID: beta" AUTH_default=""
python3 "$SRC/tests/integration/server_tenants.py" "$SERVER_URL" routes "$BUILD_ID" ||
    fail "tenants leak (X-Scope-OrgID)"
# "default" by name is the default tenant: the same answer, byte for byte
server_curl a.json "$SERVER_URL/api/v1/flamegraph?service=shop&type=cpu&from=0" >/dev/null
server_curl b.json -H "X-Scope-OrgID: default" "$SERVER_URL/api/v1/flamegraph?service=shop&type=cpu&from=0" >/dev/null
cmp -s a.json b.json || fail "X-Scope-OrgID: default differs from no header"
grep -q dflt_secret_fn a.json || fail "the default tenant's flame graph: $(head -c 300 a.json)"
if [ "${HS_TENANTS_BACKEND:-sqlite}" != clickhouse ]; then
    # the default tenant is the store as configured; the others beside it
    [ -f "$TMP/data/hotspur.db" ] && [ -f "$TMP/data/tenants/acme/hotspur.db" ] ||
        fail "store layout: $(find "$TMP/data" -name '*.db')"
else
    ch_sql "$CH_H" "SHOW DATABASES" >dbs
    grep -qx hs_ten dbs && grep -qx hs_ten_t_acme dbs || fail "ClickHouse databases: $(cat dbs)"
fi
# an old profile of acme's; a restart with --retention 1h drops it from acme's store
old=$(($(date +%s) - 7200))
st=$(server_curl out -X POST --data-binary @acme.pb.gz -H "X-Scope-OrgID: acme" \
    "$SERVER_URL/api/v1/ingest?service=old&type=cpu&from=$old&until=$((old + 10))")
[ "$st" = 200 ] || fail "old profile: $st $(cat out)"
server_curl out -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/services" >/dev/null
grep -q '"old"' out || fail "acme's services lack the old one: $(cat out)"
server_stop || fail "the server did not stop cleanly"
server_start "${STORE[@]}" --retention 1h
# the stored tenants open at start (SQLite: DIR/tenants/T; ClickHouse: the
# databases DB_t_ENC), so retention reaches acme's store before any request
# of acme's opens it: its store says so directly
for ((t = 0; t < 100; t++)); do
    if [ "${HS_TENANTS_BACKEND:-sqlite}" = clickhouse ]; then
        done_=$(ch_sql "$CH_H" "SELECT count() FROM hs_ten_t_acme.retention WHERE before_ns > ${old}000000000")
    else
        done_=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(int(db.execute("SELECT count(*) FROM profiles p JOIN kinds k ON p.kid = k.kid WHERE k.service = ?", ("old",)).fetchone()[0] == 0))' \
            "$TMP/data/tenants/acme/hotspur.db")
    fi
    [ "${done_:-0}" -ge 1 ] && break
    sleep 0.1
done
[ "${done_:-0}" -ge 1 ] || fail "retention did not reach acme's store at start (before a request of acme's)"
server_curl out -H "X-Scope-OrgID: acme" "$SERVER_URL/api/v1/services" >/dev/null
grep -q '"old"' out && fail "retention kept acme's old profile: $(cat out)"
grep -q '"shop"' out || fail "retention dropped acme's recent profiles: $(cat out)"
server_stop || fail "the server did not stop cleanly"
echo "PASS: $(basename "$0")"
