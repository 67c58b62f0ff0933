// A Go program with known frames for tests/names.sh: main.hot under
// main.work, and goroutines handing a value back and forth so the
// scheduler runs on the main thread's system stack (under runtime.rt0_go,
// where the process started).  Built by the test with Debian's golang-go,
// static (CGO_ENABLED=0) and with cgo (cgo.go: a C function it calls).
package main

import (
	"fmt"
	"os"
	"strconv"
)

//go:noinline
func hot(n int) uint64 {
	var s uint64 = 1
	for i := 0; i < n; i++ {
		s = s*31 + uint64(i)
	}
	return s
}

//go:noinline
func pingpong(n int) int {
	a, b := make(chan int), make(chan int)
	go func() {
		for v := range a {
			b <- v + 1
		}
		close(b)
	}()
	v := 0
	for i := 0; i < n; i++ {
		a <- v
		v = <-b
	}
	close(a)
	return v
}

//go:noinline
func work(rounds int) uint64 {
	var t uint64
	for r := 0; r < rounds; r++ {
		t += hot(200000) + uint64(pingpong(500)) + uint64(fromC(r))
	}
	return t
}

type node struct {
	next *node
	v    [4]int
}

// churn allocates lists of pointers: the collector runs often, and the
// allocating goroutine helps it on the thread's system stack
// (runtime.systemstack, gcAssistAlloc).
//
//go:noinline
func churn(rounds int) int {
	n := 0
	for r := 0; r < rounds; r++ {
		var head *node
		for i := 0; i < 20000; i++ {
			head = &node{next: head, v: [4]int{i}}
		}
		for p := head; p != nil; p = p.next {
			n += p.v[0] & 1
		}
	}
	return n
}

// go-prog [ROUNDS [gc]]: main.work ROUNDS times, or main.churn.
func main() {
	rounds := 300
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 && os.Args[2] == "gc" {
		fmt.Println(churn(rounds))
		return
	}
	fmt.Println(work(rounds))
}
