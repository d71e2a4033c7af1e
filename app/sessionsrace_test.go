package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
)

// A runner that paused and let go of its lock between the read of the
// index and the look at the locks was listed paused, runner-died, though
// it paused at a checkpoint.
func TestSessionsOfARunnerEndingWhileListedIsNotDied(t *testing.T) {
	p := newProject(t, "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	statusOf := func(id string) app.SessionLine {
		list, err := app.Sessions(context.Background(), app.SessionsRequest{Pipeline: p.pipeline()})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Sessions {
			if s.ID == id {
				return s
			}
		}
		t.Fatalf("session %s not listed", id)
		return app.SessionLine{}
	}

	runner := p.started()
	ended := false
	*app.BetweenListAndLock = func() {
		if ended {
			return
		}
		ended = true
		if _, err := runner.Apply(engine.StepFinished{At: time.Now(), Result: engine.StepResult{Checkpoint: true}}); err != nil {
			t.Error(err)
		}
		if err := runner.Close(); err != nil {
			t.Error(err)
		}
	}
	defer func() { *app.BetweenListAndLock = nil }()
	got := statusOf(runner.ID())
	if !ended {
		t.Fatal("the runner was never ended between the index and the locks")
	}
	if got.Status != string(engine.StatusPaused) || got.PauseReason == engine.ReasonRunnerDied {
		t.Errorf("listed %s (%s); want paused at its checkpoint, not runner-died", got.Status, got.PauseReason)
	}
	runner, ended = p.started(), false
	if states := app.SessionStates(p.dir + "/.pipeline"); !ended || states[runner.ID()].PauseReason == engine.ReasonRunnerDied {
		t.Errorf("SessionStates (runner ended between: %v): %+v", ended, states[runner.ID()])
	}
	*app.BetweenListAndLock = nil

	// Another session started in the same store is listed running while its runner
	// holds the lock.
	live := p.started()
	if got := statusOf(live.ID()); got.Status != string(engine.StatusRunning) {
		t.Errorf("a session whose runner holds its lock is listed %s (%s)", got.Status, got.PauseReason)
	}
}
