package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// pauseByHand starts s (or resumes it) and pauses it at a human's request:
// a handful of events, the last of which stops the session.
func pauseByHand(t *testing.T, s *session.Session, events ...engine.Event) {
	t.Helper()
	now := time.Now()
	events = append(events, engine.PauseRequested{At: now, Reason: engine.ReasonHuman},
		engine.StepFinished{At: now, Result: engine.StepResult{ExitCode: -1, Stopped: true}})
	if _, err := s.Apply(events...); err != nil {
		t.Fatal(err)
	}
	if s.State().Status != engine.StatusPaused {
		t.Fatalf("status %s, want paused", s.State().Status)
	}
}

// A session that stopped reads the same after its phases.yaml changed:
// what its run decided (here, to go on to phase two) is what its files
// say, not what the new plan would decide when its log is replayed (with
// auto_advance: false, a pause after phase one). The stop's snapshot is
// what holds it, here carried in the log (a short session has no
// state.json): a stop recorded by the log's events alone (tried for a
// short run) reads "paused: phase-complete".
func TestAStoppedSessionReadsTheSameAfterItsPlanChanges(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	now := time.Now()
	if _, err := s.Apply(s.Start(now), engine.StepFinished{At: now, Result: engine.StepResult{ExitCode: 0}}); err != nil {
		t.Fatal(err)
	}
	if s.State().Phase != 1 {
		t.Fatalf("after phase one's step the session is at phase %d, want 1", s.State().Phase)
	}
	pauseByHand(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.X.Dir, "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a short session's stop left state.json (%v): its snapshot goes in its log", err)
	}
	p.plan = planOf(t, "version: 1\nphases: [{name: one, auto_advance: false, steps: [{run: 'true'}]}, {name: two, steps: [{run: 'true'}]}]\n")
	again := p.mustOpen(session.Options{ID: s.ID()})
	defer again.Close()
	if st := again.State(); st.Phase != 1 || st.Status != engine.StatusPaused || st.Pause == nil || st.Pause.Reason != engine.ReasonHuman {
		t.Errorf("read with the new plan: phase %d, %s, pause %+v; want phase 1 (two), paused by a human", st.Phase, st.Status, st.Pause)
	}
}

// A stop whose record fails (here the session's folder deleted under the
// run: its snapshot has nowhere to go) is taken back out of the log.
func TestAStopWhoseRecordFailsIsTakenBack(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	defer s.Close()
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	seq := s.X.Seq()
	log, err := os.Open(filepath.Join(s.X.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	before, err := io.ReadAll(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.X.Dir); err != nil {
		t.Fatal(err)
	}
	err = s.Complete(time.Now())
	if !errors.Is(err, store.ErrRemoved) {
		t.Fatalf("a completion of a deleted session: %v, want ErrRemoved", err)
	}
	after, err := io.ReadAll(io.NewSectionReader(log, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) || s.X.Seq() != seq {
		t.Errorf("the log after a stop whose record failed (seq %d, want %d):\n%s\nwant:\n%s", s.X.Seq(), seq, after, before)
	}
}

// A stop of a session whose log is long is written to state.json, as
// ever: a reader of a long log starts from it, and no copy of a large
// state goes into a log at each of its stops.
func TestALongSessionsStopWritesStateJSON(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	now := time.Now()
	if _, err := s.Apply(s.Start(now), engine.Noted{At: now, Notes: strings.Repeat("n", store.StateInLogMost)}); err != nil {
		t.Fatal(err)
	}
	pauseByHand(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(s.X.Dir, "state.json"))
	if err != nil {
		t.Fatalf("a long session's stop wrote no state.json: %v", err)
	}
	if !bytes.Contains(content, []byte(fmt.Sprintf(`"seq":%d,`, s.X.Seq()))) || !bytes.Contains(content, []byte(`"status":"paused"`)) {
		t.Errorf("state.json is not the stop's (seq %d): %.200s", s.X.Seq(), content)
	}
	log, _ := os.ReadFile(filepath.Join(s.X.Dir, "events.jsonl"))
	if bytes.Contains(log, []byte(`"state":`)) {
		t.Error("a long session's log took a stop's state")
	}
	again := p.mustOpen(session.Options{ID: s.ID()})
	defer again.Close()
	if st := again.State(); st.Status != engine.StatusPaused || st.Pause == nil || st.Pause.Reason != engine.ReasonHuman {
		t.Errorf("read again: %s, pause %+v", st.Status, st.Pause)
	}
}

// A short session stopped (its snapshot in its log) is resumed and
// stopped again: the second stop's state, carried in the log after the
// first's, is what it reads, and its log is whole event lines numbered
// in order.
func TestAShortSessionResumedReadsItsLastStop(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	pauseByHand(t, s, s.Start(time.Now()))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := p.mustOpen(session.Options{ID: s.ID()})
	if again.Crashed {
		t.Error("a session whose stop is in its log reads as crashed")
	}
	now := time.Now()
	if _, err := again.Apply(engine.Resumed{At: now}, engine.StepFinished{At: now, Result: engine.StepResult{ExitCode: 0}}); err != nil {
		t.Fatal(err)
	}
	pauseByHand(t, again)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.X.Dir, "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state.json: %v, want none", err)
	}
	third := p.mustOpen(session.Options{ID: s.ID()})
	defer third.Close()
	if st := third.State(); st.Phase != 1 || st.Status != engine.StatusPaused {
		t.Errorf("after the second stop: phase %d, %s; want phase 1, paused", st.Phase, st.Status)
	}
	var seqs []int64
	if err := third.X.Events(0, func(seq int64, _ string, _ []byte) error {
		seqs = append(seqs, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("the log's events are numbered %v", seqs)
		}
	}
}
