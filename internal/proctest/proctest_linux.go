package proctest

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// AwaitExit waits until the process pid has exited, through a pidfd (an
// event, not a polling loop), and fails the test if it still runs after a
// generous ten seconds.
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
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 10_000)
	if err != nil || n != 1 {
		t.Fatalf("process %d still runs (poll %d, %v)", pid, n, err)
	}
}
