package steps

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Command is a program to start.
type Command struct {
	Args  []string
	Dir   string
	Env   []string
	Stdin io.Reader
	// Mark is an entry of Env, NAME=value, that names the step's owner
	// (the local driver gives PIPELINE_SESSION=<session id>). Every
	// process the step starts inherits it, even one that leaves the
	// step's process group and session (a daemon that called setsid):
	// the end of the step finds those by it, and KillMarked does after a
	// runner was killed. Empty: only the process group and the processes
	// the step's own processes started are followed.
	Mark string
	// Path is the program's file when the caller looked Args[0] up on
	// PATH already; empty, Start looks it up.
	Path string
	// MergeOutput gives the child one pipe for its standard output and
	// error, as a CI runner does: the order of its lines is kept exactly.
	// Process.Stderr is then nil.
	MergeOutput bool
}

// Process is a child started in a session and process group of its own,
// so that it and everything it starts can be interrupted and killed
// together, and so that it has no controlling terminal: a program that
// opens /dev/tty to prompt (git, ssh, sudo) fails at once instead of
// being stopped by SIGTTIN for good.
type Process struct {
	// Stdout and Stderr are the child's output pipes; read both to the
	// end. Stderr is nil when the command merged them.
	Stdout io.ReadCloser
	Stderr io.ReadCloser

	pid int
	// pidfd is a handle of the child, -1 when there is none (waitChild).
	pidfd int
	// fed is the end of the writing of Command.Stdin into the child's
	// input, when it is not a file (spawn); nil otherwise.
	fed      <-chan error
	mark     string
	outputs  [2]*os.File
	release  func()
	done     chan struct{}
	exitCode int
	signal   syscall.Signal
	waitErr  error
	left     []Leftover
	stopOnce sync.Once
	// interruptOnce sends the first SIGINT; interruptedAt is when, on the
	// boot clock (bootClock), for the look at what it reached.
	interruptOnce sync.Once
	interruptedAt time.Duration
	// overran is the grace the child outlived, once Stop killed it.
	overran atomic.Int64
}

// Leftover is a process that a step left running when its own process
// exited: it was killed then.
type Leftover struct {
	PID     int
	Command string
}

func (l Leftover) String() string { return fmt.Sprintf("%d (%s)", l.PID, l.Command) }

// Start starts c in a new session. On Linux the child is killed if this
// process dies (so a kill -9 of pipeline leaves no agent behind), and
// while a step runs this process adopts the orphans of its descendants, so
// that a daemon the step started is found and killed when the step ends;
// see process_other.go for what other systems lose.
func Start(c Command) (*Process, error) {
	p, err := startUnwaited(c)
	if err != nil {
		return nil, err
	}
	go p.wait()
	return p, nil
}

// startUnwaited is Start, but the child is not waited for: the caller runs
// p.wait, on a goroutine that has nothing else to do until the child
// ends (the executor's, in finish). A goroutine of its own would be
// one more handed to another thread at every step: a futex wake-up, a
// context switch, at times a new thread.
func startUnwaited(c Command) (*Process, error) {
	if len(c.Args) == 0 {
		return nil, errors.New("no program to run")
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW := outR, outW
	if !c.MergeOutput {
		if errR, errW, err = pipe(); err != nil {
			outR.Close()
			outW.Close()
			return nil, err
		}
	}
	release := adoptOrphans()
	child, err := spawn(c, outW, errW, groupAttr())
	// The child holds its own copies of the write ends.
	outW.Close()
	errW.Close()
	if err != nil {
		release()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Args[0], err)
	}
	p := &Process{Stdout: outR, pid: child.pid, pidfd: child.pidfd, fed: child.fed, mark: c.Mark, outputs: [2]*os.File{outR, nil},
		release: release, done: make(chan struct{})}
	if !c.MergeOutput {
		p.Stderr, p.outputs[1] = errR, errR
	}
	leading(p.pid, true)
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

// wait waits for the child to exit, sweeps what it left, and closes
// done; Start calls it on a goroutine of its own.
func (p *Process) wait() {
	status, err := waitChild(p.pid, p.pidfd)
	leading(p.pid, false)
	switch {
	case err != nil:
		p.exitCode, p.waitErr = -1, fmt.Errorf("waiting for the step's process: %w", err)
	case status.Signaled():
		p.exitCode, p.signal = -1, status.Signal()
	default:
		p.exitCode = status.ExitStatus()
	}
	// What the leader left behind goes with it: the rest of its group,
	// and the daemons that left the group. No process survives its step,
	// and the pipes reach their end.
	p.left = sweep(p.pid, p.mark)
	if p.fed != nil {
		// Once what held the input open is gone: a leftover that kept it
		// open without reading would have held the step's end for good.
		if err := <-p.fed; err != nil && p.waitErr == nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
			p.waitErr = err
		}
	}
	p.release()
	close(p.done)
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the child has exited and what it left was killed.
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

// Leftovers are the processes the child left running when it exited,
// killed then; valid after Done.
func (p *Process) Leftovers() []Leftover {
	<-p.done
	return p.left
}

// Stop interrupts the whole process group (SIGINT), waits up to grace for
// the child to exit, then kills the group, and waits for the child.
//
// A process that was not there to take the SIGINT is interrupted on its
// own, once, in the first second: a shell between two commands (sh -c
// 'echo [CHECKPOINT]; sleep 30') takes the first SIGINT and goes on to
// start the next one, which would sit out the whole grace. A process
// that took the first is not interrupted again: a second SIGINT means
// "now" to many programs.
func (p *Process) Stop(grace time.Duration) {
	p.Interrupt()
	p.stopOnce.Do(func() {
		pgid := -p.pid
		// Which processes the SIGINT reached is read at the first late
		// look, by their start times: read before the SIGINT, it would put
		// a scan of /proc (0.05–0.2 ms) between a checkpoint and its
		// interrupt; read at once after it, it would take a core from the
		// processes taking the signal on a busy machine.
		var reached map[int]string
		timer := time.NewTimer(grace)
		defer timer.Stop()
		again := time.NewTimer(interruptLate[0])
		defer again.Stop()
		for late := 1; ; {
			select {
			case <-p.done:
				return
			case <-again.C:
				if reached == nil {
					reached = groupReached(p.pid, p.interruptedAt)
				}
				interruptNew(p.pid, reached)
				if late < len(interruptLate) {
					again.Reset(interruptLate[late])
					late++
				}
				continue
			case <-timer.C:
			}
			p.overran.Store(int64(grace))
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
			return
		}
	})
	<-p.done
}

// Interrupt sends SIGINT to the whole process group, once, from the
// caller's goroutine and before anything else: the latency of a pause ends
// with this system call. Stop calls it first; a caller that interrupts by
// itself then calls Stop for the grace and the kill.
func (p *Process) Interrupt() {
	p.interruptOnce.Do(func() {
		pgid := -p.pid
		p.interruptedAt = bootClock()
		_ = syscall.Kill(pgid, syscall.SIGINT)
		// A stopped process (SIGSTOP, SIGTSTP) takes the SIGINT only once
		// it is continued: without this it would sit out the grace.
		_ = syscall.Kill(pgid, syscall.SIGCONT)
	})
}

// interruptLate are the waits between the first SIGINT of Stop and each
// look for processes it did not reach.
var interruptLate = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

// KilledAfter is the grace that the child outlived, when Stop killed it
// for that; valid after Done.
func (p *Process) KilledAfter() (grace time.Duration, killed bool) {
	<-p.done
	g := p.overran.Load()
	return time.Duration(g), g != 0
}

// outputDrain is how long the output pipes are still read once the child
// has exited and what it left was killed, after what they held then: a
// process that escaped the sweep (process_other.go, or one that left the
// session and cleared its environment) and keeps a pipe open must not
// keep the step from ending.
const outputDrain = 250 * time.Millisecond

// drain waits for the readers of the output pipes, given the bytes each
// has read so far, once the child is done: what the pipes held when the
// child ended is read whatever time that takes (a slow terminal), then
// the readers get outputDrain more for what is left in flight, and are
// stopped. It reports whether a pipe was still open then. Where the
// kernel says that no process holds a pipe open any more (writersGone),
// the readers are waited for to the end: a reader slow to get there (a
// busy machine, a slow terminal) is not taken for a process that kept
// the output open.
func (p *Process) drain(ended <-chan struct{}, read *[2]atomic.Int64) bool {
	select {
	case <-ended:
		// Read to the end already, as a step's output mostly is by then:
		// no look at the pipes, no timer.
		return false
	default:
	}
	var target [2]int64
	for i, f := range p.outputs {
		if f != nil {
			target[i] = read[i].Load() + int64(unreadBytes(f))
		}
	}
	timer := time.NewTimer(outputDrain)
	defer timer.Stop()
	for {
		select {
		case <-ended:
			return false
		case <-timer.C:
		}
		if p.writersGone() {
			<-ended
			return false
		}
		if read[0].Load() < target[0] || read[1].Load() < target[1] {
			timer.Reset(outputDrain)
			continue
		}
		for _, f := range p.outputs {
			if f != nil {
				_ = f.SetReadDeadline(time.Now())
			}
		}
		<-ended
		return true
	}
}

// writersGone reports whether the kernel says that no process holds the
// write end of any output pipe (pipeHungUp); false where it cannot say.
func (p *Process) writersGone() bool {
	for _, f := range p.outputs {
		if f != nil && !pipeHungUp(f) {
			return false
		}
	}
	return true
}

// closeOutputs closes the read ends once they are read: a process that
// still writes to them gets EPIPE.
func (p *Process) closeOutputs() {
	for _, f := range p.outputs {
		if f != nil {
			f.Close()
		}
	}
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

// describeLeftovers names up to a few leftovers for a line of the
// transcript.
func describeLeftovers(left []Leftover) string {
	const shown = 5
	var names []string
	for i, l := range left {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(left)-shown))
			break
		}
		names = append(names, l.String())
	}
	return strings.Join(names, ", ")
}

// unreadBytes is how much a pipe holds that was not read yet.
func unreadBytes(f *os.File) int {
	n := 0
	if conn, err := f.SyscallConn(); err == nil {
		_ = conn.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), fionread) })
	}
	return n
}
