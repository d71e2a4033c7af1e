package temporaltest

import "syscall"

// A group of its own, so that stopping it stops all of it; and SIGKILL from
// the kernel if the test binary dies first (a panic, go test's -timeout),
// so that no server outlives the test that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
