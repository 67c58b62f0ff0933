//go:build !cgo

package main

func fromC(r int) int { return 2 * r }
