// Package temporaltest starts a real Temporal dev server for the tests of
// the Temporal backend: `temporal server start-dev` of the pinned Temporal
// CLI (v1.5.1), which make test builds once into .cache/bin
// (scripts/install-temporal.sh) and names in PIPELINE_TEMPORAL_CLI.
//
// Those tests carry the build tag temporal: go test ./... with Go alone
// does not compile them, and make test sets the tag. Under the tag a test
// that finds no CLI fails, saying how to get it; it never skips.
//
// Each server listens on 127.0.0.1 only, keeps its state in a SQLite file
// in the test's temporary directory, runs in a process group of its own and
// is stopped, the whole group, when the test ends.
package temporaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// EnvCLI names the environment variable that holds the path of the
// temporal binary; make test sets it.
const EnvCLI = "PIPELINE_TEMPORAL_CLI"

const (
	// The dev server answers in a second or two; a loaded CI machine
	// running the race detector gets far more.
	startTimeout = 90 * time.Second
	// SIGTERM stops the dev server in well under a second; after this
	// grace it gets SIGKILL.
	stopGrace = 15 * time.Second
	// Binding a free port and handing its number over is a race (see
	// freePort): this many tries with a new port each.
	portTries = 3
)

// DevServer is one Temporal dev server, on one port and one database file
// for its whole life, across restarts.
type DevServer struct {
	cli    string
	dbFile string
	port   int
	// flags are more flags of start-dev (StartCLI's).
	flags []string

	// The running process; nil between a stop and the next start.
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	exited  chan struct{} // closed when Wait has returned
	waitErr error
	out     *output

	startTime time.Duration
}

// StartDevServer starts a dev server for the test, waits until its frontend
// answers a health check, and stops it when the test ends. It fails the
// test when PIPELINE_TEMPORAL_CLI is not set or the server does not start.
// flags are more flags of start-dev (see StartCLI).
func StartDevServer(t testing.TB, flags ...string) *DevServer {
	t.Helper()
	// Clean-ups run last registered first: the server's stop, registered
	// after t.TempDir's removal, runs before it, so the server is gone
	// before its database file is removed.
	s, err := Start(t.TempDir(), flags...)
	if err != nil {
		t.Fatalf("temporal dev server: %v", err)
	}
	t.Cleanup(func() { s.stop(t) })
	t.Logf("temporal dev server on %s (pid %d), ready in %v", s.HostPort(), s.PID(), s.startTime.Round(time.Millisecond))
	return s
}

// Start starts a dev server whose database is a file in dir, outside any
// one test: for a server that a package's tests share (stopped by Stop
// after the last of them), or for a benchmark. It returns an error when
// PIPELINE_TEMPORAL_CLI is not set or the server does not start; nothing
// is left running then.
func Start(dir string, flags ...string) (*DevServer, error) {
	cli := os.Getenv(EnvCLI)
	if cli == "" {
		return nil, fmt.Errorf("%s is not set: the Temporal dev server is built by make test (once, into .cache/bin); "+
			"by hand: ./scripts/install-temporal.sh && %s=$PWD/.cache/bin/temporal-1.5.1/temporal go test -tags temporal ./... in the module's root",
			EnvCLI, EnvCLI)
	}
	return StartCLI(cli, dir, flags...)
}

// StartCLI is Start with the temporal binary named, and flags added to
// its start-dev command line (such as --dynamic-config-value KEY=VALUE).
func StartCLI(cli, dir string, flags ...string) (*DevServer, error) {
	if info, err := os.Stat(cli); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not an executable (%v): run make test, or ./scripts/install-temporal.sh", cli, err)
	}
	s := &DevServer{cli: cli, dbFile: filepath.Join(dir, "temporal.db"), flags: flags}
	var err error
	for try := 1; try <= portTries; try++ {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil || !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Stop stops a server that Start started: SIGTERM to its group, SIGKILL
// after the grace. It reports a server that had exited on its own, or
// that did not stop cleanly on SIGTERM.
func (s *DevServer) Stop() error {
	if s.cmd == nil {
		return nil
	}
	cmd := s.cmd
	select {
	case <-s.exited:
		s.kill()
		return fmt.Errorf("temporal dev server (pid %d) had exited (%v):\n%s", cmd.Process.Pid, s.waitErr, s.out.tail())
	default:
	}
	begin := time.Now()
	s.kill()
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("temporal dev server (pid %d) did not stop cleanly on SIGTERM in %v (%v):\n%s",
			cmd.Process.Pid, time.Since(begin).Round(time.Millisecond), cmd.ProcessState, s.out.tail())
	}
	return nil
}

// HostPort is the address of the frontend, for client.Options.HostPort and
// pipeline worker --temporal.
func (s *DevServer) HostPort() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Namespace is the namespace the dev server creates: "default".
func (s *DevServer) Namespace() string { return "default" }

// PID is the process id of the running server (the leader of its process
// group), 0 while it is stopped.
func (s *DevServer) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Output is what the server has printed so far (its log, from
// --log-level error up unless its flags say otherwise).
func (s *DevServer) Output() string { return s.out.String() }

// StartTime is how long the last start took, from exec to a healthy
// frontend.
func (s *DevServer) StartTime() time.Duration { return s.startTime }

// Restart stops the server (SIGTERM to its group, as at the end of the
// test) and starts it again on the same port and database file: workflow
// executions, their histories and timers survive it; connected clients and
// workers reconnect on their own.
func (s *DevServer) Restart(t testing.TB) {
	t.Helper()
	s.stop(t)
	if err := s.start(); err != nil {
		t.Fatalf("temporal dev server restart: %v", err)
	}
	t.Logf("temporal dev server restarted on %s (pid %d), ready in %v", s.HostPort(), s.PID(), s.startTime.Round(time.Millisecond))
}

// Client dials the server with a client that logs nothing, and closes it
// when the test ends.
func (s *DevServer) Client(t testing.TB) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, s.clientOptions())
	if err != nil {
		t.Fatalf("dial the temporal dev server at %s: %v", s.HostPort(), err)
	}
	t.Cleanup(c.Close)
	return c
}

func (s *DevServer) clientOptions() client.Options {
	return client.Options{
		HostPort:  s.HostPort(),
		Namespace: s.Namespace(),
		Logger:    log.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	}
}

var errPortTaken = errors.New("port taken")

// start runs the server and returns once its frontend is healthy, or an
// error that holds its output; on an error nothing is left running.
func (s *DevServer) start() error {
	begin := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"server", "start-dev",
		"--headless",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(s.port),
		"--db-filename", s.dbFile,
		"--log-level", "error"}, s.flags...)
	cmd := exec.CommandContext(ctx, s.cli, args...)
	// The server asks temporal.io for newer versions unless told not to: no
	// network in a test.
	cmd.Env = append(os.Environ(), "TEMPORAL_VERSION_CHECK_DISABLED=1")
	cmd.SysProcAttr = sysProcAttr()
	// The whole group, politely first; Go sends SIGKILL after WaitDelay, and
	// stop sends it to the group as well.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	out := newOutput()
	cmd.Stdout = out.stdout()
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		cancel()
		return fmt.Errorf("start %s: %w", s.cli, err)
	}
	s.cmd, s.cancel, s.out, s.waitErr = cmd, cancel, out, nil
	exited := make(chan struct{})
	s.exited = exited
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()

	err := s.awaitReady(begin)
	if err != nil {
		s.kill()
		if strings.Contains(out.String(), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	}
	s.startTime = time.Since(begin)
	return nil
}

// awaitReady waits for the line the CLI prints once the server's services
// have started ("Server: localhost:PORT"), then for a health check of the
// frontend through the SDK client.
func (s *DevServer) awaitReady(begin time.Time) error {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case <-s.out.ready:
	case <-s.exited:
		return fmt.Errorf("exited before it was ready (%v):\n%s", s.waitErr, s.out.tail())
	case <-deadline.C:
		return fmt.Errorf("not ready after %v:\n%s", startTimeout, s.out.tail())
	}
	ctx, cancel := context.WithDeadline(context.Background(), begin.Add(startTimeout))
	defer cancel()
	c, err := client.DialContext(ctx, s.clientOptions())
	if err != nil {
		return fmt.Errorf("dial %s: %w\n%s", s.HostPort(), err, s.out.tail())
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("health check of %s: %w\n%s", s.HostPort(), err, s.out.tail())
	}
	return nil
}

// stop ends the running server as Stop does; a server that exits on its
// own while the test runs, or does not stop on SIGTERM, fails the test.
func (s *DevServer) stop(t testing.TB) {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Error(err)
	}
}

// kill cancels the command (SIGTERM to the group, SIGKILL after the
// grace), waits for it, and kills anything left in its group.
func (s *DevServer) kill() {
	pid := s.cmd.Process.Pid
	s.cancel()
	<-s.exited
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		panic(fmt.Sprintf("kill process group %d: %v", pid, err))
	}
	s.cmd, s.cancel = nil, nil
}

// freePort asks the kernel for a free port on 127.0.0.1 and closes it again
// for the server to take. That is a race: another process may bind the port
// in between. The dev server (which picks its internal ports the same way)
// then fails at once with "address already in use", and StartDevServer
// tries again with a new port. A port that the server itself picks would
// avoid it, but start-dev requires --port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// output collects what the server prints, for error messages, and closes
// ready when the CLI has printed the line that follows a successful start.
type output struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	stdoutBuf bytes.Buffer
	ready     chan struct{}
	isReady   bool
}

func newOutput() *output { return &output{ready: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// tail is the end of the output, enough for an error message.
func (o *output) tail() string {
	s := o.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

type stdoutWriter struct{ o *output }

func (o *output) stdout() stdoutWriter { return stdoutWriter{o} }

func (w stdoutWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.isReady {
		o.stdoutBuf.Write(p)
		if bytes.Contains(o.stdoutBuf.Bytes(), []byte("\nServer:")) {
			o.isReady = true
			close(o.ready)
		}
	}
	return len(p), nil
}
