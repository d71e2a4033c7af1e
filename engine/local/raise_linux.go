package local

import (
	"os"
	"runtime"
	"syscall"
)

// raise sends sig to this thread, which takes it as it returns from the
// call: its default action (the end of the process, for most) is done
// before raise returns, where a signal to the process could be taken by
// another thread after this one had gone on.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}
