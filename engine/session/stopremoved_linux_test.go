package session_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// A short session's stop whose folder is deleted (pipeline clean) after
// its line is in the log, before its line in the index, fails with
// ErrRemoved, as a stop whose state.json found no folder does: the run
// does not say it completed a session that is gone. (The index lock,
// held here, keeps the stop between the two.)
func TestAStopInTheLogOfASessionRemovedBeforeItsListingFails(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	defer s.Close()
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(p.dir, ".pipeline", "index.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	whole := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(lock.Fd(), unix.F_OFD_SETLK, &whole); err != nil {
		t.Fatal(err)
	}
	completed := make(chan error, 1)
	go func() { completed <- s.Complete(time.Now()) }()
	log := filepath.Join(s.X.Dir, "events.jsonl")
	testwait.Written(t, s.X.Dir, "the stop's line in the log", func() bool {
		content, _ := os.ReadFile(log)
		return bytes.Contains(content, []byte(`"type":"Completed","format"`))
	})
	if err := os.RemoveAll(s.X.Dir); err != nil {
		t.Fatal(err)
	}
	whole.Type = unix.F_UNLCK
	if err := unix.FcntlFlock(lock.Fd(), unix.F_OFD_SETLK, &whole); err != nil {
		t.Fatal(err)
	}
	if err := <-completed; !errors.Is(err, store.ErrRemoved) {
		t.Errorf("a completion of a session removed before its listing: %v, want ErrRemoved", err)
	}
	if st := s.State(); st.Status == engine.StatusCompleted {
		t.Errorf("the session reads %s after a stop that failed", st.Status)
	}
}
