package steps

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 23, item 18: a [CHECKPOINT] from a sh -c step waited the whole
// grace about one time in five. The SIGINT reached the shell between its
// two commands: the shell took it and went on to start sleep, which never
// got one, and was killed when the grace ran out. Repeated, since it is a
// race: every run must end by the SIGINT, none by the SIGKILL.
func TestIssue23CheckpointFromShStepStopsWithinGrace(t *testing.T) {
	const runs = 30
	for i := range runs {
		p, out := start(t, `echo "[CHECKPOINT] ready for review"; sleep 30; exit 0`)
		if line := readLine(t, out); !strings.Contains(line, "[CHECKPOINT]") {
			t.Fatalf("the step printed %q", line)
		}
		p.Stop(2 * time.Second)
		if sig := p.Signal(); sig != syscall.SIGINT {
			t.Fatalf("run %d of %d: the step ended by %v, want SIGINT: it sat out the grace", i+1, runs, sig)
		}
		if grace, killed := p.KilledAfter(); killed {
			t.Fatalf("run %d of %d: killed after the grace (%s)", i+1, runs, grace)
		}
	}
}

// Issue 23, item 18: a step killed because it outlived its grace said
// nothing of it; it says "did not stop within <grace>: killed".
func TestIssue23StepKilledAfterGraceSaysSo(t *testing.T) {
	obs := newRecorder()
	step := shellStep(`trap "" INT; echo started; while :; do sleep 1; done`, testMark())
	step.Grace = 100 * time.Millisecond
	go func() {
		obs.awaitLine(t, "started")
		obs.mu.Lock()
		r := obs.running
		obs.mu.Unlock()
		r.Stop(step.Grace)
	}()
	res := execute(t, context.Background(), step, obs)
	if !res.Stopped || res.ExitCode != -1 {
		t.Fatalf("not killed: %+v", res)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !strings.Contains(strings.Join(obs.warned, "\n"), "did not stop within 100ms: killed") {
		t.Errorf("warnings %q: want \"did not stop within 100ms: killed\"", obs.warned)
	}
}
