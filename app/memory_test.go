package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
)

// TestRememberProject: the project's memory takes a pin and an unpin by
// number, which ProjectMemory then shows; a task, or a session named
// beside it, is refused as a usage error, and changes nothing.
func TestRememberProject(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"true\"}]\n")
	ctx := context.Background()
	req := func(note engine.MemoryNote, session string) app.RememberRequest {
		return app.RememberRequest{MemoryRequest: app.MemoryRequest{Pipeline: p.pipeline(), Session: session}, Note: note}
	}
	pinned, err := app.RememberProject(ctx, req(engine.MemoryNote{Kind: engine.NoteFact, Text: "deploys go through staging"}, ""))
	if err != nil || pinned.Item.ID != 1 || !strings.Contains(pinned.Result, "pinned") {
		t.Fatalf("pin: %+v, %v", pinned, err)
	}
	for _, refused := range []app.RememberRequest{
		req(engine.MemoryNote{Kind: engine.NoteTodo, Text: "a task"}, ""),
		req(engine.MemoryNote{Kind: engine.NoteUnpin, ID: 1}, "20261127-100000000-f1ee70"),
	} {
		if r, err := app.RememberProject(ctx, refused); err == nil || app.ExitCode(err) != app.ExitUsage {
			t.Errorf("%+v: %+v, %v; want a usage error", refused.Note, r, err)
		}
	}
	memory, err := app.ProjectMemory(ctx, p.pipeline())
	if err != nil || len(memory.PinnedFacts) != 1 {
		t.Fatalf("after the pin and the refusals: %+v, %v", memory, err)
	}
	unpinned, err := app.RememberProject(ctx, req(engine.MemoryNote{Kind: engine.NoteUnpin, ID: 1}, ""))
	if err != nil || unpinned.Item.Text != "deploys go through staging" || !strings.Contains(unpinned.Result, "unpinned") {
		t.Fatalf("unpin: %+v, %v", unpinned, err)
	}
	if memory, err := app.ProjectMemory(ctx, p.pipeline()); err != nil || len(memory.PinnedFacts) != 0 {
		t.Errorf("after the unpin: %+v, %v", memory, err)
	}
}
