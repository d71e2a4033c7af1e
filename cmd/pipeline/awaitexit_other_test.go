//go:build !linux

package main

import (
	"os"
	"syscall"
	"time"
)

// awaitExit waits, at most timeout, for the process pid (not a child of
// this one) to exit. Without pidfds, it asks with signal 0.
func awaitExit(pid int, timeout time.Duration) {
	p, _ := os.FindProcess(pid)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if p.Signal(syscall.Signal(0)) != nil {
			return
		}
	}
}
