# live_twins.sh — two processes with different files at the same address
# (two non-PIE builds whose busy function, twin_spin_a or twin_spin_b, sits
# at the same address) in one profile, by `record -p A,B` and `record -a`:
# every frame is named from its own process's file, so process A's samples
# hold twin_spin_a and never twin_spin_b, and B's the reverse. Naming by
# address over every process's mappings named one from the other's file.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
# the premise: the same address, two names
aa=$(nm "$PROGS/live_twin_a" | awk '$3 == "twin_spin_a" { print $1 }')
ab=$(nm "$PROGS/live_twin_b" | awk '$3 == "twin_spin_b" { print $1 }')
[ -n "$aa" ] && [ "$aa" = "$ab" ] || fail "twin_spin_a at '$aa', twin_spin_b at '$ab': not the same address"
# names of this run's own, so that -a tells them from other runs' twins
A_NAME=twa$$
B_NAME=twb$$
cp "$PROGS/live_twin_a" "$A_NAME"
cp "$PROGS/live_twin_b" "$B_NAME"
"./$A_NAME" 60 & A=$!
PIDS+=($A)
"./$B_NAME" 60 & B=$!
PIDS+=($B)
sleep 0.3
# check FILE MODE: each process's samples name only its own function
check() {
    local f=$1 mode=$2 own other n
    for who in A B; do
        if [ $who = A ]; then own=twin_spin_a other=twin_spin_b pid=$A; else own=twin_spin_b other=twin_spin_a pid=$B; fi
        "$HOTSPUR" top --tagfocus "pid=$pid" "$f" >"top.$mode.$who" 2>&1 || fail "$mode: top: $(cat "top.$mode.$who")"
        grep -q " $own\$" "top.$mode.$who" || fail "$mode: process $who lacks $own: $(cat "top.$mode.$who")"
        if grep -q " $other\$" "top.$mode.$who"; then
            fail "$mode: process $who's frames named $other, from the other process's file: $(cat "top.$mode.$who")"
        fi
    done
}
"$HOTSPUR" record -p "$A,$B" -F 199 --duration 2 -o p.pb.gz 2>rec.err || fail "record -p: $(cat rec.err)"
check p.pb.gz "record -p"
"$HOTSPUR" record -a -F 199 --duration 2 -o a.pb.gz 2>rec.err || fail "record -a: $(cat rec.err)"
check a.pb.gz "record -a"
pass "two non-PIE programs at the same address: each process's frames named from its own file (record -p and -a)"
