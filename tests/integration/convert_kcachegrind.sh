# convert_kcachegrind.sh — KCachegrind itself (the GUI, Debian's
# kcachegrind, in a real window under Xvfb) reads hotspur's callgrind export
# fully: what it displays is read back through the accessibility bus
# (kcachegrind_view.py, AT-SPI) and checked against `hotspur top` on the same
# profile:
#  - it loads the file without one loader warning or error on stderr (a
#    control file with a broken line shows that such warnings are seen);
#  - the status bar's "Total cpu Cost" equals top's total (nanoseconds);
#  - every function's Self and Incl. percentages in its Flat Profile equal
#    top's flat% and cum% (both print two decimals);
#  - the Location column groups the program's functions under its object
#    (the ob= lines) and source file;
#  - the same with --addresses (positions "instr line", KCachegrind's
#    machine-code view).
# Profile: cpu_split (burn_a 60%, burn_b 30%, burn_c 10% by construction),
# recorded live by our agent.
source "$(dirname "$0")/lib.sh"
for t in kcachegrind xvfb-run xauth dbus-run-session; do
    command -v $t > /dev/null || fail "$t is not installed (scripts/install-deps)"
done
/usr/bin/python3 -c 'import pyatspi' 2> /dev/null || fail "Debian's python3-pyatspi is not installed (scripts/install-deps)"
VIEW=$SRC/tests/integration/kcachegrind_view.py
mkdir -p home xdg
chmod 700 xdg
printf '[TipOfDay]\nRunOnStart=false\n' > kcachegrindrc
mkdir -p home/.config && cp kcachegrindrc home/.config/

# run_kc FILE OUT ERR: start KCachegrind on FILE in its own X server and
# session bus; OUT gets what it displays (JSON), ERR its stderr. The agent's
# (or ASan's) preload is not KCachegrind's business.
run_kc() {
    env -u LD_PRELOAD HOME="$TMP/home" XDG_RUNTIME_DIR="$TMP/xdg" \
        QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 QT_ACCESSIBILITY=1 QT_LOGGING_RULES='*.debug=false' \
        timeout 150 xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- bash -c '
            kcachegrind "$1" > /dev/null 2> "$3" & kc=$!
            /usr/bin/python3 "$4" 90 > "$2"; rc=$?
            kill $kc 2> /dev/null; wait $kc 2> /dev/null
            exit $rc' _ "$1" "$2" "$3" "$VIEW" 2> "$3.session" ||
        fail "KCachegrind did not show $1: $(tail -3 "$3.session" "$3")"
}
# loader_warnings ERR: the lines KCachegrind's loader wrote (qWarning /
# qCritical: 'Loading "FILE" : LINE :  "MESSAGE"').
loader_warnings() { grep '^Loading ' "$1" || true; }

"$HOTSPUR" record -o rec.pb.gz -- "$PROGS/cpu_split" single 1000 2> /dev/null
# top's table at --nodefraction 0, in nanoseconds: name<TAB>flat%<TAB>cum%
"$HOTSPUR" top --sample-index cpu --nodefraction 0 --unit ns rec.pb.gz > top.txt
total_ns=$(sed -n 's/.* of \([0-9]*\)ns total.*/\1/p' top.txt)
[ -n "$total_ns" ] && [ "$total_ns" -gt 0 ] || fail "no total in nanoseconds from top: $(head -3 top.txt)"
awk '/^ *flat  flat%/ { on = 1; next }
     on { name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, "", name)
          f = $2; c = $5; sub(/%$/, "", f); sub(/%$/, "", c); print name "\t" f "\t" c }' top.txt |
    LC_ALL=C sort > top.flat
grep -q '^burn_a	' top.flat || fail "top does not show burn_a: $(cat top.txt)"

for mode in lines addresses; do
    opt=""
    [ $mode = addresses ] && opt=--addresses
    "$HOTSPUR" convert rec.pb.gz --sample-index cpu --to callgrind $opt -o $mode.callgrind
    run_kc "$TMP/$mode.callgrind" $mode.json $mode.err
    w=$(loader_warnings $mode.err)
    [ -z "$w" ] || fail "$mode: KCachegrind's loader warns: $(echo "$w" | head -3)"
    /usr/bin/python3 - $mode.json "$total_ns" top.flat <<'PY' || fail "$mode: KCachegrind shows other figures than top"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["total"] == int(sys.argv[2]), ("total", d["total"], sys.argv[2], d["status"])
assert "Total cpu Cost" in d["status"], d["status"]
# top names an inlined copy "f (inline)" as pprof does; callgrind has one
# function f: compare shares where top has a single row for f
top, rows = {}, {}
for line in open(sys.argv[3]):
    name, flat, cum = line.rstrip("\n").split("\t")
    base = name[:-len(" (inline)")] if name.endswith(" (inline)") else name
    rows[base] = rows.get(base, 0) + 1
    top[base] = (float(flat), float(cum))
kc = {r["function"]: r for r in d["flat"]}
assert set(kc) == set(top), ("functions", sorted(set(kc) ^ set(top)))
for name, (flat, cum) in top.items():
    if rows[name] > 1:
        continue
    r = kc[name]
    # both round to two decimals; allow one unit in the last place
    assert abs(float(r["self"]) - flat) <= 0.011, (name, "self", r["self"], flat)
    assert abs(float(r["incl"]) - cum) <= 0.011, (name, "incl", r["incl"], cum)
    assert r["called"] != "", (name, "no Called value")
for name in ("burn_a", "burn_b", "burn_c", "main"):
    assert kc[name]["location"] == "cpu_split: cpu_split.c", (name, kc[name]["location"])
shares = {n: float(kc[n]["self"]) for n in ("burn_a", "burn_b", "burn_c")}
assert 50 < shares["burn_a"] < 70 and 20 < shares["burn_b"] < 40 and 5 < shares["burn_c"] < 15, shares
print("kcachegrind:", d["status"], shares)
PY
done

# control: a broken line is reported by the loader, so the check above can fail
awk 'NR == 1 { print; next } !done && /^fn=/ { print "fn=(999999)"; done = 1 } { print }' \
    lines.callgrind > broken.callgrind
run_kc "$TMP/broken.callgrind" broken.json broken.err
[ -n "$(loader_warnings broken.err)" ] || fail "control: KCachegrind's loader warned nothing on a broken file: $(cat broken.err)"
pass "KCachegrind reads the callgrind export (default and --addresses) without warnings; totals and per-function shares equal top's"
