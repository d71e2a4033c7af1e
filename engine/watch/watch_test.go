package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// rateLimited makes a session of the pipeline in dir paused by a rate
// limit until resumeAfter.
func rateLimited(t *testing.T, dir string, st *store.Store, now, resumeAfter time.Time) string {
	t.Helper()
	file := filepath.Join(dir, "phases.yaml")
	plan, err := spec.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.Open(context.Background(), st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Apply(sess.Start(now), engine.StepFinished{At: now, Result: engine.StepResult{ExitCode: 1,
		RateLimited: true, ResumeAfter: resumeAfter, Error: "429 Too Many Requests"}}); err != nil {
		t.Fatal(err)
	}
	if s := sess.State(); s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonRateLimit {
		t.Fatalf("the session is %s (%+v), want paused by a rate limit", s.Status, s.Pause)
	}
	return sess.ID()
}

// events runs a watch in the background and returns its events.
func startWatch(t *testing.T, o Options) (<-chan Event, <-chan error) {
	t.Helper()
	events := make(chan Event, 256)
	o.Report = func(e Event) { events <- e }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return events, done
}

func await(t *testing.T, events <-chan Event, kind string) Event {
	t.Helper()
	deadline := time.After(testwait.Failsafe)
	for {
		select {
		case e := <-events:
			if e.Event == kind {
				return e
			}
			if kind != EventSkipped && e.Event == EventResumed {
				t.Fatalf("resumed before %s: %+v", kind, e)
			}
		case <-deadline:
			t.Fatalf("no %s event", kind)
		}
	}
}

// A session paused by a rate limit is resumed at its resume_after, with no
// change of any file, and not before: a change of its spec before then is
// skipped.
func TestRateLimitedSessionResumesAtItsResumeAfter(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.md"), []byte("# spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte("version: 1\nspec: spec.md\nphases: [{name: work, steps: [{run: \"true\"}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	resumeAfter := start.Add(time.Hour)
	id := rateLimited(t, dir, st, start, resumeAfter)
	fake := clock.NewFake(start)
	noDebounce := time.Duration(0)
	events, _ := startWatch(t, Options{Pipelines: []Pipeline{{File: filepath.Join(dir, "phases.yaml"), Store: st}},
		Debounce: &noDebounce, Clock: fake})
	await(t, events, EventReady)

	// Saved in one step (a temporary file renamed over it): a write in
	// place can come as two events, and the second, taken after the clock
	// moved, would resume the session for the spec rather than the time.
	tmp := filepath.Join(dir, "spec.md.new")
	if err := os.WriteFile(tmp, []byte("# spec\nchanged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "spec.md")); err != nil {
		t.Fatal(err)
	}
	skipped := await(t, events, EventSkipped)
	if skipped.Session != id || skipped.Change != ChangeSpec {
		t.Errorf("skipped %+v, want the session's spec change", skipped)
	}
	fake.Advance(time.Hour - time.Second)
	fake.Advance(time.Second)
	resumed := await(t, events, EventResumed)
	if resumed.Session != id || resumed.Change != ChangeDue || resumed.Reason != engine.ReasonRateLimit {
		t.Errorf("resumed %+v, want %s at its resume_after", resumed, id)
	}
	if resumed.Time.Before(resumeAfter) {
		t.Errorf("resumed at %s, before its resume_after %s", resumed.Time, resumeAfter)
	}
	if done := await(t, events, EventCompleted); done.Session != id {
		t.Errorf("completed %+v, want %s", done, id)
	}
}

// A second watcher of the same store is refused, whatever pipeline of it
// it names.
func TestSecondWatcherOfAStoreIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("version: 1\nphases: [{name: work, steps: [{run: \"true\"}]}]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	events, _ := startWatch(t, Options{Pipelines: []Pipeline{{File: filepath.Join(dir, "a.yaml"), Store: st}}})
	await(t, events, EventReady)
	err = Run(context.Background(), Options{Pipelines: []Pipeline{{File: filepath.Join(dir, "b.yaml"), Store: st}}})
	var refused *session.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("second watcher: %v, want refused", err)
	}
}
