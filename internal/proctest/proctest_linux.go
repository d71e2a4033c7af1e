package proctest

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// AwaitExit waits until the process pid has exited, through a pidfd (an
// event, not a polling loop), and fails the test if it still runs after
// failsafe.
func AwaitExit(t testing.TB, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	// poll is not restarted after a signal (a child's SIGCHLD, say): ask
	// again for what is left of the time.
	deadline := time.Now().Add(failsafe)
	n, err := 0, unix.EINTR
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(deadline), 0).Milliseconds()))
	}
	if err != nil || n != 1 {
		t.Fatalf("process %d still runs (poll %d, %v)", pid, n, err)
	}
}
