package local_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// catchAhead starts catching the run's signals ahead, as pipeline run's
// main does, and waits until they are caught.
func catchAhead(t *testing.T) {
	t.Helper()
	// As at a process's start: an earlier test may have kept them.
	local.ForgetKeptSignals()
	local.CatchSignalsAhead()
	t.Cleanup(local.ForgetKeptSignals)
	local.AwaitSignalsCaughtAhead()
}

// The run takes the signals caught ahead from the goroutine that raised
// them again before it: a Ctrl+C during the run pauses it (its step
// SIGINTs this process, its runner), and the process goes on. Were the
// goroutine still watching, it would give the SIGINT back and end the
// test's process.
func TestSignalsCaughtAheadAreTheRunsOnceItTakesThem(t *testing.T) {
	dir := t.TempDir()
	// The step's shell is the runner's child: $PPID is this process.
	file, plan := pipelineIn(t, dir, `version: 1
phases: [{name: one, steps: [{run: "test -f go || { kill -INT $PPID; exec sleep 60; }"}]}]
`)
	catchAhead(t)
	sess, err := session.Open(context.Background(), storeIn(t, dir), session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	view := newTestView()
	driver := &local.Driver{View: view, Clock: clock.Real{}, Grace: testwait.Failsafe, Signals: true}
	s, err := driver.Run(context.Background(), sess, sess.Start(time.Now()))
	if err != nil || s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonInterrupted {
		t.Fatalf("run: %+v, %v", s, err)
	}
	if said := view.saidText(); !strings.Contains(said, "interrupted (SIGINT): stopping the step, then pausing") {
		t.Errorf("said %q", said)
	}
	write(t, dir, "go")
	s, err = driver.Run(context.Background(), sess, engine.Resumed{At: time.Now()})
	if err != nil || s.Status != engine.StatusCompleted {
		t.Fatalf("resume: %+v, %v", s, err)
	}
}

// write makes the file name in dir.
func write(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(dir+"/"+name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A SIGPIPE caught ahead of the run is done again by a write to the
// output whose reader is gone, and that write ends the process by
// SIGPIPE, as the write that raised it would have. A Unix socket (the
// pipes of a process Node.js started, the journal's stream) is such an
// output too: poll says POLLHUP there, not POLLERR as for a pipe.
// Regression: only an output with POLLERR was written to, and a process
// whose standard error was a closed socket went on (exit 0 where it was
// killed by SIGPIPE). The write is made in a process of its own, whose
// standard error is the socket.
func TestASIGPIPECaughtAheadIsDoneAgainOnAClosedSocket(t *testing.T) {
	if os.Getenv("PIPELINE_TEST_WRITE_TO_CLOSED_OUTPUT") != "" {
		local.WriteToClosedOutput()
		os.Exit(0)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	socket := os.NewFile(uintptr(fds[0]), "socket")
	defer socket.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestASIGPIPECaughtAheadIsDoneAgainOnAClosedSocket$")
	cmd.Env = append(os.Environ(), "PIPELINE_TEST_WRITE_TO_CLOSED_OUTPUT=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, socket
	err = cmd.Run()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("wait status %v (%v), want killed by SIGPIPE; output: %s", ws, err, out.String())
	}
}
