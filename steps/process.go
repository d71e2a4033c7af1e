package steps

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Command is a program to start.
type Command struct {
	Args  []string
	Dir   string
	Env   []string
	Stdin io.Reader
}

// Process is a child started in a process group of its own, so that it and
// everything it starts can be interrupted and killed together.
type Process struct {
	// Stdout and Stderr are the child's output pipes; read both to the end.
	Stdout io.ReadCloser
	Stderr io.ReadCloser

	cmd      *exec.Cmd
	done     chan struct{}
	exitCode int
	signal   syscall.Signal
	waitErr  error
	stopOnce sync.Once
}

// Start starts c in a new process group. On Linux the child is killed if
// this process dies (so a kill -9 of pipeline leaves no agent behind); see
// process_other.go for what other systems lose.
func Start(c Command) (*Process, error) {
	if len(c.Args) == 0 {
		return nil, errors.New("no program to run")
	}
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = c.Dir, c.Env, c.Stdin
	cmd.SysProcAttr = groupAttr()
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", c.Args[0], err)
	}
	// The child holds its own copies of the write ends.
	outW.Close()
	errW.Close()
	p := &Process{Stdout: outR, Stderr: errR, cmd: cmd, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	growPipe(w)
	return r, w, nil
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	p.exitCode = 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		p.exitCode = exitErr.ExitCode() // -1 when killed by a signal
		if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			p.signal = status.Signal()
		}
	case err != nil:
		p.exitCode, p.waitErr = -1, err
	}
	// What the leader left behind in its group goes with it: no process
	// survives its step, and the pipes reach their end.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	close(p.done)
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited and its group was killed.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the child and returns its exit code: -1 when a signal
// ended it.
func (p *Process) Wait() (int, error) {
	<-p.done
	return p.exitCode, p.waitErr
}

// Signal is the signal that ended the child, or 0; valid after Done.
func (p *Process) Signal() syscall.Signal {
	<-p.done
	return p.signal
}

// Stop interrupts the whole process group (SIGINT), waits up to grace for
// the child to exit, then kills the group, and waits for the child.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGINT)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
		}
	})
	<-p.done
}

// KillOrphans kills what is left of the process group pgid of a step whose
// runner died: the group's leader died with the runner (parent-death
// signal), but its children may not have. It does nothing when a process
// with the id pgid exists: then the id was given to another process since,
// and the group is not ours. (Linux never gives a new process the id of a
// process group that still has members, nor does POSIX.) It reports
// whether it killed.
func KillOrphans(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if err := syscall.Kill(pgid, 0); (err == nil || errors.Is(err, syscall.EPERM)) && !zombieLeader(pgid) {
		return false // the id is someone's now
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false // the group is empty
	}
	return syscall.Kill(-pgid, syscall.SIGKILL) == nil
}
