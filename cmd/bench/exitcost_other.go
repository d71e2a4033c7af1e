//go:build !linux

package main

import "errors"

// exitCostFigures needs ptrace's exit stops and /proc (exitcost_linux.go).
func exitCostFigures(string, string, int) {
	check(errors.New("-exitcost measures Linux's exit: it runs on Linux only"))
}
