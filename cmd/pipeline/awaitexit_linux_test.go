package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// awaitExit waits, at most timeout, for the process pid (not a child of
// this one) to exit: its pidfd becomes readable then.
func awaitExit(pid int, timeout time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(timeout.Milliseconds()))
}
