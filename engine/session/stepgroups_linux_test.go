package session_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// leftGroup starts what a step leaves when its runner is killed: a
// process group whose leader is dead and a child of it still running. It
// returns the group and a pidfd of the child.
func leftGroup(t *testing.T) (pgid, pidfd int) {
	t.Helper()
	group := exec.Command("sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!")
	group.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := group.Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the child's pid: %q", out)
	}
	pidfd, err = unix.PidfdOpen(child, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Kill(child, unix.SIGKILL)
		unix.Close(pidfd)
	})
	return group.Process.Pid, pidfd
}

// awaitGone waits for the process of pidfd to end.
func awaitGone(t *testing.T, pidfd int, what string) {
	t.Helper()
	deadline := time.Now().Add(testwait.Failsafe)
	for {
		// The runtime's own signals (preemption, SIGCHLD) interrupt
		// the poll: that is no answer, so it polls again.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, int(time.Until(deadline).Milliseconds()))
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("%s is still running (%d, %v)", what, n, err)
		}
		return
	}
}

// stillRunning reports whether the process of pidfd runs.
func stillRunning(pidfd int) bool {
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 0)
	return err == nil && n == 0
}

// A runner that takes the lock and is killed before its sweep hands the
// step groups of the holder before it on: the next Open stops what they
// left running.
func TestAStepGroupOutlivesAHolderKilledBeforeItsSweep(t *testing.T) {
	p := newProject(t, twoPhases)
	pgid, pidfd := leftGroup(t)
	s := p.mustOpen(session.Options{Create: session.Always})
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	s.StepProcess(pgid)
	if err := s.Close(); err != nil { // the lock goes, the group stays recorded
		t.Fatal(err)
	}
	// Killed between its lock and its sweep: it wrote its own holder.
	killed, err := p.st.Lock(s.Key, store.Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	killed.Release()
	if !stillRunning(pidfd) {
		t.Fatal("what the step left ended before any sweep: this test proves nothing")
	}
	next := p.mustOpen(session.Options{Create: session.Always})
	defer next.Close()
	awaitGone(t, pidfd, "what the step of the holder before the killed one left")
	if h, err := p.st.Holder(s.Key); err != nil || len(h.Steps) != 0 {
		t.Errorf("the groups swept are still recorded: %+v, %v", h, err)
	}
}

// A step group recorded whose number is a live process's group now (its
// leader runs: the number was reused) is left alone.
func TestAStepGroupWithALiveLeaderIsLeftAlone(t *testing.T) {
	p := newProject(t, twoPhases)
	leader := exec.Command("sleep", "600")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- leader.Wait() }()
	t.Cleanup(func() {
		leader.Process.Kill()
		<-waited
	})
	s := p.mustOpen(session.Options{Create: session.Always})
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	s.StepProcess(leader.Process.Pid)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next := p.mustOpen(session.Options{ID: s.ID()})
	if !next.Crashed {
		t.Fatal("the session was not found cut short")
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(leader.Process.Pid, 0); err != nil {
		t.Errorf("the group of a live leader was stopped: %v", err)
	}
}

// A step-process file an older build left in a session's folder (the
// group, and the boot it ran in) is still read: the session's next Open
// stops what the group left, and removes the file; so does the next
// session's, when the one it left is the last holder's.
func TestAnOlderBuildsStepProcessFileIsSwept(t *testing.T) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		next    session.Options
		machine string // the oldest builds wrote none
	}{{session.Options{}, " " + strings.TrimSpace(string(boot))}, {session.Options{Create: session.Always}, " " + strings.TrimSpace(string(boot))}, {session.Options{}, ""}} {
		next := c.next
		p := newProject(t, twoPhases)
		pgid, pidfd := leftGroup(t)
		s := p.mustOpen(session.Options{Create: session.Always})
		if _, err := s.Apply(s.Start(time.Now())); err != nil {
			t.Fatal(err)
		}
		id, dir := s.ID(), s.X.Dir
		file := filepath.Join(dir, "step-process")
		if err := os.WriteFile(file, []byte(strconv.Itoa(pgid)+c.machine), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if next.Create == session.Never {
			next.ID = id
		}
		opened := p.mustOpen(next)
		awaitGone(t, pidfd, "what the older build's step left")
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("the step-process file is still there: %v", err)
		}
		if err := opened.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
