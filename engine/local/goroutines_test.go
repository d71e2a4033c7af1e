package local_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// TestARunHasTwoGoroutinesWhileItsStepRuns checks that a run that
// catches signals, its step running, has started two goroutines of the
// driver and the executor: the step's, which waits for the child, and the
// reader of its output. The loop receives the signals itself; every
// goroutine more is handed to another thread when it wakes (a futex
// wake-up, a context switch, at times a new thread).
func TestARunHasTwoGoroutinesWhileItsStepRuns(t *testing.T) {
	// A fake clock: no tick fires, and starts a goroutine, meanwhile.
	h := newHarness(t, `version: 1
phases: [{name: one, steps: [{run: 'read _ < go.fifo'}]}]
`, clock.NewFake(time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)))
	h.driver.Signals = true
	fifo := filepath.Join(h.dir, "go.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := h.start()
	deadline := time.Now().Add(testwait.Failsafe)
	for !stepReading() {
		if time.Now().After(deadline) {
			t.Fatal("the step's output is not being read")
		}
		runtime.Gosched()
	}
	if started := startedByTheRun(); len(started) != 2 {
		t.Errorf("the run has started %d goroutines, want 2 (the step's and its reader):\n%s",
			len(started), bytes.Join(started, []byte("\n\n")))
	}
	// The shell waits for a writer to open the fifo: this lets it go.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("go\n")
	w.Close()
	if s := h.await(done); s.Status != engine.StatusCompleted {
		t.Fatalf("status %s, want completed", s.Status)
	}
}

// stepReading reports whether the executor waits for the step's output.
func stepReading() bool {
	for _, g := range testwait.Goroutines() {
		if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("steps.(*Running).read")) {
			return true
		}
	}
	return false
}

// startedByTheRun are the goroutines that the driver or the executor
// started.
func startedByTheRun() [][]byte {
	var started [][]byte
	for _, g := range testwait.Goroutines() {
		_, creator, _ := bytes.Cut(g, []byte("\ncreated by "))
		if bytes.HasPrefix(creator, []byte("github.com/pipeline-dev/pipeline/engine/local.")) ||
			bytes.HasPrefix(creator, []byte("github.com/pipeline-dev/pipeline/steps.")) {
			started = append(started, g)
		}
	}
	return started
}

// TestKeptSignalsOutliveTheRun checks KeepSignalsCaught: once a run that
// caught signals has ended, a SIGINT neither ends the process (the test
// binary would die of it) nor is lost: the next run takes it and pauses
// at once.
func TestKeptSignalsOutliveTheRun(t *testing.T) {
	local.KeepSignalsCaught()
	first := newHarness(t, "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n", clock.Real{})
	first.driver.Signals = true
	if s := first.await(first.start()); s.Status != engine.StatusCompleted {
		t.Fatalf("status %s, want completed", s.Status)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	next := newHarness(t, "version: 1\nphases: [{name: one, steps: [{run: 'sleep 60'}]}]\n", clock.Real{})
	next.driver.Signals = true
	s := next.await(next.start())
	if s.Status != engine.StatusPaused || s.Pause == nil || s.Pause.Reason != engine.ReasonInterrupted {
		t.Fatalf("status %s, pause %+v; want paused by the SIGINT sent between the runs", s.Status, s.Pause)
	}
}
