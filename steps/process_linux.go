package steps

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAttr puts a child in a process group of its own, and has the kernel
// kill it when this process dies, however it dies.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pipeSize is asked of the kernel for the output pipes: bigger reads mean
// fewer system calls on the hot path.
const pipeSize = 1 << 20

// growPipe asks for a pipe buffer of pipeSize; a failure only costs speed.
func growPipe(w *os.File) {
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, pipeSize)
}

// zombieLeader reports whether pid is a dead process, not yet reaped, that
// leads its own group: the leader of a killed runner's step, when nothing
// reaps orphans quickly.
func zombieLeader(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return false
	}
	fields := strings.Fields(string(stat[end+1:]))
	return len(fields) > 2 && fields[0] == "Z" && fields[2] == strconv.Itoa(pid)
}
