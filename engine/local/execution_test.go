package local_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// awaitFile waits until the file exists, on the events of its folder.
func awaitFile(t *testing.T, file string) {
	t.Helper()
	testwait.Written(t, filepath.Dir(file), file, func() bool {
		_, err := os.Stat(file)
		return err == nil
	})
}

// awaitRecorded waits until the session's log holds an event of type typ,
// on the events of the session's folder.
func awaitRecorded(t *testing.T, h *harness, typ string) {
	t.Helper()
	testwait.Written(t, h.sess.X.Dir, "a "+typ+" recorded", func() bool {
		found := false
		if err := h.sess.X.Events(0, func(_ int64, got string, _ []byte) error {
			found = found || got == typ
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return found
	})
}

// TestALateTriggerDoesNotStopTheNextStep is issue 22's regression: a
// trigger of step one delivered while step two runs (as the executor of
// step one could, late) is recorded and changes nothing: step two runs
// to its end and the session completes.
func TestALateTriggerDoesNotStopTheNextStep(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: build
    steps:
      - name: one
        run: "true"
      - name: two
        run: 'touch two-started; while [ ! -f go ]; do sleep 0.02; done; echo two done'
    pause_when:
      slow: elapsed > duration("1h")
`, clock.Real{})
	puts := make(chan func(engine.TriggerFired), 1)
	local.TapFirings(h.driver, func(put func(engine.TriggerFired)) { puts <- put })
	done := h.start()
	put := <-puts
	awaitFile(t, filepath.Join(h.dir, "two-started"))
	now := time.Now()
	put(engine.TriggerFired{At: now, Execution: 1, Firing: engine.Firing{Reason: "slow", At: now}})
	awaitRecorded(t, h, "TriggerFired")
	if err := os.WriteFile(filepath.Join(h.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := h.await(done)
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s (pause %+v), want completed\n%s", s.Status, s.Pause, h.view.saidText())
	}
	if two := s.Steps["two"]; !two.Ran || two.ExitCode != 0 {
		t.Fatalf("step two: %+v", two)
	}
	for _, f := range s.Phases[0].Fired {
		if f.Reason == "slow" {
			t.Fatalf("the late trigger was taken: %+v", s.Phases[0].Fired)
		}
	}
}

// localGoroutines counts the goroutines running code of this package
// (the run's loop, its step and signal goroutines).
func localGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "pipeline/engine/local.") && !strings.Contains(g, "engine/local_test.") {
			n++
			found = append(found, g)
		}
	}
	return n, strings.Join(found, "\n\n")
}

// awaitNoLocalGoroutine waits until no goroutine of the package runs.
func awaitNoLocalGoroutine(t *testing.T, when string) {
	t.Helper()
	deadline := time.Now().Add(testwait.Failsafe)
	for {
		n, stacks := localGoroutines()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d goroutine(s) of the driver still run:\n%s", when, n, stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNoGoroutineOutlivesRun: once Run has returned, nothing of it runs,
// and firings delivered late (more than the loop's channel holds) start
// none either: they wait in the run's queue, which goes with it.
func TestNoGoroutineOutlivesRun(t *testing.T) {
	h := newHarness(t, "version: 1\nphases:\n  - name: build\n    steps:\n      - run: \"true\"\n", clock.Real{})
	puts := make(chan func(engine.TriggerFired), 1)
	local.TapFirings(h.driver, func(put func(engine.TriggerFired)) { puts <- put })
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s", s.Status)
	}
	awaitNoLocalGoroutine(t, "after Run")
	put := <-puts
	for i := range 200 {
		put(engine.TriggerFired{At: time.Now(), Execution: 1, Firing: engine.Firing{Reason: "late", Note: string(rune('a' + i%26))}})
	}
	if n, stacks := localGoroutines(); n != 0 {
		t.Fatalf("late firings started %d goroutine(s):\n%s", n, stacks)
	}
}
