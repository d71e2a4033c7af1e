package session

import (
	"strings"

	"golang.org/x/sys/unix"
)

// machineID names this machine and boot: a process group recorded under
// another one is not here. The file is read with bare system calls: read
// through os.File, a file of /proc is pollable, and its open and close
// add six calls (poller registration, blocking mode) to the three here.
func machineID() string {
	fd, err := unix.Open("/proc/sys/kernel/random/boot_id", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var buf [64]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	return strings.TrimSpace(string(buf[:n]))
}
