package steps

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// The step's process is started with syscall.ForkExec, not os/exec: on
// Linux os.StartProcess first probes, once in each process, whether
// pidfds work, with a process of its own (pidfd_open, waitid, a vfork'd
// clone that exits): 150 to 190 µs more before a run's first step starts,
// for a handle os/exec then waits with in a blocking waitid. On Linux
// the child's handle comes from its clone here (forkExec), and the wait
// is the network poller's (waitChild). What os/exec does besides is done
// here as it does it: the program looked up on PATH, the environment
// (this process's when none is given, PWD then set to the folder)
// without duplicates, standard input from a file, /dev/null, or a pipe
// fed by a goroutine.

// spawned is a child started by spawn.
type spawned struct {
	pid int
	// pidfd is a handle of the child's process, -1 when the system gave
	// none (waitChild).
	pidfd int
	// fed ends with the error of the goroutine that writes a Stdin that is
	// not a file into the child's standard input; nil when there is none.
	fed chan error
}

// spawn starts c with its standard output and error on stdout and stderr,
// in the process group and session attr asks.
func spawn(c Command, stdout, stderr *os.File, attr *syscall.SysProcAttr) (*spawned, error) {
	path, err := programPath(c)
	if err != nil {
		return nil, err
	}
	env, err := childEnv(c)
	if err != nil {
		return nil, err
	}
	stdin, feed, err := childStdin(c.Stdin)
	if err != nil {
		return nil, err
	}
	pid, pidfd, err := forkExec(path, c.Args, &syscall.ProcAttr{Dir: c.Dir, Env: env,
		Files: []uintptr{stdin.Fd(), stdout.Fd(), stderr.Fd()}, Sys: attr})
	runtime.KeepAlive(stdout)
	runtime.KeepAlive(stderr)
	if feed != nil {
		stdin.Close() // the child holds its own copy
	}
	if err != nil {
		if feed != nil {
			feed.Close()
		}
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	s := &spawned{pid: pid, pidfd: pidfd}
	if feed != nil {
		s.fed = make(chan error, 1)
		go func() {
			_, err := io.Copy(feed, c.Stdin)
			if closeErr := feed.Close(); err == nil {
				err = closeErr
			}
			s.fed <- err
		}()
	}
	return s, nil
}

// programPath is the file to run: Path when the caller looked Args[0] up
// already, else Args[0] looked up on PATH when it is a bare name (as
// exec.Command does, with its errors), else Args[0] as given.
func programPath(c Command) (string, error) {
	if c.Path != "" {
		return c.Path, nil
	}
	name := c.Args[0]
	if filepath.Base(name) != name {
		return name, nil
	}
	return exec.LookPath(name)
}

// childEnv is the child's environment as os/exec makes it: Env, or this
// process's with PWD set to Dir; of a variable given twice the last
// value is kept, an entry that is not NAME=value is kept as it is (an
// empty one dropped), and a NUL in an entry is refused.
func childEnv(c Command) ([]string, error) {
	env := c.Env
	if env == nil {
		env = os.Environ()
		if c.Dir != "" {
			if pwd, err := filepath.Abs(c.Dir); err == nil {
				env = append(env, "PWD="+pwd)
			}
		}
	}
	seen := make(map[string]bool, len(env))
	kept := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("exec: environment variable contains NUL")
		}
		eq := strings.IndexByte(kv, '=')
		if eq == 0 {
			eq = strings.IndexByte(kv[1:], '=') + 1 // a name that starts with =
		}
		switch {
		case eq < 0 && kv != "":
			kept = append(kept, kv) // not NAME=value: left as it is
		case eq >= 0 && !seen[kv[:eq]]:
			seen[kv[:eq]] = true
			kept = append(kept, kv)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept, nil
}

// childStdin is the file the child reads as its standard input: r itself
// when it is a file, /dev/null when it is nil (devNull: not to be
// closed), else the read end of a pipe whose write end (feed) is to be
// written r and closed.
func childStdin(r io.Reader) (stdin, feed *os.File, err error) {
	switch r := r.(type) {
	case nil:
		stdin, err = devNull()
		return stdin, nil, err
	case *os.File:
		return r, nil, nil
	}
	return os.Pipe()
}

// devNull is /dev/null, opened once for the standard input of every step
// that has none: an open, a look at it and a close less at each step. An
// open that failed (too many files open) is tried again at the next step.
func devNull() (*os.File, error) {
	sharedDevNull.Lock()
	defer sharedDevNull.Unlock()
	if sharedDevNull.f == nil {
		// Opened bare: os.Open would make it non-blocking, offer it to
		// the poller (which refuses a character device of this kind) and
		// make it blocking again, four calls more on the way to the step.
		fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: os.DevNull, Err: err}
		}
		sharedDevNull.f = os.NewFile(uintptr(fd), os.DevNull)
	}
	return sharedDevNull.f, nil
}

var sharedDevNull struct {
	sync.Mutex
	f *os.File
}

// wait4 waits for the child pid to exit, and reaps it.
func wait4(pid int) (syscall.WaitStatus, error) {
	var status syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &status, 0, nil)
		if err != syscall.EINTR {
			return status, err
		}
	}
}
