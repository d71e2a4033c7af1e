package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// Diff compares two sessions in process: two runs of the same work do not
// diverge; a run that paused diverges at that phase. A session of
// another pipeline is found in a store below the current folder.
func TestDiffOfTwoSessions(t *testing.T) {
	p := newProject(t, "version: 1\nphases: [{name: build, steps: [{run: 'if [ -e stop ]; then echo \"[CHECKPOINT] look\"; fi'}]}]\n")
	first, _ := p.run()
	second, _ := p.run()
	ctx := context.Background()
	r, err := app.Diff(ctx, app.DiffRequest{Pipeline: p.pipeline(), A: first, B: second})
	if err != nil || !r.Same || r.Divergence != nil || r.A.ID != first || r.B.ID != second {
		t.Fatalf("two runs of the same work: %+v, %v; want the same", r, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stopped, s := p.run()
	if s.Status != "paused" {
		t.Fatalf("the stopped run: %s, want paused", s.Status)
	}
	// From another folder, by the stores below it.
	t.Chdir(filepath.Dir(p.dir))
	r, err = app.Diff(ctx, app.DiffRequest{Pipeline: app.Pipeline{File: "elsewhere.yaml"}, A: first, B: stopped})
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.Divergence == nil || r.Divergence.Phase != "build" || r.Status.B != "paused" {
		t.Errorf("a paused run: %+v, want a divergence at build", r.Result)
	}
}

func TestDiffRefusesASessionNotThere(t *testing.T) {
	p := newProject(t, oneStep)
	id, _ := p.run()
	for _, other := range []string{"20991231-000000000-ffffff", "not-an-id"} {
		_, err := app.Diff(context.Background(), app.DiffRequest{Pipeline: p.pipeline(), A: id, B: other})
		if app.ExitCode(err) != app.ExitUsage {
			t.Errorf("diff with %s: %v (exit %d), want a usage error", other, err, app.ExitCode(err))
		}
	}
}
