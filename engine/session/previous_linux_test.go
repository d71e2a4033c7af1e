package session_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// A new session sweeps what the steps of the session before it left
// running when that session's runner died while it ran, and leaves alone
// what a session that ended left. Whether it ran is read from its
// snapshot, or from its events when some follow the snapshot (its runner
// died between writing an event and the snapshot after it).
func TestNewSessionSweepsThePreviousSessionOnlyIfItsRunnerDied(t *testing.T) {
	for _, c := range []struct {
		name  string
		end   func(t *testing.T, s *session.Session)
		swept bool
	}{
		{"completed", func(t *testing.T, s *session.Session) {
			if err := s.Complete(time.Now()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"running", func(*testing.T, *session.Session) {}, true},
		{"resumed after its last snapshot", func(t *testing.T, s *session.Session) {
			if _, err := s.Apply(engine.PauseRequested{At: time.Now(), Reason: engine.ReasonHuman},
				engine.StepFinished{At: time.Now(), Result: engine.StepResult{ExitCode: -1, Stopped: true}}); err != nil {
				t.Fatal(err)
			}
			if s.State().Status != engine.StatusPaused {
				t.Fatalf("state %+v", s.State())
			}
			typ, payload, err := engine.EncodeEvent(engine.Resumed{At: time.Now(), Plan: s.Plan.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.X.Append(typ, payload); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t, twoPhases)
			s := p.mustOpen(session.Options{Create: session.Always})
			if _, err := s.Apply(s.Start(time.Now())); err != nil {
				t.Fatal(err)
			}
			// What a step left running outside its process group: found
			// by the session's mark in its environment.
			left := exec.Command("sleep", "600")
			left.Env = append(os.Environ(), session.StepMark(s.ID()))
			if err := left.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- left.Wait() }()
			t.Cleanup(func() {
				left.Process.Kill()
				<-waited
			})
			c.end(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			next := p.mustOpen(session.Options{Create: session.Always})
			defer next.Close()
			if c.swept {
				proctest.AwaitExit(t, left.Process.Pid)
			} else if err := syscall.Kill(left.Process.Pid, 0); err != nil {
				t.Errorf("what the completed session left was stopped: %v", err)
			}
		})
	}
}
