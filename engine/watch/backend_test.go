package watch

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// fakeBackend holds sessions elsewhere: Latest says where each stands,
// Resume records the resume and ends the session as ends says.
type fakeBackend struct {
	mu      sync.Mutex
	latest  []Latest
	resumed chan string
	ends    engine.State
}

func (f *fakeBackend) Latest(context.Context, string) ([]Latest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Latest(nil), f.latest...), nil
}

func (f *fakeBackend) Changed(context.Context, string, *spec.Plan) (bool, error) { return false, nil }

func (f *fakeBackend) Resume(_ context.Context, id string, _ *spec.Plan) (engine.State, error) {
	f.mu.Lock()
	for i := range f.latest {
		if f.latest[i].ID == id {
			f.latest[i].Status, f.latest[i].Reason = f.ends.Status, ""
		}
	}
	f.mu.Unlock()
	f.resumed <- id
	return f.ends, nil
}

func backendPipeline(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// On a Backend, a session paused by a rate limit is resumed there at its
// resume_after, not before, with no change of any file; nothing is run
// here and no store is made.
func TestBackendRateLimitedSessionResumesAtItsResumeAfter(t *testing.T) {
	file := backendPipeline(t, "version: 1\nphases: [{name: work, steps: [{run: \"true\"}]}]\n")
	start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	after := start.Add(time.Hour)
	b := &fakeBackend{resumed: make(chan string, 4), ends: engine.State{Status: engine.StatusCompleted},
		latest: []Latest{{ID: "s1", Key: "k1", Status: engine.StatusPaused, Reason: engine.ReasonRateLimit, ResumeAfter: &after}}}
	fake := clock.NewFake(start)
	events, _ := startWatch(t, Options{Pipelines: []Pipeline{{File: file}}, Backend: b, Clock: fake})
	await(t, events, EventReady)
	fake.Advance(time.Hour - time.Second)
	select {
	case id := <-b.resumed:
		t.Fatalf("%s resumed before its resume_after", id)
	default:
	}
	fake.Advance(time.Second)
	resumed := await(t, events, EventResumed)
	if resumed.Session != "s1" || resumed.Change != ChangeDue || resumed.Reason != engine.ReasonRateLimit {
		t.Fatalf("resumed %+v, want s1 at its resume_after", resumed)
	}
	if id := <-b.resumed; id != "s1" {
		t.Fatalf("the backend resumed %s", id)
	}
	if done := await(t, events, EventCompleted); done.Session != "s1" {
		t.Fatalf("completed %+v", done)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(file), ".pipeline")); !os.IsNotExist(err) {
		t.Fatalf("a store was made beside phases.yaml: %v", err)
	}
}

// On a Backend, a change of a file under a watch: glob resumes a paused
// session there, unless Reasons leaves its pause out; a session running
// there is skipped.
func TestBackendWatchGlobAndReasons(t *testing.T) {
	file := backendPipeline(t, "version: 1\nwatch: [\"docs/*.md\"]\nphases: [{name: work, steps: [{run: \"true\"}]}]\n")
	dir := filepath.Dir(file)
	if err := os.Mkdir(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &fakeBackend{resumed: make(chan string, 4), ends: engine.State{Status: engine.StatusPaused, Pause: &engine.Firing{Reason: reasonCheckpoint}},
		latest: []Latest{
			{ID: "s1", Key: "k1", Status: engine.StatusPaused, Reason: reasonCheckpoint},
			{ID: "s2", Key: "k2", Status: engine.StatusPaused, Reason: engine.ReasonHuman},
		}}
	noDebounce := time.Duration(0)
	events, _ := startWatch(t, Options{Pipelines: []Pipeline{{File: file}}, Backend: b, Debounce: &noDebounce,
		Reasons: []string{reasonCheckpoint}})
	await(t, events, EventReady)
	if err := os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// s1 comes first (sessions are taken oldest first), then s2.
	resumed := await(t, events, EventResumed)
	if resumed.Session != "s1" || resumed.Change != ChangeWatched || resumed.File == "" {
		t.Fatalf("resumed %+v, want s1 for the watched file", resumed)
	}
	skipped := await(t, events, EventSkipped)
	if skipped.Session != "s2" || skipped.Change != ChangeWatched {
		t.Fatalf("skipped %+v, want s2, whose pause --reasons leaves out", skipped)
	}
	if paused := await(t, events, EventPaused); paused.Session != "s1" || paused.Reason != reasonCheckpoint {
		t.Fatalf("paused %+v, want s1 paused again at a checkpoint", paused)
	}
}

// reasonCheckpoint is the reason of a pause_when trigger named
// checkpoint, as a pipeline's checkpoint pauses.
const reasonCheckpoint = "checkpoint"
