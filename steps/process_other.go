//go:build !linux

package steps

import (
	"os"
	"syscall"
)

// The portable fallback of process_linux.go (macOS and the BSDs). What it
// loses:
//
//   - No parent-death signal: a step's process outlives a runner that is
//     killed with SIGKILL (or crashes) and runs to its own end. A runner
//     stopped by SIGINT or SIGTERM still stops its step. KillOrphans cannot
//     help then: while the group's leader runs, it cannot be told from a
//     new process that was given the same id.
//   - The output pipes keep the system's default buffer (16 to 64 KiB):
//     more, smaller reads on the hot path.
//   - No zombie detection: KillOrphans leaves a group alone while its dead
//     leader is not yet reaped (the system's init reaps orphans promptly).

// groupAttr puts a child in a process group of its own.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// growPipe keeps the system's pipe buffer.
func growPipe(*os.File) {}

// zombieLeader reports false: without /proc there is no cheap, portable way
// to read a process's state.
func zombieLeader(int) bool { return false }
