package app_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// PrepareReplay makes the replay's session, held and ready for a driver
// to run, after the checks the caller gives; what it refuses makes no
// session.
func TestPrepareReplayMakesTheSessionForTheCallerToRun(t *testing.T) {
	p := newProject(t, oneStep)
	original, _ := p.run()
	ctx := context.Background()
	count := func() int {
		t.Helper()
		list, err := app.Sessions(ctx, app.SessionsRequest{Pipeline: p.pipeline()})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Sessions)
	}
	if _, err := app.PrepareReplay(ctx, app.ReplayRequest{Pipeline: p.pipeline(), Session: original, Agent: "cobol"}); app.ExitCode(err) != app.ExitUsage {
		t.Errorf("--agent cobol: %v, want a usage error", err)
	}
	refused := errors.New("the agent cannot run here")
	var checked *spec.Plan
	req := app.ReplayRequest{Pipeline: p.pipeline(), Session: original, Model: "other-model",
		Check: func(plan *spec.Plan) error { checked = plan; return refused }}
	if _, err := app.PrepareReplay(ctx, req); !errors.Is(err, refused) || checked == nil {
		t.Errorf("a replay its check refuses: %v (checked %v)", err, checked != nil)
	}
	if n := count(); n != 1 {
		t.Fatalf("a refused replay made a session: %d sessions", n)
	}

	req.Check = nil
	r, err := app.PrepareReplay(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session.ID()
	if err := errors.Join(r.Session.Close(), r.Session.Store.Close()); err != nil {
		t.Fatal(err)
	}
	if of := r.First.ReplayOf; id == original || of == nil || of.Session != original || of.Model != "other-model" || r.Cues.Of != original {
		t.Errorf("the replay: session %s, replay of %+v, cues of %s", id, of, r.Cues.Of)
	}
	if n := count(); n != 2 {
		t.Errorf("%d sessions after the replay was made, want 2", n)
	}

	// Other phases now: refused.
	if err := os.WriteFile(p.file, []byte(strings.Replace(oneStep, "]}]", "]}, {name: b, steps: [{run: 'true'}]}]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.PrepareReplay(ctx, app.ReplayRequest{Pipeline: p.pipeline(), Session: original}); app.ExitCode(err) != app.ExitUsage ||
		!strings.Contains(err.Error(), "the pipeline now has a → b") {
		t.Errorf("a replay of other phases: %v, want a usage error", err)
	}
}
