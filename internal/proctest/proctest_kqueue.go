//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package proctest

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// AwaitExit waits until the process pid has exited, through a kqueue
// (NOTE_EXIT, an event, not a polling loop), and fails the test if it
// still runs after failsafe.
func AwaitExit(t testing.TB, pid int) {
	t.Helper()
	kq, err := unix.Kqueue()
	if err != nil {
		t.Fatalf("kqueue: %v", err)
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	timeout := unix.NsecToTimespec(int64(failsafe))
	events := make([]unix.Kevent_t, 1)
	n, err := unix.Kevent(kq, []unix.Kevent_t{change}, events, &timeout)
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Kevent(kq, nil, events, &timeout)
	}
	// A process that is gone (or a zombie, on some systems) cannot be
	// watched: the registration fails with ESRCH, as the call's error or
	// as an EV_ERROR event.
	if n == 1 && events[0].Flags&unix.EV_ERROR != 0 {
		err = syscall.Errno(events[0].Data)
	}
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	if err != nil || n != 1 {
		t.Fatalf("process %d still runs (kevent %d, %v)", pid, n, err)
	}
}
