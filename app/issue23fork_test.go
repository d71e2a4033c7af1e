package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

const threePhasesWriting = `version: 1
phases:
  - {name: a, steps: [{name: write, run: "echo a > a.txt"}]}
  - {name: b, steps: [{name: write, run: "echo b > b.txt"}]}
  - {name: c, steps: [{name: write, run: "echo c > c.txt"}]}
`

// Issue 23, item 1: fork --at c after rewind --to b forked from a's
// checkpoint (no b.txt) although b's was still kept. A fork at a phase
// starts from the kept checkpoint of the phase before it; with none kept,
// it is refused with the reason.
func TestIssue23ForkAfterRewindUsesTheKeptCheckpoint(t *testing.T) {
	p := newGitProject(t, threePhasesWriting)
	parent, _ := p.run()
	ctx := context.Background()
	if _, err := app.Rewind(ctx, app.RewindRequest{Pipeline: p.pipeline(), Session: parent, To: "b", Force: true}); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "fork")
	r, err := app.PrepareFork(ctx, app.ForkRequest{Pipeline: p.pipeline(), Session: parent, At: "c", Worktree: tree})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Session.Store.Close()
	defer r.Session.Close()
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(tree, f)); err != nil {
			t.Errorf("the fork at c lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "c.txt")); err == nil {
		t.Error("the fork at c holds c.txt: it started after c")
	}
}

// With the phase before P's checkpoint gone too, the fork is refused and
// says why, rather than start from an earlier phase's.
func TestIssue23ForkWithoutTheCheckpointBeforeIsRefused(t *testing.T) {
	p := newGitProject(t, threePhasesWriting)
	parent, _ := p.run()
	ctx := context.Background()
	if _, err := app.Rewind(ctx, app.RewindRequest{Pipeline: p.pipeline(), Session: parent, To: "b", Force: true}); err != nil {
		t.Fatal(err)
	}
	git(t, p.dir, "update-ref", "-d", "refs/pipeline/"+parent+"/02-b")
	_, err := app.PrepareFork(ctx, app.ForkRequest{Pipeline: p.pipeline(), Session: parent, At: "c", Worktree: filepath.Join(t.TempDir(), "fork")})
	if app.ExitCode(err) != app.ExitUsage || !strings.Contains(err.Error(), "phase b") {
		t.Fatalf("fork at c with b's checkpoint gone: %v, want a refusal naming phase b", err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
