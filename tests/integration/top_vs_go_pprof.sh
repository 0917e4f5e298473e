# top_vs_go_pprof.sh — `hotspur top` against `go tool pprof -top` on real Go
# profiles. A Go program (built here with Debian's go, offline) burns CPU in
# known functions (burnA 750ms > burnB 450ms > burnC 250ms, with recursion)
# and writes a CPU and a heap profile with runtime/pprof. For several option
# sets, both tools' tables must agree exactly: same functions in the same
# order, same flat/flat%/sum%/cum/cum% strings, same "Showing ..." totals.
# Then: raw (un-gzipped) input, and one-line errors with exit status 2.
source "$(dirname "$0")/lib.sh"

command -v go >/dev/null || fail "go (Debian golang-go) is not installed"
export GOCACHE="$TMP/gocache" GOPATH="$TMP/gopath" GOFLAGS=-mod=mod HOME="$TMP" GO111MODULE=on
export GOTOOLCHAIN=local GOPROXY=off TZ=UTC

mkdir -p "$TMP/burn"
cat > "$TMP/burn/go.mod" <<'EOF'
module hotspurtest

go 1.19
EOF
cat > "$TMP/burn/main.go" <<'EOF'
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var sink uint64
var keep [][]byte

//go:noinline
// spin does a fixed amount of work (not a fixed time), so the CPU split
// between its callers is known whatever the machine's load.
func spin(units int) uint64 {
	var x uint64 = 1
	for u := 0; u < units; u++ {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

//go:noinline
func burnA() { sink += spin(600000) }

//go:noinline
func burnB() { sink += spin(360000) }

//go:noinline
func burnC() { sink += spin(120000); sink += recurse(3) }

//go:noinline
func recurse(n int) uint64 {
	if n == 0 {
		return spin(80000)
	}
	return recurse(n-1) + 1
}

//go:noinline
func allocBig() {
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

//go:noinline
func allocSmall() {
	for i := 0; i < 20000; i++ {
		b := make([]byte, 512)
		if i%10 == 0 {
			keep = append(keep, b)
		}
	}
}

func main() {
	runtime.MemProfileRate = 4096
	cpu, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		panic(err)
	}
	burnA()
	burnB()
	burnC()
	pprof.StopCPUProfile()
	cpu.Close()
	allocBig()
	allocSmall()
	runtime.GC()
	heap, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(heap); err != nil {
		panic(err)
	}
	heap.Close()
}
EOF
(cd "$TMP/burn" && go build -o burn .) || fail "go build failed"
"$TMP/burn/burn" "$TMP/cpu.pb.gz" "$TMP/heap.pb.gz" || fail "the Go program failed"

# table FILE: the report from the "Showing nodes" line on (rows + totals)
table() { sed -n '/^Showing nodes accounting for/,$p' "$1"; }
# rows FILE: just the function rows of a table
rows() { awk '$1 != "flat" && $2 ~ /%$/ && NF >= 6' "$1"; }

# compare NAME PROFILE "GO_FLAGS" "HOTSPUR_FLAGS"
compare() {
    local name=$1 prof=$2 gflags=$3 hflags=$4
    # shellcheck disable=SC2086
    go tool pprof -top $gflags "$TMP/burn/burn" "$prof" > "$TMP/$name.go.txt" 2>/dev/null ||
        fail "$name: go tool pprof failed"
    # shellcheck disable=SC2086
    "$HOTSPUR" top $hflags "$prof" > "$TMP/$name.hs.txt" || fail "$name: hotspur top failed"
    table "$TMP/$name.go.txt" > "$TMP/$name.go.table"
    table "$TMP/$name.hs.txt" > "$TMP/$name.hs.table"
    [ "$(wc -l < "$TMP/$name.go.table")" -gt 3 ] || fail "$name: go tool pprof printed no table"
    if ! diff -u "$TMP/$name.go.table" "$TMP/$name.hs.table"; then
        fail "$name: hotspur top differs from go tool pprof -top"
    fi
    # the profile header lines we print must be the ones pprof prints
    for h in Type Duration; do
        g=$(grep "^$h:" "$TMP/$name.go.txt" || true)
        s=$(grep "^$h:" "$TMP/$name.hs.txt" || true)
        [ "$g" = "$s" ] || fail "$name: header '$h' differs: '$g' vs '$s'"
    done
    pass "$name ($(rows "$TMP/$name.hs.table" | wc -l) rows agree)"
}

compare cpu "$TMP/cpu.pb.gz" "" ""
compare cpu_cum "$TMP/cpu.pb.gz" "-cum" "--cum"
compare cpu_n3 "$TMP/cpu.pb.gz" "-nodecount=3" "-n 3"
compare heap "$TMP/heap.pb.gz" "" ""
compare heap_alloc_space "$TMP/heap.pb.gz" "-sample_index=alloc_space" "--sample-index alloc_space"
compare heap_alloc_objects_cum "$TMP/heap.pb.gz" "-sample_index=alloc_objects -cum" \
    "--sample-index alloc_objects --cum"
compare heap_index0 "$TMP/heap.pb.gz" "-sample_index=0" "--sample-index 0"

# Truth by construction: burnA > burnB > burnC by cum. (Which leaf is on top
# by flat depends on how the Go runtime's clock reads fare under load.)
order=$(grep -oE 'main\.burn[ABC]$' "$TMP/cpu_cum.hs.table" | tr '\n' ' ')
[ "$order" = "main.burnA main.burnB main.burnC " ] || fail "unexpected cum order: $order"
pass "known CPU split visible"

# Raw (un-gzipped) protobuf reads the same.
gzip -dc "$TMP/cpu.pb.gz" > "$TMP/cpu.pb"
"$HOTSPUR" top "$TMP/cpu.pb" > "$TMP/raw.txt" || fail "raw profile not read"
diff -u "$TMP/cpu.hs.txt" "$TMP/raw.txt" || fail "raw and gzipped profiles differ"
pass "raw protobuf input"

# Errors: exit status 2 and exactly one line on stderr, never a crash.
expect_error() {
    local what=$1 pattern=$2; shift 2
    set +e
    "$HOTSPUR" "$@" > "$TMP/err.out" 2> "$TMP/err.txt"
    local rc=$?
    set -e
    [ "$rc" -eq 2 ] || fail "$what: exit status $rc, want 2 ($(cat "$TMP/err.txt"))"
    [ "$(wc -l < "$TMP/err.txt")" -eq 1 ] || fail "$what: stderr is not one line: $(cat "$TMP/err.txt")"
    grep -q -- "$pattern" "$TMP/err.txt" || fail "$what: message '$(cat "$TMP/err.txt")' lacks '$pattern'"
    pass "$what: $(cat "$TMP/err.txt")"
}
head -c 4000 "$TMP/burn/burn" > "$TMP/corrupt.pb.gz"
head -c 300 "$TMP/cpu.pb.gz" > "$TMP/truncated.pb.gz"
expect_error "missing file" "hotspur top: $TMP/missing.pb.gz: " top "$TMP/missing.pb.gz"
expect_error "corrupt file" "hotspur top: $TMP/corrupt.pb.gz: " top "$TMP/corrupt.pb.gz"
expect_error "truncated file" "hotspur top: $TMP/truncated.pb.gz: " top "$TMP/truncated.pb.gz"
expect_error "unknown option" "unknown option" top --no-such-option "$TMP/cpu.pb.gz"
expect_error "unknown sample index" "nope" top --sample-index nope "$TMP/heap.pb.gz"
expect_error "unknown command" "unknown command" no-such-command
