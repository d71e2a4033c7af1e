package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// PrepareFork makes the worktree at the checkpoint before the phase and
// the fork's session there; a driver then runs it from that phase.
func TestPrepareForkThenRunTheFork(t *testing.T) {
	p := newGitProject(t, twoPhasesWriting)
	parent, _ := p.run()
	ctx := context.Background()
	for _, at := range []string{"", "three"} {
		if _, err := app.PrepareFork(ctx, app.ForkRequest{Pipeline: p.pipeline(), At: at}); app.ExitCode(err) != app.ExitUsage {
			t.Errorf("fork at %q: %v, want a usage error", at, err)
		}
	}
	tree := filepath.Join(t.TempDir(), "fork")
	var said int
	req := app.ForkRequest{Pipeline: p.pipeline(), At: "two", Worktree: tree}
	req.Say = func(string, ...any) { said++ }
	r, err := app.PrepareFork(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if one, err := os.ReadFile(filepath.Join(tree, "one.txt")); err != nil || string(one) != "one\n" {
		t.Errorf("the fork's one.txt: %q, %v; want phase one's", one, err)
	}
	if pt := r.First.Parent; r.Worktree != tree || pt == nil || pt.Session != parent || pt.Phase != "two" || pt.Checkpoint == "" || r.First.From != "two" || said == 0 {
		t.Errorf("the fork: %+v, parent %+v, %d remarks", r, pt, said)
	}
	driver := &local.Driver{View: local.Discard, Clock: clock.Real{}, Grace: time.Second}
	s, err := driver.Run(ctx, r.Session, r.First)
	if err := errors.Join(err, r.Session.Close(), r.Session.Store.Close()); err != nil {
		t.Fatal(err)
	}
	if s.Status != "completed" || s.Phases[0].Status != "skipped" {
		t.Errorf("the fork ran to %s, phase one %s", s.Status, s.Phases[0].Status)
	}
	if two, err := os.ReadFile(filepath.Join(tree, "two.txt")); err != nil || string(two) != "two\n" {
		t.Errorf("the fork's two.txt: %q, %v", two, err)
	}
	status, err := app.Status(ctx, app.StatusRequest{Pipeline: app.Pipeline{File: filepath.Join(tree, "phases.yaml")}})
	if err != nil || status.Parent == nil || status.Parent.Session != parent {
		t.Errorf("status of the fork: %+v, %v", status, err)
	}
}
