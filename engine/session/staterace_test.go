package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// A runner that pauses and lets go of its lock between State's read of
// the session and its look at the lock showed as crashed (paused,
// runner-died), though it had paused at a checkpoint: an MCP status
// call met it so once.
func TestARunnerEndingWhileStateReadsIsNotCrashed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runner, err := Open(context.Background(), st, Options{File: file, Plan: plan, Create: Always})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := runner.Apply(runner.Start(now)); err != nil {
		t.Fatal(err)
	}
	ref, err := Find(st, Options{File: file, Plan: plan, ID: runner.ID()})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	ended := false
	betweenStateAndLock = func() {
		if ended {
			return
		}
		ended = true
		if _, err := runner.Apply(engine.StepFinished{At: now, Result: engine.StepResult{Checkpoint: true}}); err != nil {
			t.Error(err)
		}
		if err := runner.Close(); err != nil {
			t.Error(err)
		}
	}
	defer func() { betweenStateAndLock = nil }()

	s, crashed, err := ref.State()
	if err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Fatal("the runner was never ended between the read and the lock")
	}
	if crashed || s.Status != engine.StatusPaused {
		t.Errorf("state %s, crashed %v; want paused (the runner paused at a checkpoint), not crashed", s.Status, crashed)
	}

	// A session whose runner is really gone is still crashed.
	crashedRef := func() bool {
		other, err := Open(context.Background(), st, Options{File: file, Plan: plan, Create: Always})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Apply(other.Start(now)); err != nil {
			t.Fatal(err)
		}
		id := other.ID()
		other.lock.Release() // as a kill -9 would: the lock goes, the state stays running
		r, err := Find(st, Options{File: file, Plan: plan, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, crashed, err := r.State()
		if err != nil {
			t.Fatal(err)
		}
		return crashed
	}
	if !crashedRef() {
		t.Error("a running session with no runner is not crashed")
	}
}
