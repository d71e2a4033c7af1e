package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
)

// A run that starts a new session says when the session before it, the
// newest of its pipeline and spec, failed, and only then: what Open
// listed as it looked for a session to continue (the index is not read
// again) gives the same answer the index does.
func TestANewRunSaysTheSessionBeforeItFailed(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"test -e ok\"}]\n")
	ctx := context.Background()
	var be app.Backend = app.Local{}
	defer be.Close()
	view := &drivingView{t: t}
	start := func() (*app.Opened, engine.State) {
		t.Helper()
		if err := be.Start(ctx, app.RunRequest{Pipeline: p.pipeline()}, view); err != nil {
			t.Fatalf("start: %v", err)
		}
		return view.last()
	}

	first, state := start()
	if state.Status != engine.StatusFailed || first.FailedBefore != nil {
		t.Fatalf("first run: %s, failed before %+v; want failed, nothing before it", state.Status, first.FailedBefore)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "ok"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second, state := start()
	if state.Status != engine.StatusCompleted {
		t.Fatalf("second run: %s, want completed", state.Status)
	}
	if second.FailedBefore == nil || second.FailedBefore.ID != first.Session.ID() || second.FailedBefore.Phase != "build" {
		t.Fatalf("second run: failed before %+v; want session %s, failed in build", second.FailedBefore, first.Session.ID())
	}
	third, state := start()
	if state.Status != engine.StatusCompleted || third.FailedBefore != nil {
		t.Fatalf("third run: %s, failed before %+v; want completed, and nothing said of the completed one before it", state.Status, third.FailedBefore)
	}
}
