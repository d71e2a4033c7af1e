package steps

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groupAttr puts a child in a session (so a process group) of its own,
// without a controlling terminal, and has the kernel kill it when this
// process dies, however it dies.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// fionread asks how many bytes a pipe holds (FIONREAD).
const fionread = unix.TIOCINQ

// pipeHungUp reports whether no process holds the write end of the pipe f
// reads any more: poll then reports a hang-up, and the reader will come to
// the end of what the pipe holds.
func pipeHungUp(f *os.File) bool {
	hungUp := false
	if conn, err := f.SyscallConn(); err == nil {
		_ = conn.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 0); err == nil && n == 1 {
				hungUp = fds[0].Revents&unix.POLLHUP != 0
			}
		})
	}
	return hungUp
}

// pipeSize is asked of the kernel for the output pipes: bigger reads mean
// fewer system calls on the hot path.
const pipeSize = 1 << 20

// growPipe asks for a pipe buffer of pipeSize; a failure only costs speed.
func growPipe(w *os.File) {
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, pipeSize)
}

// reaper is this process's part in the lives of its steps' descendants.
// It is the process's, not a driver's: a child subreaper and the children
// it adopts belong to the whole process, whatever number of drivers run
// steps in it.
var reaper struct {
	sync.Mutex
	// steps is the number of steps running; while it is not zero this
	// process is a child subreaper: the orphans of their descendants,
	// daemons that called setsid included, are given to it rather than to
	// init, so that sweep finds them.
	steps int
	// leaders are the steps' own processes, which os/exec waits for: no
	// sweep may reap one.
	leaders map[int]bool
}

// adoptOrphans makes this process a child subreaper while a step runs.
// The returned function ends it once the last step has ended, so that
// orphans of other programs (git's background gc, say) go to init as
// before.
func adoptOrphans() (release func()) {
	reaper.Lock()
	defer reaper.Unlock()
	if reaper.steps == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	reaper.steps++
	var once sync.Once
	return func() {
		once.Do(func() {
			reaper.Lock()
			defer reaper.Unlock()
			if reaper.steps--; reaper.steps == 0 {
				_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			}
		})
	}
}

// leading records a started step's process (on), or forgets it.
func leading(pid int, on bool) {
	reaper.Lock()
	defer reaper.Unlock()
	if reaper.leaders == nil {
		reaper.leaders = map[int]bool{}
	}
	if on {
		reaper.leaders[pid] = true
	} else {
		delete(reaper.leaders, pid)
	}
}

func isLeader(pid int) bool {
	reaper.Lock()
	defer reaper.Unlock()
	return reaper.leaders[pid]
}

// sweepLimit bounds the wait for killed processes to die: one stuck in
// the kernel (a hung NFS mount) must not hold the step's end for good.
const sweepLimit = 2 * time.Second

// sweep kills what the step with process group pgid left behind once its
// own process exited, and reaps what this process adopted of it: the rest
// of the group, the processes bearing mark, and every descendant of
// those. It returns those that were still running.
//
// The step's descendants that became orphans were given to this process
// (adoptOrphans), whichever session they moved to: they are among its
// children. A process that left the step's session and cleared its
// environment before its parent died cannot be told from the children of
// other programs, and is left running; the step still ends (outputDrain).
func sweep(pgid int, mark string) []Leftover {
	if !hasChildren() {
		// Nothing was adopted, nothing of the group is left but what
		// is not this process's (it is killed): /proc is not read, a
		// file for each of this process's threads.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	}
	var left []Leftover
	killed := map[int]bool{}
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	deadline := time.Now().Add(sweepLimit)
	for first := true; ; first = false {
		var roots []int
		for _, child := range childrenOf(self) {
			info, ok := readStat(child)
			if !ok || info.pgid == ownGroup || isLeader(child) {
				continue
			}
			if killed[child] || info.pgid == pgid || (mark != "" && info.state != 'Z' && hasMark(child, mark)) {
				roots = append(roots, child)
			}
		}
		var tree []int
		for _, root := range roots {
			tree = descendants(root, tree)
		}
		for _, pid := range tree {
			if killed[pid] {
				continue
			}
			killed[pid] = true
			if info, ok := readStat(pid); ok && info.state != 'Z' {
				left = append(left, Leftover{PID: pid, Command: info.comm})
			}
		}
		if first {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		for _, pid := range tree {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, root := range roots {
			reap(root, deadline)
		}
		// Reaping a process hands its children, killed too, to this
		// process: another round reaps them.
		if len(roots) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// hasChildren reports whether this process has a child, live or exited
// and not yet reaped (it is left so: WNOWAIT); true when it cannot
// tell.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// reap waits for a child killed by sweep to exit, until deadline, and
// collects its exit status.
func reap(pid int, deadline time.Time) {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		wait := max(time.Until(deadline), 0)
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(wait.Milliseconds()))
		unix.Close(fd)
	}
	var status unix.WaitStatus
	_, _ = unix.Wait4(pid, &status, unix.WNOHANG, nil)
}

// KillMarked kills every process of this user that bears mark in its
// environment, and their descendants, but this process: what the steps of
// a runner that was killed (kill -9) left running, wherever they went.
// It returns those it killed.
func KillMarked(mark string) []Leftover {
	if mark == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var tree []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !hasMark(pid, mark) {
			continue
		}
		tree = descendants(pid, tree)
	}
	var left []Leftover
	seen := map[int]bool{self: true}
	for _, pid := range tree {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		info, ok := readStat(pid)
		if ok && info.state != 'Z' && syscall.Kill(pid, syscall.SIGKILL) == nil {
			left = append(left, Leftover{PID: pid, Command: info.comm})
		}
	}
	return left
}

// stoppedProcess finds a process of the step led by pid that is stopped
// (by SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU): it will not go on by itself.
func stoppedProcess(pid int) (Leftover, bool) {
	for _, p := range descendants(pid, nil) {
		if info, ok := readStat(p); ok && info.state == 'T' {
			return Leftover{PID: p, Command: info.comm}, true
		}
	}
	return Leftover{}, false
}

// groupMembers are the processes of the group pgid that descend from its
// leader, by id, with their command names.
func groupMembers(pgid int) map[int]string {
	members := map[int]string{}
	for _, pid := range descendants(pgid, nil) {
		if info, ok := readStat(pid); ok && info.pgid == pgid && info.state != 'Z' {
			members[pid] = info.comm
		}
	}
	return members
}

// groupReached are the processes of the group pgid that a SIGINT sent at
// sentAt (bootClock) reached for sure, read after it was sent: those that
// had started youngProcess before it. A younger one may have been forked
// after it, or may have taken it while it still ran the program its parent
// forked it as (a shell's child between fork and exec catches it, and
// forgets it on exec): it is left out, so that interruptNew interrupts it
// at the first late look if it is still there.
func groupReached(pgid int, sentAt time.Duration) map[int]string {
	members := map[int]string{}
	for _, pid := range descendants(pgid, nil) {
		info, ok := readStat(pid)
		if ok && info.pgid == pgid && info.state != 'Z' && info.started+statTick <= sentAt-youngProcess {
			members[pid] = info.comm
		}
	}
	return members
}

// youngProcess is how long before a SIGINT a process must have started to
// count as reached by it: a fork and its exec lie within it, on a busy
// machine too. A process that started later, took the SIGINT and is still
// there at the first late look (interruptLate) gets a second one.
const youngProcess = 50 * time.Millisecond

// statTick is the unit of a process's start time in /proc/PID/stat
// (USER_HZ, 100 on every Linux).
const statTick = 10 * time.Millisecond

// bootClock is the time since boot (CLOCK_BOOTTIME), the clock of a
// process's start time in /proc/PID/stat.
func bootClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// interruptNew sends SIGINT to each process of the group pgid that is not
// in reached, or that ran another program since (a shell's child forked
// before the SIGINT and started its program after), and adds it there.
func interruptNew(pgid int, reached map[int]string) {
	for pid, comm := range groupMembers(pgid) {
		if was, ok := reached[pid]; !ok || was != comm {
			reached[pid] = comm
			_ = syscall.Kill(pid, syscall.SIGINT)
		}
	}
}

// procStat is what sweep reads of /proc/PID/stat.
type procStat struct {
	state byte
	ppid  int
	pgid  int
	comm  string
	// started is when the process started, since boot, to a statTick.
	started time.Duration
}

func readStat(pid int) (procStat, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procStat{}, false
	}
	pgid, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return procStat{}, false
	}
	info := procStat{state: fields[0][0], ppid: ppid, pgid: pgid, comm: string(stat[open+1 : end])}
	// Field 22 of the line, the 20th after the command's name.
	if len(fields) > 19 {
		if ticks, err := strconv.ParseInt(string(fields[19]), 10, 64); err == nil {
			info.started = time.Duration(ticks) * statTick
		}
	}
	return info, true
}

// zombieLeader reports whether pid is a dead process, not yet reaped, that
// leads its own group: the leader of a killed runner's step, when nothing
// reaps orphans quickly.
func zombieLeader(pid int) bool {
	info, ok := readStat(pid)
	return ok && info.state == 'Z' && info.pgid == pid
}

// childrenOf lists the children of pid: those of each of its threads (an
// adopted orphan is given to any thread of its new parent).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var children []int
	for _, task := range tasks {
		content, err := os.ReadFile(dir + task.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) && len(tasks) > 0 {
			return childrenByScan(pid)
		}
		for _, field := range bytes.Fields(content) {
			if child, err := strconv.Atoi(string(field)); err == nil {
				children = append(children, child)
			}
		}
	}
	return children
}

// childrenByScan is childrenOf on a kernel without /proc/PID/task/TID/
// children (CONFIG_PROC_CHILDREN off): every process's parent is read.
func childrenByScan(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := readStat(child); ok && info.ppid == pid {
			children = append(children, child)
		}
	}
	return children
}

// descendants appends pid and all its descendants to list.
func descendants(pid int, list []int) []int {
	list = append(list, pid)
	for _, child := range childrenOf(pid) {
		list = descendants(child, list)
	}
	return list
}

// hasMark reports whether the environment pid started with holds mark.
func hasMark(pid int, mark string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	entry := append(append([]byte{0}, mark...), 0)
	return bytes.HasPrefix(env, entry[1:]) || bytes.Contains(env, entry)
}

// forkExec starts the child with a handle of it (CLONE_PIDFD), by which
// waitChild waits; the handle is -1 when the kernel gave none.
func forkExec(path string, args []string, attr *syscall.ProcAttr) (pid, pidfd int, err error) {
	pidfd = -1
	attr.Sys.PidFD = &pidfd
	pid, err = syscall.ForkExec(path, args, attr)
	if err == syscall.ENOSYS || err == syscall.EINVAL || err == syscall.EPERM {
		// A system that refuses the handle (seccomp, an old kernel):
		// the child is waited for without it.
		pidfd, attr.Sys.PidFD = -1, nil
		pid, err = syscall.ForkExec(path, args, attr)
	}
	return pid, pidfd, err
}

// waitChild waits for the child pid to exit, and reaps it. With a handle
// of it (pidfd, closed here) the wait is the network poller's: the
// goroutine is parked, and no thread sits blocked in wait4 for the
// child's life, its processor handed to another thread the runtime may
// start for it.
func waitChild(pid, pidfd int) (syscall.WaitStatus, error) {
	if pidfd >= 0 && unix.SetNonblock(pidfd, true) == nil {
		handle := os.NewFile(uintptr(pidfd), "pidfd")
		defer handle.Close()
		if conn, err := handle.SyscallConn(); err == nil {
			// WNOWAIT: wait4 reaps it below, and reads its status.
			_ = conn.Read(func(fd uintptr) bool {
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
				return err != unix.EINTR && (err != nil || info.Signo != 0)
			})
		}
	} else if pidfd >= 0 {
		unix.Close(pidfd)
	}
	return wait4(pid)
}
