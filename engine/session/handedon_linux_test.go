package session_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// A runner killed while its step ran, then a runner killed between taking
// the lock and naming its session in it (its holder names no session,
// and hands on the first one's step group): the next Open, of another
// session, stops what the first one's step left outside its group too (a
// daemon that left it: found by the first session's mark), not only what
// stayed in the group. The session is named by the group handed on.
func TestAHolderKilledBeforeNamingItsSessionHandsOnTheMarkSweep(t *testing.T) {
	p := newProject(t, twoPhases)
	pgid, pidfd := leftGroup(t)
	s := p.mustOpen(session.Options{Create: session.Always})
	if _, err := s.Apply(s.Start(time.Now())); err != nil {
		t.Fatal(err)
	}
	escaped := exec.Command("sleep", "600")
	escaped.Env = append(os.Environ(), session.StepMark(s.ID()))
	if err := escaped.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- escaped.Wait() }()
	t.Cleanup(func() {
		escaped.Process.Kill()
		<-waited
	})
	s.StepProcess(pgid)
	if err := s.Close(); err != nil { // as a kill -9 leaves it: running, its group recorded
		t.Fatal(err)
	}
	killed, err := p.st.Lock(s.Key, store.Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	killed.Release()
	if h, err := p.st.Holder(s.Key); err != nil || h.Session != "" || len(h.Steps) != 1 {
		t.Fatalf("the killed holder's record: %+v, %v; want no session, the group handed on", h, err)
	}
	next := p.mustOpen(session.Options{Create: session.Always})
	defer next.Close()
	awaitGone(t, pidfd, "what stayed in the first runner's step group")
	proctest.AwaitExit(t, escaped.Process.Pid)
}
