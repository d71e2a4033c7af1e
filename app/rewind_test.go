package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

const twoPhasesWriting = `version: 1
phases:
  - name: one
    steps: [{name: write, run: "echo one > one.txt"}]
  - name: two
    steps: [{name: write, run: "echo two >> one.txt; echo two > two.txt"}]
`

// Rewind, called in process, puts the files back as the checkpoint
// before the phase left them and sets the session back to its start.
func TestRewindPutsTheFilesBackAndTheSessionAtThePhase(t *testing.T) {
	p := newGitProject(t, twoPhasesWriting)
	id, s := p.run()
	if s.Status != "completed" {
		t.Fatalf("run: %s, want completed", s.Status)
	}
	ctx := context.Background()
	if _, err := app.Rewind(ctx, app.RewindRequest{Pipeline: p.pipeline()}); app.ExitCode(err) != app.ExitUsage {
		t.Errorf("rewind without a phase: %v, want a usage error", err)
	}
	r, err := app.Rewind(ctx, app.RewindRequest{Pipeline: p.pipeline(), Session: id, To: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Session != id || r.Phase != "two" || r.Attempt != 2 || r.Checkpoint == "" || r.Rescued != "" {
		t.Errorf("rewind: %+v", r)
	}
	if one, err := os.ReadFile(filepath.Join(p.dir, "one.txt")); err != nil || string(one) != "one\n" {
		t.Errorf("one.txt after the rewind: %q, %v; want phase one's", one, err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "two.txt")); !os.IsNotExist(err) {
		t.Errorf("two.txt is still there after the rewind: %v", err)
	}
	status, err := app.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: id})
	if err != nil || status.Status != "paused" || status.PauseReason != "rewound" || status.Phase != "two" {
		t.Errorf("status after the rewind: %+v, %v", status, err)
	}
}
