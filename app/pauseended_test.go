package app_test

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// pipeline pause whose SIGTERM reaches the runner as its run has ended
// (the runner drops it, or it is past its last event) says how the
// session ended, not "paused": the runner here completes the session as
// the signal comes, and lets its lock go.
func TestAPauseMeetingTheRunsEndSaysHowItEnded(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: one\n    steps: [{run: 'true'}]\n")
	sess := p.started()
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	defer signal.Stop(terms)
	ended := make(chan error, 1)
	go func() {
		<-terms
		ended <- errors.Join(sess.Complete(time.Now()), sess.Close())
	}()
	r, err := app.Pause(context.Background(), app.PauseRequest{Pipeline: p.pipeline(), Session: sess.ID(), Wait: testwait.Failsafe})
	if closeErr := <-ended; closeErr != nil {
		t.Fatal(closeErr)
	}
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	if r.Result != string(engine.StatusCompleted) {
		t.Errorf("pause of a session that completed as it was asked to pause: %q, want %q", r.Result, engine.StatusCompleted)
	}
}
