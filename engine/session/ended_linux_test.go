package session_test

import (
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// A runner that ends its session cleanly says so in the lock's holder,
// and the next Open does not read that session again; one that lets the
// lock go with a step's process group still recorded does not, and the
// next Open stops what that group left running.
func TestTheHolderSaysWhetherItsSessionEndedCleanly(t *testing.T) {
	p := newProject(t, twoPhases)
	s := p.mustOpen(session.Options{Create: session.Always})
	pause := func(s *session.Session) {
		t.Helper()
		if _, err := s.Apply(s.Start(time.Now()), engine.PauseRequested{At: time.Now(), Reason: engine.ReasonHuman},
			engine.StepFinished{At: time.Now(), Result: engine.StepResult{ExitCode: -1, Stopped: true}}); err != nil {
			t.Fatal(err)
		}
	}
	pause(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if h, err := p.st.Holder(s.Key); err != nil || !h.Ended || h.Session != s.ID() {
		t.Fatalf("after a clean end the holder is %+v (%v), want ended, session %s", h, err, s.ID())
	}

	// A step's process group left recorded, its leader dead and a child
	// of it running: not ended, and swept.
	pgid, pidfd := leftGroup(t)
	s = p.mustOpen(session.Options{Create: session.Always})
	pause(s)
	s.StepProcess(pgid)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if h, _ := p.st.Holder(s.Key); h.Ended {
		t.Fatalf("with a step's process group recorded the holder says ended: %+v", h)
	}
	next := p.mustOpen(session.Options{Create: session.Always})
	defer next.Close()
	awaitGone(t, pidfd, "what the last holder's step left, after the next Open,")
}
