package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// manyPhases is a phases.yaml of n phases, each with a step, a trigger
// and a done_when of its own, each pausing after its phase: every session
// has the same length whatever the plan's (cmd/bench -status writes the
// same).
func manyPhases(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\ndefaults:\n  auto_advance: false\n  pause_when:\n    tokens: tokens > 15000\n" +
		"    time: elapsed > duration(\"30m\")\n  restart_when:\n    errors: consecutive_errors >= 3\n  retry:\n" +
		"    when: exit_code != 0 || timed_out\n    backoff: duration(\"10s\") * consecutive_errors\nphases:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: p%d\n    steps: [{name: t, run: \"true\"}]\n    pause_when: {cost: cost_usd > %d.5 && spec.priority != \"high\"}\n"+
			"    done_when: steps.t.exit_code == 0\n", i, i)
	}
	return b.String()
}

// pausedSession runs a session of manyPhases(n) in a folder of its own
// until it pauses after its first phase.
func pausedSession(tb testing.TB, n int) app.Pipeline {
	tb.Helper()
	dir := tb.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(manyPhases(n)), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := app.Pipeline{File: file}
	plan, err := spec.Load(file, "")
	if err != nil {
		tb.Fatal(err)
	}
	st, err := p.Open()
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	sess, err := session.Open(context.Background(), st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		tb.Fatal(err)
	}
	driver := &local.Driver{View: local.Discard, Clock: clock.Real{}, Grace: time.Second}
	s, err := driver.Run(context.Background(), sess, sess.Start(time.Now()))
	if closeErr := sess.Close(); err == nil {
		err = closeErr
	}
	if err != nil || s.Status != engine.StatusPaused {
		tb.Fatalf("the session ended %s: %v", s.Status, err)
	}
	return p
}

// BenchmarkStatus is app.Status of a session paused after its first
// phase, for plans of 3, 100 and 1,000 phases: with the plan cache, its
// cost is the session's, not the plan's.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{3, 100, 1000} {
		b.Run(fmt.Sprintf("phases=%d", n), func(b *testing.B) {
			p := pausedSession(b, n)
			// The first status caches the plan.
			if _, err := app.Status(context.Background(), app.StatusRequest{Pipeline: p}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				r, err := app.Status(context.Background(), app.StatusRequest{Pipeline: p})
				if err != nil || r.Phase != "p1" {
					b.Fatalf("status: %v %v", r, err)
				}
			}
		})
	}
}
