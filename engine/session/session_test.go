package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// project is a pipeline folder with its store.
type project struct {
	t    testing.TB
	dir  string
	file string
	plan *spec.Plan
	st   *store.Store
}

func newProject(t testing.TB, yamlText string) *project {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
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
	return &project{t: t, dir: dir, file: file, plan: plan, st: st}
}

func (p *project) open(o session.Options) (*session.Session, error) {
	o.File, o.Plan = p.file, p.plan
	return session.Open(context.Background(), p.st, o)
}

func (p *project) mustOpen(o session.Options) *session.Session {
	p.t.Helper()
	s, err := p.open(o)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

const twoPhases = "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}, {name: two, steps: [{run: 'true'}]}]\n"

func wantRefused(t *testing.T, err error, text string) {
	t.Helper()
	var refused *session.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), text) {
		t.Fatalf("want a refusal saying %q, got %v", text, err)
	}
}

// Open makes a session only as asked, and keeps a second opener of the
// same pipeline and spec out while the first holds it.
func TestOpenCreatesAsAsked(t *testing.T) {
	p := newProject(t, twoPhases)
	paused := session.Options{Statuses: []engine.Status{engine.StatusPaused}}
	if _, err := p.open(paused); err == nil {
		t.Fatal("Create: Never made a session")
	} else {
		wantRefused(t, err, "no paused session")
	}
	s := p.mustOpen(session.Options{Create: session.IfNone})
	if !s.Created || s.Crashed {
		t.Fatalf("created %v crashed %v", s.Created, s.Crashed)
	}
	if _, err := p.open(session.Options{Create: session.Always}); err == nil {
		t.Fatal("a second Open got in while the first held the lock")
	} else {
		wantRefused(t, err, "already running")
	}
	if _, err := s.Resume(time.Now(), "", ""); err == nil {
		t.Error("a session that never started was resumed")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// A session marked running when it is opened had a runner that died: it is
// crashed, recovers at its step, and what its step left behind is
// stopped.
func TestOpenDetectsACrashAndSweepsOrphans(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	id := s.ID()
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	if s.State().Status != engine.StatusRunning {
		t.Fatalf("state %+v", s.State())
	}
	// A process group that is gone: the sweep must not touch anyone.
	s.StepProcess(1 << 30)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var said []string
	s = p.mustOpen(session.Options{ID: id, Say: func(f string, a ...any) { said = append(said, f) }})
	defer s.Close()
	if !s.Crashed || s.Created {
		t.Fatalf("crashed %v created %v", s.Crashed, s.Created)
	}
	if h, err := p.st.Holder(s.Key); err != nil || len(h.Steps) != 0 || h.Session != id {
		t.Errorf("the step's process group was not cleared from the lock's holder: %+v, %v", h, err)
	}
	if len(said) != 0 {
		t.Errorf("said %q about a group that is gone", said)
	}
	events, err := s.Resume(time.Now(), "look at the logs", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("events %#v", events)
	}
	if _, ok := events[0].(engine.Noted); !ok {
		t.Errorf("first event %#v, want the notes", events[0])
	}
	if ev, ok := events[1].(engine.Recovered); !ok || ev.Plan != p.plan.Digest {
		t.Errorf("last event %#v, want Recovered with the plan's digest", events[1])
	}
	if _, err := s.Resume(time.Now(), "", "two"); err == nil {
		t.Error("a crashed session jumped to a phase")
	}
}

// Resume, Note and Complete check what they are asked.
func TestResumeNoteComplete(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	id := s.ID()
	if _, err := s.Apply(s.Start(time.Now()), engine.PauseRequested{At: time.Now(), Reason: engine.ReasonHuman},
		engine.StepFinished{At: time.Now(), Result: engine.StepResult{ExitCode: -1, Stopped: true}}); err != nil {
		t.Fatal(err)
	}
	if s.State().Status != engine.StatusPaused {
		t.Fatalf("state %+v", s.State())
	}
	s.Close()

	s = p.mustOpen(session.Options{ID: id})
	if _, err := s.Resume(time.Now(), "", "nope"); err == nil {
		t.Error("--phase nope was accepted")
	} else {
		wantRefused(t, err, `"nope" is not a phase`)
	}
	if err := s.Note(time.Now(), "remember the cache"); err != nil {
		t.Fatal(err)
	}
	events, err := s.Resume(time.Now(), "go", "two")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := events[0].(engine.Resumed); !ok || r.Phase != "two" || r.Notes != "go" || r.Plan != p.plan.Digest {
		t.Errorf("resume events %#v", events)
	}
	if err := s.Complete(time.Now()); err != nil {
		t.Fatal(err)
	}
	if s.State().Status != engine.StatusCompleted || len(s.State().Phases[0].Notes) != 1 {
		t.Errorf("state %+v", s.State())
	}
	if err := s.Note(time.Now(), "too late"); err == nil {
		t.Error("notes on a completed session")
	}
	s.Close()

	ref, err := session.Find(p.st, session.Options{File: p.file, Plan: p.plan})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	got, crashed, err := ref.State()
	if err != nil || crashed || got.Status != engine.StatusCompleted {
		t.Errorf("Find: %+v crashed %v err %v", got, crashed, err)
	}
	if _, err := session.Find(p.st, session.Options{File: p.file, Plan: p.plan,
		Statuses: []engine.Status{engine.StatusPaused}}); err == nil {
		t.Error("Find found a paused session where there is none")
	}
	if _, err := session.Find(p.st, session.Options{ID: "../../etc"}); err == nil {
		t.Error("Find accepted a path for an id")
	}
}

// A session whose plan lost a phase is refused, with what to do.
func TestOpenRefusesChangedPhases(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	id := s.ID()
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(p.file, []byte("version: 1\nphases: [{name: only, steps: [{run: 'true'}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := session.Open(context.Background(), p.st, session.Options{ID: id})
	wantRefused(t, err, "run with --new")
}

// Issue 23 (item 22): "no [paused running failed] session" printed a Go
// list. The statuses are written in words.
func TestIssue23NoSessionOfStatusesInWords(t *testing.T) {
	p := newProject(t, twoPhases)
	for _, c := range []struct {
		statuses []engine.Status
		want     string
	}{
		{[]engine.Status{engine.StatusPaused}, "no paused session of "},
		{[]engine.Status{engine.StatusPaused, engine.StatusRunning}, "no paused or running session of "},
		{[]engine.Status{engine.StatusPaused, engine.StatusRunning, engine.StatusFailed}, "no paused, running or failed session of "},
	} {
		_, openErr := p.open(session.Options{Statuses: c.statuses})
		_, findErr := session.Find(p.st, session.Options{File: p.file, Plan: p.plan, Statuses: c.statuses})
		for _, err := range []error{openErr, findErr} {
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "[]") {
				t.Errorf("%v: %v; want %q and no Go list", c.statuses, err, c.want)
			}
		}
	}
}
