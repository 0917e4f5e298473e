# heap_real.sh — real programs under `record --heap` (sampled and exact):
# sort of a 300k-line file, python3 doing dict/list/string work, sqlite3
# running a small script, and each of them failing on purpose. Output and
# exit status must be byte-identical to a run without the profiler, and the
# profile valid with allocations in it (libc's and the interpreters' own
# allocations are interposed: nothing is linked against us).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/heap_lib.sh"

awk 'BEGIN { srand(7); for (i = 0; i < 300000; i++) printf "%08d %s line %d\n", int(rand() * 1e8), (i % 7 ? "x" : "yy"), i }' > big.txt
cat > work.py <<'PY'
import collections, json
d = collections.Counter()
rows = []
for i in range(200000):
    k = "key%d" % (i % 5003)
    d[k] += i
    rows.append({"i": i, "s": str(i) * (i % 5)})
text = json.dumps(rows[::97])
print(len(d), sum(d.values()), len(text), sorted(d.items())[:3])
PY
cat > script.sql <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t(name, v) SELECT printf('name%05d', x % 777), x * 0.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT name, count(*), sum(v) FROM t GROUP BY name ORDER BY sum(v) DESC LIMIT 5;
SELECT count(DISTINCT name), max(v) FROM t;
SQL

n=0
run_case() { # NAME CMD...: plain vs under record --heap, sampled and exact
    local name=$1 plain_rc=0 rc mode
    shift
    "$@" > "$name.plain.out" 2> "$name.plain.err" || plain_rc=$?
    for mode in sampled exact; do
        local rate=()
        [ $mode = exact ] && rate=(--heap-rate 1)
        rc=0
        "$HOTSPUR" record --heap "${rate[@]}" -o "$name.$mode.pb.gz" -- "$@" > "$name.$mode.out" 2> "$name.$mode.err" || rc=$?
        [ "$rc" = "$plain_rc" ] || fail "$name ($mode): exit status $rc, plain run $plain_rc: $(cat "$name.$mode.err")"
        cmp -s "$name.plain.out" "$name.$mode.out" || fail "$name ($mode): stdout differs from the plain run"
        # the program's own stderr comes first, then hotspur's lines
        cmp -s "$name.plain.err" <(grep -v '^hotspur: ' "$name.$mode.err") ||
            fail "$name ($mode): stderr differs: $(diff "$name.plain.err" "$name.$mode.err")"
        [ -s "$name.$mode.pb.gz" ] || fail "$name ($mode): no profile"
        "$HOTSPUR" top "$name.$mode.pb.gz" > /dev/null || fail "$name ($mode): not a valid profile"
        # (a short run may have no sample at 512 KiB; exact mode has them all)
        if [ $mode = exact ]; then
            [ "$(total_value "$name.$mode.pb.gz" alloc_objects)" -gt 0 ] || fail "$name (exact): no allocations in the profile"
        fi
        n=$((n + 1))
    done
    echo "$name: exit $plain_rc, output identical sampled and exact"
}

run_case sort sort -k1,1 -k3 big.txt
run_case sort-missing sort no-such-file.txt
run_case python python3 work.py
run_case python-error python3 -c 'import sys; x = [str(i) for i in range(10000)]; sys.exit("boom: %d" % len(x))'
run_case sqlite sqlite3 :memory: -init /dev/null -batch ".read script.sql"
run_case sqlite-error sqlite3 -batch -bail :memory: "CREATE TABLE a(x); SELECT * FROM missing;"
pass "real programs: $n runs under record --heap with identical output and status"
