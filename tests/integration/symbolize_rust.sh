# symbolize_rust.sh — Rust symbols are demangled as rustfilt and perf do
# (issue 13): legacy names lose their ::h<hash> and their $LT$-style
# escapes, v0 (_R...) names are decoded, .llvm.N suffixes are dropped.
source "$(dirname "$0")/lib.sh"

HOTSPUR_OUTPUT="$TMP/r.pb.gz" LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/rustnames" || fail "rustnames failed"
"$HOTSPUR" top -n 20 r.pb.gz | tee top.txt
for name in 'core::fmt::write' '<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop' 'mycrate::example' 'hello::main'; do
    grep -qF " $name" top.txt || fail "no '$name' in the report"
done
grep -q '17h[0-9a-f]\{16\}\|::h[0-9a-f]\{16\}\|\$LT\$\|_RNv\|\.llvm\.' top.txt && fail "a mangled Rust name is left"
pass "Rust names demangled"
