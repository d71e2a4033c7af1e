package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// manyLog is the views of RunMany's sessions: it records, in order,
// when each view was taken (a session starting) and finished.
type manyLog struct {
	mu     sync.Mutex
	events []string
}

func (m *manyLog) View(i int) local.View {
	m.add(fmt.Sprintf("start %d", i))
	return local.Discard
}

func (m *manyLog) Finish(i int, status string) { m.add(fmt.Sprintf("end %d %s", i, status)) }

func (m *manyLog) add(e string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
}

// TestRunManyRunsEachToItsEnd: RunMany runs each request's session to
// its end and says how each ended, a pipeline that cannot start among
// them; with MaxParallel 1 each starts only after the one before ended,
// in the order given.
func TestRunManyRunsEachToItsEnd(t *testing.T) {
	passes := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"true\"}]\n")
	fails := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"false\"}]\n")
	missing := app.Pipeline{File: filepath.Join(t.TempDir(), "phases.yaml")}
	reqs := []app.RunRequest{{Pipeline: passes.pipeline()}, {Pipeline: fails.pipeline()}, {Pipeline: missing}}
	views := &manyLog{}
	outcome := func(_ *spec.Plan, s engine.State) string { return "ended " + string(s.Status) }
	got := app.RunMany(context.Background(), reqs, views, app.ManyOptions{MaxParallel: 1, Outcome: outcome})

	if len(got) != 3 {
		t.Fatalf("%d outcomes for 3 requests: %+v", len(got), got)
	}
	if got[0].Status != engine.StatusCompleted || got[0].Session == "" || got[0].Line != "ended completed" {
		t.Errorf("the passing pipeline: %+v", got[0])
	}
	if got[1].Status != engine.StatusFailed || got[1].Session == "" || got[1].Line != "ended failed" {
		t.Errorf("the failing pipeline: %+v", got[1])
	}
	if got[2].Status != engine.StatusFailed || got[2].Session != "" || !strings.HasPrefix(got[2].Line, "cannot start: ") {
		t.Errorf("the missing pipeline: %+v", got[2])
	}
	want := "start 0,end 0 completed,start 1,end 1 failed,start 2,end 2 failed"
	if order := strings.Join(views.events, ","); order != want {
		t.Errorf("with MaxParallel 1 the sessions ran as\n%s\nwant\n%s", order, want)
	}
}
