//go:build !linux

package temporaltest

import "syscall"

// A group of its own, so that stopping it stops all of it. (Only Linux can
// also have the kernel kill it when the test binary dies.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
