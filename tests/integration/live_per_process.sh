# live_per_process.sh — `hotspur record -a --per-process`: one file per
# process, named OUT.NAME.PID.pb.gz, each with that process's samples only
# (its pid label, its functions) and only its own tables (no mapping of
# another program).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
# names of this run's own: two programs, told apart by file name
A_NAME=ppa$$
B_NAME=ppb$$
cp "$PROGS/live_target" "$A_NAME"
cp "$PROGS/live_target" "$B_NAME"
"./$A_NAME" split & A=$!
PIDS+=($A)
"./$B_NAME" late 0 & B=$!
PIDS+=($B)
sleep 0.3
mkdir out
"$HOTSPUR" record -a --per-process -F 199 --duration 3 -o out/host.pb.gz 2>rec.err || fail "record: $(cat rec.err)"
cat rec.err
grep -q "files out/host.NAME.PID.pb.gz" rec.err || fail "no file count: $(cat rec.err)"
[ ! -e out/host.pb.gz ] || fail "--per-process also wrote the whole profile"
FA=out/host.$A_NAME.$A.pb.gz
FB=out/host.$B_NAME.$B.pb.gz
[ -s "$FA" ] && [ -s "$FB" ] || fail "missing per-process files: $(ls out | head -20)"
n=$(ls out | wc -l)
[ "$n" -ge 3 ] || fail "only $n files for every process of the host"
"$HOTSPUR" tags "$FA" >tags.a
grep -A3 '^ *pid:' tags.a | grep -q "100%): $A\$" || fail "$FA holds other pids: $(cat tags.a)"
"$HOTSPUR" top "$FA" | grep -q ' burn_b$' || fail "$FA lacks burn_b (split)"
"$HOTSPUR" top "$FB" | grep -q ' burn_late$' || fail "$FB lacks burn_late"
"$HOTSPUR" top "$FB" | grep -q ' burn_b$' && fail "$A_NAME's burn_b leaked into $FB"
"$HOTSPUR" raw "$FA" | sed -n '/^Mappings/,$p' >maps.a
grep -q "/$A_NAME " maps.a || fail "$FA lacks its program's mapping: $(cat maps.a)"
grep -q "/$B_NAME " maps.a && fail "$FA carries $B_NAME's mapping: $(cat maps.a)"
pass "record -a --per-process: one file per process, own samples and tables ($n files)"
