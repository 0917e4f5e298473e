// pprof_server.go — a Go program that serves net/http/pprof on a loopback
// port the kernel picks (printed on stdout as HOST:PORT), keeps one
// goroutine busy in main.hotspurGoBusy, which also allocates, and two
// contending for a mutex in main.hotspurGoContend (mutex profiling on). Standard
// library only; tests/integration/server_scrape.sh builds it with `go build`
// and scrapes it with `hotspur serve --scrape`.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var sink [][]byte

//go:noinline
func hotspurGoBusy(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		x += i * i % 7
	}
	sink = append(sink, make([]byte, 4096))
	if len(sink) > 1000 {
		sink = sink[:0]
	}
	return x
}

var mu sync.Mutex

//go:noinline
func hotspurGoContend() {
	for {
		mu.Lock()
		time.Sleep(time.Millisecond)
		mu.Unlock()
	}
}

func main() {
	runtime.SetMutexProfileFraction(1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		for {
			hotspurGoBusy(1 << 20)
		}
	}()
	go hotspurGoContend()
	go hotspurGoContend()
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
