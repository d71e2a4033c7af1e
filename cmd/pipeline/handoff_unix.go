//go:build !temporal && unix

package main

import "syscall"

// execFleet replaces this process with pipeline-temporal: the same pid,
// so that a signal sent to it (Ctrl+C pausing a run, SIGTERM stopping a
// worker), the exit status and the terminal are the child's own.
func execFleet(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}
