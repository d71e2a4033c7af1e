package session

import (
	"runtime"
	"syscall"
)

// raise sends sig to the thread running it, which takes it as the system
// call returns. A signal sent to the process may go to any of its
// threads, and one waiting on the disk (an fsync on a busy machine)
// takes it only once that wait ends: the process outlived dieOf's
// second of grace and exited 130 instead of dying of the signal.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), sig)
}
