//go:build !linux

package local

import (
	"os"
	"syscall"
)

// raise sends sig to the process (no system call here sends it to one
// thread): its default action comes on some thread, soon after.
func raise(sig syscall.Signal) {
	_ = syscall.Kill(os.Getpid(), sig)
}
