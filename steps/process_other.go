//go:build !linux

package steps

import (
	"os"
	"syscall"
	"time"
)

// The portable fallback of process_linux.go (macOS and the BSDs). What it
// loses:
//
//   - No parent-death signal: a step's process outlives a runner that is
//     killed with SIGKILL (or crashes) and runs to its own end. A runner
//     stopped by SIGINT or SIGTERM still stops its step. KillOrphans cannot
//     help then: while the group's leader runs, it cannot be told from a
//     new process that was given the same id.
//   - No child subreaper and no /proc: a daemon that a step started and
//     that left the step's process group (setsid) outlives the step, and
//     KillMarked finds nothing. When it keeps the step's output open, the
//     step still ends: its output is read for outputDrain after its own
//     process exited, then left.
//   - No stopped-process report: a step stopped by a signal waits for its
//     idle_timeout, its timeout or a Ctrl+C, which continues it.
//   - The output pipes keep the system's default buffer (16 to 64 KiB):
//     more, smaller reads on the hot path.
//   - No list of a group's processes: the SIGINT of Stop goes to the
//     whole group once more after a short wait, rather than only to the
//     processes the first one did not reach.
//   - No zombie detection: KillOrphans leaves a group alone while its dead
//     leader is not yet reaped (the system's init reaps orphans promptly).

// groupAttr puts a child in a session (so a process group) of its own,
// without a controlling terminal.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// fionread is FIONREAD, _IOR('f', 127, int), on macOS and the BSDs.
const fionread = 0x4004667f

// pipeHungUp says no: what poll reports of a pipe without writers is not
// the same everywhere, and the output is drained for outputDrain after
// what the pipes held, as before.
func pipeHungUp(*os.File) bool { return false }

// growPipe keeps the system's pipe buffer.
func growPipe(*os.File) {}

// adoptOrphans does nothing: the orphans go to init.
func adoptOrphans() func() { return func() {} }

func leading(int, bool) {}

// sweep kills the rest of the step's process group.
func sweep(pgid int, _ string) []Leftover {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// KillMarked finds nothing without /proc.
func KillMarked(string) []Leftover { return nil }

func stoppedProcess(int) (Leftover, bool) { return Leftover{}, false }

// zombieLeader reports false: without /proc there is no cheap, portable way
// to read a process's state.
func zombieLeader(int) bool { return false }

// groupReached cannot list a group's processes without /proc.
func groupReached(int, time.Duration) map[int]string { return map[int]string{} }

// bootClock is not needed where groupReached reads nothing.
func bootClock() time.Duration { return 0 }

// interruptNew interrupts the whole group again, once.
func interruptNew(pgid int, reached map[int]string) {
	if _, again := reached[0]; !again {
		reached[0] = ""
		_ = syscall.Kill(-pgid, syscall.SIGINT)
	}
}

// forkExec starts the child; there is no handle of it here (-1).
func forkExec(path string, args []string, attr *syscall.ProcAttr) (pid, pidfd int, err error) {
	pid, err = syscall.ForkExec(path, args, attr)
	return pid, -1, err
}

// waitChild waits for the child pid to exit, and reaps it.
func waitChild(pid, _ int) (syscall.WaitStatus, error) { return wait4(pid) }
