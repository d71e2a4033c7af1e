package session_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/session"
)

// The live file is gone once no step runs: the one a step's progress
// wrote, and the one a runner that died left in a session opened again
// (a new session's folder holds none, and its step's end removes
// nothing).
func TestTheLiveFileIsGoneWhenNoStepRuns(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.IfNone})
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(p.st.Root, "sessions", s.ID(), "live.json")
	s.SetLive(session.Live{At: time.Now(), Phase: "one", Step: "run", Attempt: 1})
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("the step's progress was not kept: %v", err)
	}
	s.SetLive(session.Live{})
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Fatalf("the live file outlived its step: %v", err)
	}
	s.SetLive(session.Live{}) // a step that kept none ends
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A runner that died while its step ran left its live file.
	if err := os.WriteFile(live, []byte(`{"phase":"one","step":"run","attempt":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	again := p.mustOpen(session.Options{ID: s.ID()})
	defer again.Close()
	if again.Created {
		t.Fatal("the session was made again")
	}
	again.SetLive(session.Live{})
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Fatalf("the dead runner's live file outlived the next step: %v", err)
	}
}
