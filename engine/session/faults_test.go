package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

func TestCheckIDAcceptsIDsAndTheirStartsOnly(t *testing.T) {
	id := session.NewSessionID(time.Date(2026, 11, 25, 9, 30, 0, 123e6, time.UTC))
	if !strings.HasPrefix(id, "20261125-093000123-") || len(id) != len(session.IDExample) {
		t.Fatalf("NewSessionID made %q", id)
	}
	for _, ok := range []string{id, id[:1], "2026", "20261125-", "20261125-0930", session.IDExample} {
		if err := session.CheckID(ok); err != nil {
			t.Errorf("CheckID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "*", "2026*", "..", "../..", "/etc", "20261125/..", "s1", "20261125-093000123-A1B2C3",
		"20261125-093000123-a1b2c3d", "20261125_093000123", "2026112-", "20261125-093000123-a1b2c3/"} {
		err := session.CheckID(bad)
		if err == nil {
			t.Errorf("CheckID(%q) accepted it", bad)
			continue
		}
		wantRefused(t, err, "YYYYMMDD-HHMMSSmmm-xxxxxx")
	}
}

// Issue 9: complete, given a path for SESSION, opened the folder the path
// named (a meta.json planted there) and wrote the session's files outside
// .pipeline. Every way of naming a session checks the shape first.
func TestSessionArgumentThatIsNotAnIDReachesNoFolder(t *testing.T) {
	p := newProject(t, twoPhases)
	planted := filepath.Join(p.dir, "planted")
	if err := os.MkdirAll(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, "meta.json"), []byte(`{"format":1,"id":"../../planted","key":"k"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../../planted", "*", "../..", ".."} {
		_, err := session.Open(t.Context(), p.st, session.Options{ID: id})
		wantRefused(t, err, "is not a session id")
		_, err = session.Find(p.st, session.Options{ID: id})
		wantRefused(t, err, "is not a session id")
	}
	if entries, _ := os.ReadDir(planted); len(entries) != 1 {
		t.Errorf("files were written beside the planted meta.json: %v", entries)
	}
}

// Issue 9, a full disk: a record that fails stops the recording. The
// event whose record failed is not on disk (its snapshot could not be
// written, so the event is taken back); the session shows paused, reason
// store-error, and nothing more is written; opened again, it continues
// from its files.
func TestARecordThatFailsPausesWithStoreErrorAndWritesNothingMore(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	now := time.Now()
	actions, err := s.Apply(s.Start(now))
	if err != nil || len(actions) == 0 {
		t.Fatalf("start: %v %v", actions, err)
	}
	// A log longer than a stop's state may go into (store.StateInLogMost):
	// the stop's snapshot is a state.json.
	if _, err := s.Apply(engine.Noted{At: now, Notes: strings.Repeat("n", store.StateInLogMost)}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(s.X.Dir, "events.jsonl")
	before, _ := os.ReadFile(log)
	// A folder where state.json goes: the snapshot of the next event
	// that stops the session cannot be written.
	if err := os.Mkdir(filepath.Join(s.X.Dir, "state.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	err = s.Complete(now)
	if err == nil {
		t.Fatal("a completion whose snapshot failed was recorded")
	}
	st := s.State()
	if st.Status != engine.StatusPaused || st.Pause == nil || st.Pause.Reason != engine.ReasonStoreError || st.Pause.Note == "" {
		t.Fatalf("state after a failed record: %+v %+v", st, st.Pause)
	}
	if s.StoreFailed() == nil {
		t.Error("StoreFailed says nothing")
	}
	if after, _ := os.ReadFile(log); string(after) != string(before) {
		t.Errorf("the log after a failed record:\n%s\nwant as before:\n%s", after, before)
	}
	if err := s.Record(engine.Noted{At: now, Notes: "later"}, st); err == nil {
		t.Error("a record after a failed one succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after a failed record: %v", err)
	}
	if after, _ := os.ReadFile(log); string(after) != string(before) {
		t.Errorf("close wrote to the log:\n%s", after)
	}
	if err := os.Remove(filepath.Join(s.X.Dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	again := p.mustOpen(session.Options{ID: s.ID()})
	defer again.Close()
	if !again.Crashed || again.State().Status != engine.StatusRunning {
		t.Errorf("reopened: crashed %v, status %s; want a running session to recover", again.Crashed, again.State().Status)
	}
}

// A session the index lists as paused (a runner killed between its last
// event and its snapshot) whose log says completed is not picked for a
// resume: run starts a new one, and the listing catches up.
func TestStaleIndexDoesNotMakeRunResumeAFinishedSession(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	now := time.Now()
	if _, err := s.Apply(s.Start(now), engine.PauseRequested{At: now, Reason: engine.ReasonHuman}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The completion reaches the log, and not the snapshot nor the index.
	x, err := p.st.Session(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Append("Completed", []byte(`{"At":"2026-11-25T10:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	x.Close()
	next := p.mustOpen(session.Options{Create: session.IfNone, Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning}})
	defer next.Close()
	if !next.Created || next.ID() == s.ID() {
		t.Errorf("run picked %s (created %v), want a new session", next.ID(), next.Created)
	}
	list, err := p.st.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range list {
		if sum.ID == s.ID() && sum.Status != "completed" {
			t.Errorf("%s is still listed %s", sum.ID, sum.Status)
		}
	}
}

// An environment failure of the store at Open (here a link where the
// lock file goes) is a refusal: exit 2, with the way out.
func TestOpenRefusesAStoreItCannotUse(t *testing.T) {
	p := newProject(t, twoPhases)
	key := session.KeyOf(p.st, p.file, p.plan)
	if err := os.MkdirAll(filepath.Join(p.st.Root, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(p.dir, "victim")
	if err := os.WriteFile(victim, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(p.st.Root, "locks", key+".lock")); err != nil {
		t.Fatal(err)
	}
	_, err := p.open(session.Options{Create: session.Always})
	wantRefused(t, err, "--state-dir")
	if !errors.Is(err, store.ErrSymlink) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "mine" {
		t.Errorf("the link's target holds %q", got)
	}
}
