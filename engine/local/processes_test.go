package local_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// awaitOutput waits until the output shown so far contains want: a piece
// of a line the step wrote and flushed.
func (v *testView) awaitOutput(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(testwait.Failsafe)
	for {
		v.mu.Lock()
		found := strings.Contains(v.output.String(), want)
		v.mu.Unlock()
		if found {
			return
		}
		select {
		case <-v.chunks:
		case <-timeout:
			t.Fatalf("no %q in the output", want)
		}
	}
}

// Regression: an agent that streams its checkpoint line in pieces
// ("[CHECK", "POINT] design", " drafted") paused at the piece with the
// marker, with the note "design", and lost the rest of the line. The step
// writes each piece once the runner has shown the one before; the clock
// is fake, so the line waits as long as the test takes.
func TestCheckpointNoteWrittenInPiecesIsWhole(t *testing.T) {
	h := newHarness(t, `version: 1
agent: {kind: command, command: [sh, -c, 'printf "[CHECK"; read _ < go.fifo; printf "POINT] design"; read _ < go.fifo; printf " drafted\n"; read _ < go.fifo']}
defaults:
  pause_when: {checkpoint: checkpoint}
phases: [{name: design}]
`, clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)))
	fifo := filepath.Join(h.dir, "go.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// next lets the step go on: opening the fifo waits for the step to
	// open its end, so it is done aside, and released at the end if the
	// step never comes to read (it was stopped).
	next := func() {
		go func() {
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.WriteString("go\n")
				f.Close()
			}
		}()
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := h.start()
	h.view.awaitOutput(t, "[CHECK")
	next()
	h.view.awaitOutput(t, "POINT] design")
	next()
	s := h.await(done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" || s.Pause.Note != "design drafted" {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
}

var daemonLine = regexp.MustCompile(`daemon (\d+)`)

// A daemon a step started (setsid, holding the step's output) dies when
// the step ends, and the run says so; the step's own end is not held up
// by it, and it found the session's id in its environment.
func TestDaemonOfAStepDiesWithIt(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: serve
    steps: [{run: 'setsid sh -c "echo daemon \$\$ of \$PIPELINE_SESSION; : > ready; exec sleep 600" & until [ -e ready ]; do sleep 0.01; done'}]
  - name: after
    steps: [{run: echo next phase}]
`, clock.Real{})
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("state %+v", s)
	}
	out := transcript(t, h, "serve", "1-run.log")
	m := daemonLine.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, " of "+h.sess.ID()) {
		t.Fatalf("transcript %q", out)
	}
	pid, _ := strconv.Atoi(m[1])
	proctest.AwaitExit(t, pid)
	// The daemon is named as the sweep found it: sh until its exec, sleep
	// after (the step ends once ready is made, just before that exec).
	said := regexp.MustCompile(`the step left 1 process running when it exited, killed then: ` + m[1] + ` \((sh|sleep)\)`)
	for _, where := range []string{out, h.view.saidText()} {
		if !said.MatchString(where) {
			t.Errorf("not said: %q", where)
		}
	}
	// And recorded, with the step's end, in the session's log.
	log, err := os.ReadFile(filepath.Join(h.sess.X.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"leftovers":\["` + m[1] + ` \((sh|sleep)\)"\]`).Match(log) {
		t.Errorf("the event log does not record the leftover:\n%s", log)
	}
}
