package local_test

import (
	"context"
	"os"
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

// A step that waits until the file go is there.
const waitingStep = `version: 1
phases: [{name: one, steps: [{run: "test -f go || exec sleep 60"}]}]
`

// catchAhead starts catching the run's signals ahead, as pipeline run's
// main does, and waits until they are caught.
func catchAhead(t *testing.T) {
	t.Helper()
	// As at a process's start: an earlier test may have kept them.
	local.ForgetKeptSignals()
	local.CatchSignalsAhead()
	t.Cleanup(local.ForgetKeptSignals)
	if local.AwaitSignalsCaughtAhead() {
		t.Fatal("a signal is pending before any was sent")
	}
}

// awaitSignalPending waits until a signal sent to this process waits in
// the signals caught ahead.
func awaitSignalPending(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(testwait.Failsafe); !local.AwaitSignalsCaughtAhead(); {
		if time.Now().After(deadline) {
			t.Fatal("the signal never reached the signals caught ahead")
		}
		time.Sleep(time.Millisecond) // polling a condition
	}
}

// A Ctrl+C caught ahead, before the run, is the run's: it starts its
// first step and stops it at once, as for a Ctrl+C at the step's start,
// and pauses; resume runs the step again.
func TestSignalCaughtAheadStopsTheFirstStepAndPauses(t *testing.T) {
	dir := t.TempDir()
	file, plan := pipelineIn(t, dir, waitingStep)
	catchAhead(t)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	awaitSignalPending(t)
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

// pipeline pause while the run opens its session: its SIGTERM is caught
// ahead, and the run reads the pause request when it takes the signal,
// so it pauses as a human asked, with their notes.
func TestPauseRequestCaughtAheadPausesWithTheNotes(t *testing.T) {
	dir := t.TempDir()
	file, plan := pipelineIn(t, dir, waitingStep)
	catchAhead(t)
	st := storeIn(t, dir)
	sess, err := session.Open(context.Background(), st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ref, err := session.Find(st, session.Options{ID: sess.ID()})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	// RequestPause writes the request, signals this process (the
	// session's runner) and waits for the session to be let go.
	paused := make(chan error, 1)
	go func() { paused <- ref.RequestPause(context.Background(), "look at the logs first", testwait.Failsafe) }()
	awaitSignalPending(t)
	view := newTestView()
	driver := &local.Driver{View: view, Clock: clock.Real{}, Grace: testwait.Failsafe, Signals: true}
	s, err := driver.Run(context.Background(), sess, sess.Start(time.Now()))
	if err != nil || s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonHuman || s.Pause.Note != "look at the logs first" {
		t.Fatalf("run: %+v, %v", s, err)
	}
	if said := view.saidText(); !strings.Contains(said, local.CausePauseCommand) {
		t.Errorf("said %q", said)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-paused; err != nil {
		t.Fatalf("pause: %v", err)
	}
}

// write makes the file name in dir.
func write(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(dir+"/"+name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
