# agent_dlopen.sh — symbols of a library loaded with dlopen are resolved,
# also when the program unloads it with dlclose before exiting.
source "$(dirname "$0")/lib.sh"

for mode in keep close; do
    "$HOTSPUR" record -o "$mode.pb.gz" -- "$PROGS/dlopener" "$PROGS/dlib.so" "$mode" 2>/dev/null
    "$HOTSPUR" top "$mode.pb.gz" > "$mode.txt"
    grep -q ' dlib_burn$' "$mode.txt" || fail "$mode: dlib_burn not symbolized: $(cat "$mode.txt")"
    grep -q ' main_burn$' "$mode.txt" || fail "$mode: main_burn missing"
    grep -q '0x[0-9a-f]* \[' "$mode.txt" && fail "$mode: unsymbolized addresses: $(cat "$mode.txt")"
    echo "$mode: ok"
done
pass "dlopen'ed and dlclose'd libraries are symbolized"
