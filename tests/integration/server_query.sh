#!/usr/bin/env bash
# server_query.sh — the query API of a real `hotspur serve`, against numbers
# computed independently of the server: profiles with known stacks are
# written here (a small pprof writer in Python's standard library), uploaded
# with curl, and every answer is compared with what the CLI computes from
# the same files (`hotspur merge` then `hotspur top`), with sums worked out
# here, and with `go tool pprof`. Then the refusals: 401 without the token,
# 413 over --max-body, 400 on an unknown parameter, the server alive after
# bad requests, source files outside --source-path never served, and
# --retention deleting old profiles at start.
#
# HS_QUERY_BACKEND=clickhouse (server_query_clickhouse.sh) runs it all on a
# throwaway ClickHouse server instead of SQLite.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
# Nothing here runs under the agent, and curl hangs with the ASan runtime
# lib.sh preloads in sanitized builds (hotspur links ASan itself).
unset LD_PRELOAD

# store_args NAME: the store options of a server (a fresh store per NAME)
if [ "${HS_QUERY_BACKEND:-sqlite}" = clickhouse ]; then
    source "$(dirname "$0")/clickhouse_lib.sh"
    trap 'server_stop_all; ch_stop_all' EXIT
    ch_ports 3
    read -r CH_H CH_T CH_I <<<"$CH_PORTS"
    ch_config q "$CH_H" "$CH_T" "$CH_I"
    ch_start q
    ch_wait q "$CH_H"
    store_args() { echo "--store clickhouse://127.0.0.1:$CH_H/hs_$1?rollup_delay=0"; }
else
    store_args() { echo "--data $TMP/$1"; }
fi

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# mkprof OUT.pb.gz < SPEC: one sample per line "VALUE frame;frame;..." (root
# first), a frame "func@file:line"; sample types samples/count and
# cpu/nanoseconds (10 ms per sample).
cat >mkprof.py <<'EOF'
import gzip, os, sys
sys.path.insert(0, os.environ["SRC"] + "/tests/integration")
from pbwire import ldelim, packed, vfield
def field(num, wire, payload):
    return vfield(num, payload) if wire == 0 else ldelim(num, payload)
def msg(*fields):
    return b"".join(fields)
strings, sidx = [""], {"": 0}
def s(x):
    if x not in sidx:
        sidx[x] = len(strings)
        strings.append(x)
    return sidx[x]
funcs, locs, samples = {}, {}, []
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    value, stack = line.split(" ", 1)
    ids = []
    for fr in stack.split(";"):
        name, where = fr.split("@")
        file, ln = where.rsplit(":", 1)
        if (name, file) not in funcs:
            funcs[(name, file)] = len(funcs) + 1
        key = (name, file, int(ln))
        if key not in locs:
            locs[key] = len(locs) + 1
        ids.append(locs[key])
    samples.append((list(reversed(ids)), int(value)))
out = bytearray()
for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
    out += field(1, 2, msg(field(1, 0, s(t)), field(2, 0, s(u))))
for ids, v in samples:
    out += field(2, 2, msg(packed(1, ids), packed(2, [v, v * 10000000])))
for (name, file, ln), lid in locs.items():
    fid = funcs[(name, file)]
    out += field(4, 2, msg(field(1, 0, lid), field(4, 2, msg(field(1, 0, fid), field(2, 0, ln)))))
for (name, file), fid in funcs.items():
    out += field(5, 2, msg(field(1, 0, fid), field(2, 0, s(name)), field(3, 0, s(name)), field(4, 0, s(file))))
pt, pu = s("cpu"), s("nanoseconds")
for x in strings:
    out += field(6, 2, x.encode())
out += field(11, 2, msg(field(1, 0, pt), field(2, 0, pu))) + field(12, 0, 10000000)
open(sys.argv[1], "wb").write(gzip.compress(bytes(out)))
EOF
mkprof() { python3 mkprof.py "$1"; }

M='main@src/app.c:10' F='f@src/app.c:20' G='g@src/app.c:30' H='h@src/lib.c:5' K='k@src/lib.c:9'
# a: v1 instance=a   b: v2 instance=b   c: v2 instance=a (the heaviest)
mkprof a.pb.gz <<EOF
10 $M;$F
5 $M;$G
2 $M;$F;$K
EOF
mkprof b.pb.gz <<EOF
3 $M;$F
7 $M;$H
EOF
mkprof c.pb.gz <<EOF
20 $M;$H;$K
4 $M;$G
6 $M;$F;$F
EOF
# totals: a 17, b 10, c 30 (samples)

now=$(date +%s)
t0=$((now - 900))
# shellcheck disable=SC2046 # two words
server_start $(store_args main) --source-path "$SRC/tests/integration"
URL=$SERVER_URL
A="$URL/api/v1"

upload() { # FILE VERSION INSTANCE START
    local st
    st=$(server_curl up.json --data-binary @"$1" \
        "$A/ingest?service=app&type=cpu&version=$2&label=instance=$3&from=$4&until=$(($4 + 10))")
    [ "$st" = 200 ] && [ "$(json up.json 'd["stored"]')" = 1 ] || fail "upload $1: HTTP $st $(cat up.json)"
}
upload a.pb.gz v1 a $t0
upload b.pb.gz v2 b $((t0 + 60))
upload c.pb.gz v2 a $((t0 + 120))
base="service=app&type=cpu"
sel="$base&from=$((t0 - 1))"

# ---- the merged profile is the sum: hotspur top on the URL = on merge ----
"$HOTSPUR" merge a.pb.gz b.pb.gz c.pb.gz -o m.pb.gz
# 'Time:' and 'Duration:' come from the server's profile (the files have none)
strip() { grep -Ev '^(Time|Duration):'; }
"$HOTSPUR" top --sample-index samples m.pb.gz | strip >cli.txt
"$HOTSPUR" top --sample-index samples "$A/profile?$sel" | strip >srv.txt ||
    fail "hotspur top URL failed"
diff cli.txt srv.txt || fail "top of the server's merged profile differs from top of hotspur merge"
grep -q "Showing nodes accounting for 57, 100% of 57 total" srv.txt || fail "merged total is not 57: $(cat srv.txt)"
"$HOTSPUR" top m.pb.gz | strip >cli_cpu.txt
"$HOTSPUR" top "$A/profile?$sel" | strip >srv_cpu.txt
diff cli_cpu.txt srv_cpu.txt || fail "cpu top differs"
server_curl /dev/null -D hdr.txt "$A/profile?$sel" >/dev/null
grep -qi '^X-Hotspur-Profiles: 3' hdr.txt || fail "no X-Hotspur-Profiles: 3 header: $(cat hdr.txt)"
# tree and peek read the same URL too
"$HOTSPUR" tree --sample-index samples m.pb.gz | strip >cli_tree.txt
"$HOTSPUR" tree --sample-index samples "$A/profile?$sel" | strip >srv_tree.txt
diff cli_tree.txt srv_tree.txt || fail "tree differs"
# convert and flame (cmd_export.h's loader) read it too
"$HOTSPUR" convert --to collapsed --sample-index samples m.pb.gz | sort >cli.folded
"$HOTSPUR" convert --to collapsed --sample-index samples "$A/profile?$sel" | sort >srv.folded
diff cli.folded srv.folded || fail "convert --to collapsed differs"
"$HOTSPUR" flame -o flame.html "$A/profile?$sel" || fail "hotspur flame URL failed"
grep -q 'main' flame.html || fail "flame.html has no main"
pass "merged profile = hotspur merge (top, tree, convert, flame)"

# ---- ClickHouse: the rollup's answers are the samples' ----
if [ "${HS_QUERY_BACKEND:-sqlite}" = clickhouse ]; then
    # A second server on the same database that never reads the rollups
    # nor the series table: every answer byte for byte the same, for
    # ranges of whole hours (the rollups answer them) and ranges cut
    # inside hours (their ends come from the samples), unfiltered and by
    # version (the version rollup), label (the series table) and both;
    # and the series listing (the duplicate probe against a copy chosen
    # per id).
    main=("$SERVER_PID" "$SERVER_URL" "$SERVER_LOG" "$SERVER_DATA")
    server_start --store "clickhouse://127.0.0.1:$CH_H/hs_main?rollup=0&rollup_delay=0"
    RAW="$SERVER_URL/api/v1"
    raw_pid=$SERVER_PID
    hour=$((t0 / 3600 * 3600))
    for r in "from=0" "from=$hour" "from=$((hour - 3600))&until=$((hour + 7200))" "from=$((t0 - 1))" \
        "from=$hour&until=$((t0 + 61))" "from=$((t0 + 30))"; do
        for f in "" "&version=v2" "&label=instance=a" "&version=v2&label=instance=a" "&version=v1&version=v2"; do
            for ep in "flamegraph?sample_index=samples" "functions?sample_index=samples" "profile?agg=sum" \
                "series?sample_index=samples" "series?sample_index=samples&step=60" \
                "series?sample_index=samples&step=3600"; do
                # (a step given over the range from 1970: too many points)
                case "$r $ep" in "from=0 series"*step*) continue ;; esac
                a=$(server_curl roll.out "$A/${ep%%\?*}?$base&$r$f&${ep#*\?}")
                b=$(server_curl raw.out "$RAW/${ep%%\?*}?$base&$r$f&${ep#*\?}")
                [ "$a" = 200 ] && [ "$b" = 200 ] || fail "$ep $r$f: HTTP $a (rollup) and $b (samples only)"
                cmp -s roll.out raw.out || fail "$ep $r$f: the rollup's answer differs from the samples' ($(head -c 300 roll.out) vs $(head -c 300 raw.out))"
            done
        done
    done
    server_stop "$raw_pid" || fail "the rollup=0 server did not exit 0"
    SERVER_PID=${main[0]} SERVER_URL=${main[1]} SERVER_LOG=${main[2]} SERVER_DATA=${main[3]}
    pass "ClickHouse: rollup and samples-only answers identical (6 ranges x 5 filters, flame graph, functions, pprof)"
fi

# ---- functions = top's flat/cum; flame graph totals ----
# top_values FILE: "name flat cum" per function from a `hotspur top` table
top_values() { awk 'f && NF >= 6 { n = $6; for (i = 7; i <= NF; i++) n = n " " $i; print n, $1, $4 } /flat%/ { f = 1 }' "$1" | sort; }
fn_values() { json "$1" '"\n".join("%s %s %s" % (f["name"], f["self"], f["total"]) for f in d["functions"])' | sort; }
server_curl fn.json "$A/functions?$sel&sample_index=samples" >/dev/null
top_values cli.txt >want.txt
fn_values fn.json >got.txt
diff want.txt got.txt || fail "functions differ from hotspur top"
[ "$(json fn.json 'd["total"], d["matched"], d["profiles"]')" = "(57, 57, 3)" ] || fail "functions totals: $(cat fn.json)"
server_curl fg.json "$A/flamegraph?$sel&sample_index=samples" >/dev/null
python3 - fg.json <<'EOF' || fail "flame graph is inconsistent: $(cat fg.json)"
import json, sys
d = json.load(open(sys.argv[1]))
nodes, names = d["nodes"], d["names"]
assert nodes[0][0] == -1 and names[nodes[0][1]] == "all", nodes[0]
assert nodes[0][2] == d["total"] == d["matched"] == 57, d
assert sum(n[3] for n in nodes) == 57, "selfs do not add up"
kids = {}
for i, n in enumerate(nodes):
    if i:
        assert n[0] < i, "not preorder"
        kids.setdefault(n[0], []).append(n)
for p, ks in kids.items():
    assert nodes[p][2] == nodes[p][3] + sum(k[2] for k in ks), ("total != self + children", p)
    assert [k[2] for k in ks] == sorted((k[2] for k in ks), reverse=True), "siblings not sorted"
# main;h;k 20 + main;f;k 2: k under h and under f
paths = {}
def path(i):
    return (path(nodes[i][0]) + ";" if nodes[i][0] > 0 else "") + names[nodes[i][1]] if i else ""
for i in range(1, len(nodes)):
    paths[path(i)] = nodes[i][2:]
assert paths["main;h;k"] == [20, 20], paths
assert paths["main;f;k"] == [2, 2], paths
assert paths["main;f;f"] == [6, 6], paths
assert paths["main;f"] == [21, 13], paths
EOF
# gzip for clients that take it (answers over 1 KiB): the same JSON
for i in $(seq 1 200); do echo "$i $M;fn_$((i % 17))@w.c:$i;leaf_$i@w.c:$((i + 1000))"; done | mkprof wide.pb.gz
st=$(server_curl up.json --data-binary @wide.pb.gz "$A/ingest?service=wide&type=cpu&from=$t0")
[ "$st" = 200 ] || fail "upload wide: $st $(cat up.json)"
wide="service=wide&type=cpu&from=$((t0 - 1))"
curl -s -D gz.hdr -H 'Accept-Encoding: gzip' -o fg.gz "$A/flamegraph?$wide"
server_curl fgw.json "$A/flamegraph?$wide" >/dev/null
grep -qi '^Content-Encoding: gzip' gz.hdr || fail "no gzip for Accept-Encoding: gzip: $(cat gz.hdr)"
gunzip -c fg.gz | cmp - fgw.json || fail "the gzipped flame graph is not the same JSON"
[ "$(stat -c %s fg.gz)" -lt "$(stat -c %s fgw.json)" ] || fail "gzip did not shrink the answer"
pass "functions = top; flame graph totals"

# ---- selection: version, label, time; avg; weight ----
total_of() { server_curl t.json "$A/functions?$base&sample_index=samples&$1" >/dev/null; json t.json "d[\"total\"], d[\"profiles\"]"; }
[ "$(total_of version=v1)" = "(17, 1)" ] || fail "version=v1: $(cat t.json)"
[ "$(total_of version=v2)" = "(40, 2)" ] || fail "version=v2: $(cat t.json)"
[ "$(total_of 'version=v1&version=v2')" = "(57, 3)" ] || fail "both versions: $(cat t.json)"
[ "$(total_of label=instance=a)" = "(47, 2)" ] || fail "instance=a: $(cat t.json)"
[ "$(total_of 'label=instance=a&version=v2')" = "(30, 1)" ] || fail "instance=a, v2: $(cat t.json)"
[ "$(total_of "from=$((t0 + 30))&until=$((t0 + 90))")" = "(10, 1)" ] || fail "time range: $(cat t.json)"
[ "$(total_of "from=$((t0 + 30))")" = "(40, 2)" ] || fail "from only: $(cat t.json)"
ago=$(($(date +%s) - t0 - 30)) # now-${ago}s is t0 + 30 s, give or take the second this takes
[ "$(total_of "from=now-${ago}s")" = "(40, 2)" ] || fail "from=now-${ago}s: $(cat t.json)"
[ "$(total_of "from=now-1h&until=now-${ago}s")" = "(17, 1)" ] || fail "until=now-${ago}s: $(cat t.json)"
"$HOTSPUR" top --sample-index samples a.pb.gz | strip >a.txt
"$HOTSPUR" top --sample-index samples "$A/profile?$sel&version=v1" | strip >a_srv.txt
diff a.txt a_srv.txt || fail "version=v1 is not profile a"
# avg = sum / 3, per function
server_curl avg.json "$A/functions?$sel&sample_index=samples&agg=avg" >/dev/null
python3 - fn.json avg.json <<'EOF' || fail "avg is not sum/3: $(cat avg.json)"
import json, sys
s, a = (json.load(open(f)) for f in sys.argv[1:])
assert a["agg"] == "avg" and a["profiles"] == 3 and abs(a["total"] - 57 / 3) < 1e-9
ss = {f["name"]: f for f in s["functions"]}
for f in a["functions"]:
    for k in ("self", "total"):
        assert abs(f[k] - ss[f["name"]][k] / 3) < 1e-9, (f, ss[f["name"]])
EOF
# weight: the top 34% of 3 profiles by total = 2 profiles, c (30) and a (17)
[ "$(total_of weight=34)" = "(47, 2)" ] || fail "weight=34: $(cat t.json)"
[ "$(total_of weight=10)" = "(30, 1)" ] || fail "weight=10: $(cat t.json)"
server_curl pl.json "$A/profiles?$sel&sample_index=samples" >/dev/null
[ "$(json pl.json 'sorted(p["total"] for p in d["profiles"])')" = "[10, 17, 30]" ] || fail "profiles: $(cat pl.json)"
server_curl se.json "$A/series?$sel&sample_index=samples&step=60" >/dev/null
[ "$(json se.json 'sum(p[1] for p in d["points"]), sum(p[2] for p in d["points"])')" = "(57, 3)" ] ||
    fail "series: $(cat se.json)"
pass "version, label, time, avg, weight, profiles, series"

# ---- diff: base_X overrides X ----
# 2 profiles against 1: per profile unless agg=sum
server_curl d.json "$A/diff?$sel&sample_index=samples&version=v2&base_version=v1" >/dev/null
[ "$(json d.json 'd["agg"], d["new"]["total"], d["new"]["profiles"], d["base"]["total"], d["base"]["profiles"]')" = "('avg', 20, 2, 17, 1)" ] ||
    fail "diff of 2 profiles against 1 without agg: $(cat d.json)"
server_curl d.json "$A/diff?$sel&sample_index=samples&version=v2&base_version=v1&agg=sum" >/dev/null
[ "$(json d.json 'd["agg"], d["new"]["total"], d["new"]["profiles"], d["base"]["total"], d["base"]["profiles"]')" = "('sum', 40, 2, 17, 1)" ] ||
    fail "diff totals: $(cat d.json)"
"$HOTSPUR" merge b.pb.gz c.pb.gz -o bc.pb.gz
"$HOTSPUR" top --sample-index samples bc.pb.gz | strip >bc.txt
python3 - d.json a.txt bc.txt <<'EOF' || fail "diff functions differ from top of each side"
import json, sys
d = json.load(open(sys.argv[1]))
def top(path):
    out, on = {}, False
    for line in open(path):
        w = line.split()
        if on and len(w) >= 6:
            out[" ".join(w[5:])] = (int(w[0]), int(w[3]))
        on = on or "flat%" in line
    return out
base, new = top(sys.argv[2]), top(sys.argv[3])
for f in d["functions"]:
    assert (f["self_new"], f["total_new"]) == new.get(f["name"], (0, 0)), f
    assert (f["self_base"], f["total_base"]) == base.get(f["name"], (0, 0)), f
assert {f["name"] for f in d["functions"]} == set(base) | set(new)
root = d["nodes"][0]
assert root[2] == 40 and root[4] == 17, root
EOF
# hotspur diff of two URLs = hotspur diff of the files
"$HOTSPUR" diff --sample-index samples a.pb.gz bc.pb.gz | strip >cli_diff.txt
"$HOTSPUR" diff --sample-index samples "$A/profile?$sel&version=v1" "$A/profile?$sel&version=v2" | strip >srv_diff.txt
diff cli_diff.txt srv_diff.txt || fail "hotspur diff URL URL differs from hotspur diff FILE FILE"
pass "diff"

# ---- filters mean what they mean to hotspur top ----
for filt in "focus=^h$:--focus=^h$" "ignore=^k$:--ignore=^k$" "hide=^f$:--hide=^f$" \
    "show_from=^f$:--show-from=^f$" "focus=lib.c:--focus=lib.c"; do
    q=${filt%%:*} opt=${filt#*:}
    "$HOTSPUR" top --sample-index samples "$opt" m.pb.gz 2>/dev/null | strip >cf.txt
    "$HOTSPUR" top --sample-index samples "$opt" "$A/profile?$sel" 2>/dev/null | strip >sf.txt
    diff cf.txt sf.txt || fail "top $opt URL differs from top $opt FILE"
    server_curl ff.json "$A/functions?$sel&sample_index=samples&$q" >/dev/null
    top_values cf.txt >want.txt
    fn_values ff.json >got.txt
    diff want.txt got.txt || fail "functions?$q differs from hotspur top $opt: $(cat ff.json)"
    kept=$(sed -n 's/^Showing nodes accounting for \([0-9]*\),.*/\1/p' cf.txt)
    [ "$(json ff.json 'd["matched"], d["unfiltered"], d["total"]')" = "($kept, 57, 57)" ] ||
        fail "functions?$q: matched/unfiltered: $(cat ff.json) (top: $kept)"
done
# the filtered pprof holds what the filter kept
"$HOTSPUR" top --sample-index samples "$A/profile?$sel&focus=^h$" | strip >pf.txt
grep -q "Showing nodes accounting for 27, 100% of 27 total" pf.txt || fail "profile?focus=^h$: $(cat pf.txt)"
pass "filters = the CLI's"

# ---- go tool pprof reads the URL ----
export PPROF_TMPDIR="$TMP/pprof" HOME="$TMP"
go tool pprof -top -sample_index=samples "$A/profile?$sel" >go.txt 2>go.err || fail "go tool pprof: $(cat go.err)"
grep -q "Showing nodes accounting for 57, 100% of 57 total" go.txt || fail "go tool pprof total: $(cat go.txt)"
for fn in main f g h k; do
    go_cum=$(awk -v f="$fn" '$6 == f { print $1, $4 }' go.txt)
    our=$(awk -v f="$fn" '$6 == f { print $1, $4 }' srv.txt)
    [ "$go_cum" = "$our" ] || fail "go tool pprof says $fn: '$go_cum', hotspur top: '$our'"
done
pass "go tool pprof -top URL"

# ---- source: only under --source-path ----
server_curl src.json "$A/source?$sel&function=f" >/dev/null
[ "$(json src.json 'd["files"][0]["found"]')" = False ] || fail "src/app.c is not under the source path: $(cat src.json)"
# a profile whose files lead out of the source path, by .. and absolute
mkprof evil.pb.gz <<EOF
5 $M;up@../../../../../../../../../etc/passwd:1
5 $M;abs@/etc/passwd:1
5 $M;rel@lib.sh:3
EOF
upload evil.pb.gz evil a $((t0 + 180))
for fn in up abs; do
    st=$(server_curl src.json "$A/source?$sel&version=evil&function=$fn")
    [ "$st" = 200 ] || fail "source $fn: $st $(cat src.json)"
    [ "$(json src.json 'd["files"][0]["found"]')" = False ] || fail "source $fn served a file outside the path: $(cat src.json)"
    grep -q 'root:' src.json && fail "/etc/passwd leaked: $(cat src.json)"
done
st=$(server_curl src.json "$A/source?$sel&version=evil&function=rel")
[ "$st" = 200 ] && [ "$(json src.json 'd["files"][0]["found"]')" = True ] || fail "lib.sh under the source path not found: $(cat src.json)"
[ "$(json src.json '[l["text"] for l in d["files"][0]["lines"] if l["line"] == 3][0]')" = "$(sed -n 3p "$SRC/tests/integration/lib.sh")" ] ||
    fail "line 3 of lib.sh is not served as it is: $(cat src.json)"
pass "source under --source-path only"

# ---- concurrent queries and uploads (bounded: 80 queries, 20 uploads) ----
for i in $(seq 1 80); do
    case $((i % 4)) in
    0) echo "$A/flamegraph?$sel&sample_index=samples" ;;
    1) echo "$A/functions?$sel&sample_index=samples&focus=f" ;;
    2) echo "$A/diff?$sel&version=v2&base_version=v1" ;;
    3) echo "$A/profile?$sel" ;;
    esac
done >urls.txt
seq 1 20 | xargs -P 4 -I{} curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 --data-binary @b.pb.gz \
    "$A/ingest?service=load&type=cpu&version=v{}&from=$t0" >up_codes.txt &
uploads=$!
xargs -P 8 -n 1 curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 <urls.txt >q_codes.txt
wait $uploads
[ "$(sort -u q_codes.txt)" = 200 ] || fail "concurrent queries: $(sort q_codes.txt | uniq -c)"
[ "$(sort -u up_codes.txt)" = 200 ] || fail "concurrent uploads: $(sort up_codes.txt | uniq -c)"
[ "$(wc -l <q_codes.txt)" = 80 ] && [ "$(wc -l <up_codes.txt)" = 20 ] || fail "missing answers"
server_curl t.json "$A/functions?service=load&type=cpu&sample_index=samples&from=$((t0 - 1))" >/dev/null
[ "$(json t.json 'd["total"], d["profiles"]')" = "(200, 20)" ] || fail "20 concurrent uploads of b: $(cat t.json)"
"$HOTSPUR" top --sample-index samples "$A/profile?$sel&version=v1&version=v2" | strip >again.txt
diff srv.txt again.txt || fail "the merged profile changed under load"
pass "80 concurrent queries with 20 uploads"

# ---- refusals; the server lives on ----
st=$(server_curl e.json "$A/functions?$sel&colour=blue")
[ "$st" = 400 ] && grep -q "colour" e.json || fail "unknown parameter: $st $(cat e.json)"
st=$(server_curl e.json "$A/functions?$sel&&sample_index=samples&")
[ "$st" = 200 ] || fail "a stray '&' is not ignored: $st $(cat e.json)"
st=$(server_curl e.json "$A/functions?$sel&focus=%28")
[ "$st" = 400 ] || fail "bad regex: $st $(cat e.json)"
st=$(server_curl e.json "$A/functions?service=app&type=cpu&from=tomorrow")
[ "$st" = 400 ] || fail "bad time: $st $(cat e.json)"
st=$(server_curl e.json "$A/nosuch")
[ "$st" = 404 ] || fail "unknown endpoint: $st"
st=$(server_curl e.json -X PUT "$A/services")
[ "$st" = 405 ] || fail "PUT: $st"
head -c 4096 /dev/urandom >junk.bin
st=$(server_curl e.json --data-binary @junk.bin "$A/ingest?service=app&type=cpu")
[ "$st" = 400 ] || fail "junk upload: $st $(cat e.json)"
st=$(server_curl e.json -H "Host: attacker.example" "$A/services")
[ "$st" = 403 ] || fail "foreign Host header on a loopback server: $st"
server_alive || fail "the server died after bad requests"
st=$(server_curl e.json "$A/services")
[ "$st" = 200 ] && grep -q '"app"' e.json || fail "the server does not answer after bad requests: $st"
server_stop || fail "hotspur serve did not exit 0 on SIGTERM"
pass "400/404/405/403, server alive"

# ---- token and body limit ----
# shellcheck disable=SC2046
server_start $(store_args tok) --token s3cret --max-body 2k
A="$SERVER_URL/api/v1"
st=$(server_curl e.json "$A/services")
[ "$st" = 401 ] || fail "no token: $st"
st=$(server_curl e.json "$SERVER_URL/healthz")
[ "$st" = 200 ] && grep -q '"ok"' e.json || fail "/healthz (no token needed): $st $(cat e.json)"
st=$(server_curl e.json "$A/stats")
[ "$st" = 401 ] || fail "/api/v1/stats without the token: $st"
st=$(server_curl e.json -H "Authorization: Bearer wrong" "$A/services")
[ "$st" = 401 ] || fail "wrong token: $st"
st=$(server_curl e.json -H "Authorization: Bearer s3cret" "$A/services")
[ "$st" = 200 ] || fail "right token: $st"
st=$(server_curl e.json --data-binary @a.pb.gz "$A/ingest?service=app&type=cpu")
[ "$st" = 401 ] || fail "upload without token: $st"
st=$(server_curl e.json -H "Authorization: Bearer s3cret" --data-binary @a.pb.gz "$A/ingest?service=app&type=cpu")
[ "$st" = 200 ] || fail "upload with token: $st $(cat e.json)"
st=$(server_curl e.json -H "Authorization: Bearer s3cret" "$A/stats")
[ "$st" = 200 ] && [ "$(json e.json 'd["store"]["profiles"]')" = 1 ] || fail "/api/v1/stats: $st $(cat e.json)"
st=$(server_curl e.json -H "Authorization: Bearer s3cret" --data-binary @junk.bin --data-binary @junk.bin "$A/ingest?service=app&type=cpu")
[ "$st" = 413 ] && grep -q "limit" e.json || fail "oversize body: $st $(cat e.json)"
st=$(server_curl e.json -H "Authorization: Bearer s3cret" -H "Transfer-Encoding: chunked" --data-binary @junk.bin "$A/ingest?service=app&type=cpu")
[ "$st" = 413 ] || fail "oversize chunked body: $st $(cat e.json)"
set +e
"$HOTSPUR" top "$A/profile?service=app&type=cpu&from=0" >/dev/null 2>err.txt
rc=$?
set -e
[ $rc = 2 ] && grep -q "HTTP 401" err.txt || fail "hotspur top without HOTSPUR_TOKEN: rc $rc $(cat err.txt)"
HOTSPUR_TOKEN=s3cret "$HOTSPUR" top --sample-index samples "$A/profile?service=app&type=cpu&from=0" | strip >tok.txt ||
    fail "hotspur top with HOTSPUR_TOKEN failed"
diff a.txt tok.txt || fail "top through the token differs"
server_alive || fail "the server died"
server_stop || fail "hotspur serve did not exit 0 on SIGTERM"
pass "token 401, body 413, HOTSPUR_TOKEN"

# ---- retention: at start, profiles older than --retention are deleted ----
# shellcheck disable=SC2046
server_start $(store_args keep) --retention 0
A="$SERVER_URL/api/v1"
upload a.pb.gz old a $((now - 3 * 86400))
upload b.pb.gz new a $((now - 600))
[ "$(total_of from=now-7d)" = "(27, 2)" ] || fail "before retention: $(cat t.json)"
server_stop
# shellcheck disable=SC2046
server_start $(store_args keep) --retention 2d
A="$SERVER_URL/api/v1"
for ((i = 0; i < 50; i++)); do # retention runs on its own thread at start
    [ "$(total_of from=now-7d)" = "(10, 1)" ] && break
    sleep 0.1
done
[ "$(total_of from=now-7d)" = "(10, 1)" ] || fail "--retention 2d kept the 3-day-old profile: $(cat t.json)"
server_stop
pass "retention"
