//go:build cgo

package main

// static int twice(int x) { return 2 * x; }
import "C"

func fromC(r int) int { return int(C.twice(C.int(r))) }
