//go:build !linux

package session

import (
	"os"
	"syscall"
)

// raise sends sig to this process.
func raise(sig syscall.Signal) { _ = syscall.Kill(os.Getpid(), sig) }
