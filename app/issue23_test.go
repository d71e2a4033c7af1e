package app_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// Issue 23, defect 21: the six-character tail of a session id that
// pipeline watch shows ([50c094]) was refused, and a fork's session,
// listed by sessions in the project, was "no such session" there with no
// word of the worktree it lives in. A session is found by its id, or a
// unique start or end of it; one that names several lists them (exit 2);
// a fork's id names its worktree and the command to use there.
func TestIssue23SessionIDTailsAndForksElsewhere(t *testing.T) {
	p := newGitProject(t, twoPhasesWriting)
	first, _ := p.run()
	second, _ := p.run()
	ctx := context.Background()
	for _, part := range []string{first, first[len(first)-6:], first[len(first)-3:], first[:len(first)-3]} {
		if strings.HasSuffix(second, part) || strings.HasPrefix(second, part) {
			continue // by chance not unique
		}
		got, err := app.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: part})
		if err != nil || got.ID != first {
			t.Errorf("status %s: %+v, %v; want session %s", part, got, err, first)
		}
	}
	// Both ids start with the date: the date names two sessions.
	_, err := app.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: first[:8]})
	if app.ExitCode(err) != app.ExitUsage || err == nil || !strings.Contains(err.Error(), first) || !strings.Contains(err.Error(), second) {
		t.Errorf("status %s: %v (exit %d); want exit 2 naming both sessions", first[:8], err, app.ExitCode(err))
	}
	// The lookup of the surfaces that look through several stores (diff,
	// the MCP server): the same rules, across stores.
	other := newGitProject(t, twoPhasesWriting)
	third, _ := other.run()
	dirs := []string{p.pipeline().StoreDir(), other.pipeline().StoreDir()}
	if _, meta, err := app.FindInStores(dirs, third[len(third)-6:]); err != nil || meta.ID != third {
		t.Errorf("FindInStores by tail: %+v, %v", meta, err)
	}
	var ambiguous *store.AmbiguousError
	if _, _, err := app.FindInStores(dirs, first[:8]); !errors.As(err, &ambiguous) || len(ambiguous.Matches) != 3 {
		t.Errorf("FindInStores %s across stores: %v; want the three sessions", first[:8], err)
	}

	tree := filepath.Join(t.TempDir(), "fork")
	fork, err := app.PrepareFork(ctx, app.ForkRequest{Pipeline: p.pipeline(), At: "two", Worktree: tree})
	if err != nil {
		t.Fatal(err)
	}
	forkID := fork.Session.ID()
	if err := errors.Join(fork.Session.Close(), fork.Session.Store.Close()); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(tree)
	for _, id := range []string{forkID, forkID[len(forkID)-6:]} {
		_, err = app.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: id})
		if app.ExitCode(err) != app.ExitUsage || err == nil || !strings.Contains(err.Error(), "worktree") ||
			!(strings.Contains(err.Error(), tree) || strings.Contains(err.Error(), real)) || !strings.Contains(app.Hint(err), "cd ") {
			t.Errorf("status of the fork %s in the project: %v (hint %q)", id, err, app.Hint(err))
		}
	}
}
