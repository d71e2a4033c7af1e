package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/internal/tokens"
)

// Issue 23, item 15: pipeline run resumed an older paused session when
// the newest of its pipeline and spec had failed. Run takes the newest:
// it resumes it when it is paused (or its runner died), and otherwise
// starts a new session, saying which older one it passed over.
func TestIssue23RunTakesTheNewestSession(t *testing.T) {
	p := newProject(t, "version: 1\ndefaults: {retry: {when: \"false\"}}\nphases: [{name: one, steps: [{run: 'true'}]}, {name: two, steps: [{run: 'true'}]}]\n")
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	// newer makes a session that sorts after every earlier one (ids are
	// made from the time) and leaves it with its first step ended by
	// result.
	var last string
	newer := func(result engine.StepResult) string {
		t.Helper()
		for {
			s := p.mustOpen(session.Options{Create: session.Always})
			if s.ID() <= last {
				// Made in the same millisecond, and sorted before: again.
				s.Close()
				continue
			}
			if _, err := s.Apply(s.Start(now), engine.StepFinished{At: now, Result: result}); err != nil {
				t.Fatal(err)
			}
			if result.Checkpoint {
				if s.State().Status != engine.StatusPaused {
					t.Fatalf("status %s, want paused", s.State().Status)
				}
			}
			last = s.ID()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return last
		}
	}
	paused := newer(engine.StepResult{Checkpoint: true})
	failed := newer(engine.StepResult{ExitCode: 1})

	var said []string
	run := session.Options{Create: session.IfNone, Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning},
		Say: func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }}
	s := p.mustOpen(run)
	if !s.Created || s.ID() == paused {
		t.Fatalf("run opened %s (created %v); the newest, %s, failed: want a new session, not the older paused %s", s.ID(), s.Created, failed, paused)
	}
	text := strings.Join(said, "\n")
	if !strings.Contains(text, paused) || !strings.Contains(text, failed) {
		t.Errorf("run does not say which session it passed over:\n%s", text)
	}
	s.Close()

	// The newest paused: run resumes it.
	paused = newer(engine.StepResult{Checkpoint: true})
	if s := p.mustOpen(run); s.Created || s.ID() != paused {
		t.Errorf("run opened %s (created %v), want the newest, paused %s", s.ID(), s.Created, paused)
	} else {
		s.Close()
	}
}

// Issue 23, item 5: a .pipeline/memory.json that is not a project memory
// was ignored by run and resume: the project's facts left every prompt
// with no word. Starting or resuming a session is refused as memory
// --project is (the file named, what to do); a memory that breaks while
// a session runs is said with the prompt it is left out of.
func TestIssue23CorruptProjectMemoryIsNotIgnored(t *testing.T) {
	p := newProject(t, twoPhases)
	paused := p.mustOpen(session.Options{Create: session.Always})
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	if _, err := paused.Apply(paused.Start(now), engine.StepFinished{At: now, Result: engine.StepResult{Checkpoint: true}}); err != nil {
		t.Fatal(err)
	}
	id := paused.ID()
	paused.Close()
	memory := filepath.Join(p.st.Root, "memory.json")
	if err := os.WriteFile(memory, []byte("{\"version\": 1, \"pinned_facts\": [tru"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, create := range []session.Create{session.Always, session.IfNone} {
		_, err := p.open(session.Options{Create: create, Statuses: []engine.Status{engine.StatusPaused}})
		wantRefused(t, err, memory+" is not a project memory")
		wantRefused(t, err, "pipeline memory pin --project writes a new one")
	}
	s := p.mustOpen(session.Options{ID: id})
	defer s.Close()
	_, err := s.Resume(now, "", "")
	wantRefused(t, err, memory+" is not a project memory")

	// Broken while the session runs: the resume context says so.
	a := engine.StartStep{Phase: 0, Step: 0, Attempt: 1, ResumeContext: true}
	if _, warning := s.ResumeContext(s.State(), a); !strings.Contains(warning, memory) {
		t.Errorf("the resume context leaves the project's facts out with the warning %q", warning)
	}
	if _, err := s.ProjectFacts(); err == nil || !strings.Contains(err.Error(), memory) {
		t.Errorf("ProjectFacts over a broken memory: %v", err)
	}
}

// Issue 23, item 8: ten pipeline memory pin at once on a paused session
// said "the session is running" and left their pins invisible until the
// next resume; on a completed session one of ten was stranded as a
// memory-request-*.json. Pins on a session no runner runs apply at once,
// in turn; a pin left for a runner is taken by it at the latest when it
// closes the session.
func TestIssue23ConcurrentPinsApplyAndNoneIsStranded(t *testing.T) {
	p := newProject(t, "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	pinAll := func(id string, n int) (queued int) {
		t.Helper()
		var wg sync.WaitGroup
		results := make(chan bool, n)
		for i := range n {
			wg.Go(func() {
				ref, err := session.Find(p.st, session.Options{ID: id})
				if err != nil {
					t.Error(err)
					return
				}
				defer ref.Close()
				q, err := ref.Remember(now, []engine.MemoryNote{{Kind: engine.NoteFact, Text: fmt.Sprintf("fact %d", i)}}, nil)
				if err != nil {
					t.Errorf("pin %d: %v", i, err)
				}
				results <- q
			})
		}
		wg.Wait()
		close(results)
		for q := range results {
			if q {
				queued++
			}
		}
		return queued
	}
	check := func(id string, n int) {
		t.Helper()
		ref, err := session.Find(p.st, session.Options{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		s, _, err := ref.State()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.WorkingSet.Pinned); got != n {
			t.Errorf("session %s (%s) has %d pins, want %d", id, s.Status, got, n)
		}
		if left, _ := ref.X.Files("memory-request-"); len(left) > 0 {
			t.Errorf("session %s (%s): requests stranded: %v", id, s.Status, left)
		}
	}
	for _, result := range []engine.StepResult{{Checkpoint: true}, {}} {
		s := p.mustOpen(session.Options{Create: session.Always})
		if _, err := s.Apply(s.Start(now), engine.StepFinished{At: now, Result: result}); err != nil {
			t.Fatal(err)
		}
		id, status := s.ID(), s.State().Status
		s.Close()
		if queued := pinAll(id, 10); queued != 0 {
			t.Errorf("%s session: %d of 10 pins were left for a runner, though none runs", status, queued)
		}
		check(id, 10)
	}

	// A runner holds the session: the pins wait for it, and its Close
	// takes them.
	runner := p.mustOpen(session.Options{Create: session.Always})
	if _, err := runner.Apply(runner.Start(now)); err != nil {
		t.Fatal(err)
	}
	id := runner.ID()
	if queued := pinAll(id, 5); queued != 5 {
		t.Errorf("%d of 5 pins on a running session were left for its runner", queued)
	}
	if err := runner.Close(); err != nil {
		t.Fatal(err)
	}
	check(id, 5)
}

// Issue 23, item 6: memory pin had no bound, and a project memory of 400
// facts went whole into a new session's first prompt. A pin over the
// size of one fact, or past what a memory (the project's, a session's
// human pins) holds, is refused saying which; a memory.json grown past
// it by hand is refused when read; the first prompt's project facts keep
// within the resume context's budget.
func TestIssue23PinnedFactsAreBounded(t *testing.T) {
	p := newProject(t, "version: 1\nresume_context: {budget: 500}\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	_, err := session.PinProject(p.st, p.plan, strings.Repeat("x", engine.MaxMemoryText+1), now)
	wantRefused(t, err, "a pinned fact holds at most 1024")
	long := strings.Repeat("the parser is vendored under third_party ", 30)[:1000]
	for i := range session.MaxPinnedBytes / 1004 {
		if _, err := session.PinProject(p.st, p.plan, fmt.Sprintf("%03d %s", i, long), now); err != nil {
			t.Fatalf("pin %d: %v", i, err)
		}
	}
	_, err = session.PinProject(p.st, p.plan, "one more "+long, now)
	wantRefused(t, err, "the project memory holds")
	wantRefused(t, err, "pipeline memory --project lists them")

	// The first prompt of a fresh conversation: within the budget.
	s := p.mustOpen(session.Options{Create: session.Always})
	facts, err := s.ProjectFacts()
	if err != nil || tokens.Count(facts) > 500 || !strings.Contains(facts, "000 the parser") || !strings.Contains(facts, "more (pipeline memory --project lists them)") {
		t.Errorf("the project facts of a first prompt (%d tokens, budget 500), %v:\n%.400s", tokens.Count(facts), err, facts)
	}
	if _, err := s.Apply(s.Start(now), engine.StepFinished{At: now, Result: engine.StepResult{Checkpoint: true}}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	s.Close()

	// A session's human pins.
	ref, err := session.Find(p.st, session.Options{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	_, err = ref.Remember(now, []engine.MemoryNote{{Kind: engine.NoteFact, Text: strings.Repeat("y", 2000)}}, nil)
	wantRefused(t, err, "a pinned fact holds at most 1024")
	var notes []engine.MemoryNote
	for i := range session.MaxPinnedFacts + 1 {
		notes = append(notes, engine.MemoryNote{Kind: engine.NoteFact, Text: fmt.Sprintf("session fact %d", i)})
	}
	_, err = ref.Remember(now, notes, nil)
	wantRefused(t, err, "session "+id+" holds 200 pinned facts")

	// A memory.json grown by hand past any bound.
	huge := `{"version": 1, "pinned_facts": [` + strings.Repeat(`{"id": 1, "text": "`+strings.Repeat("z", 1000)+`", "at": "2026-11-25T09:00:00Z", "source": "human"},`, 2000) + `{"id": 2, "text": "z", "at": "2026-11-25T09:00:00Z", "source": "human"}]}`
	if err := os.WriteFile(filepath.Join(p.st.Root, "memory.json"), []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = session.LoadProjectMemory(p.st)
	wantRefused(t, err, "more than a project memory holds")
}
