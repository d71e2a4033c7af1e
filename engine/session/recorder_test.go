package session_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

const loopPlan = `version: 1
defaults:
  retry: {when: "false", escalate_when: "false"}
phases:
  - name: build
    steps: [{run: make}, {name: test, run: make test}]
    done_when: steps.test.exit_code == 0
`

// recordLoop records n events of a phase that never gets done, through a
// SessionRecorder that never snapshots; it returns the final state.
func recordLoop(t testing.TB, n int, snapshot bool) (*store.Session, engine.State) {
	st, err := store.Open(filepath.Join(t.TempDir(), ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.Create(store.Meta{ID: "s", Key: "k", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, loopPlan)
	rec := session.NewRecorder(x, plan, nil)
	rec.SnapshotEvery = time.Hour
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	var s engine.State
	ev := engine.Event(engine.Started{At: at})
	for i := 0; i < n; i++ {
		s, _ = engine.Decide(plan, s, ev)
		if err := rec.Record(ev, s); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		ev = engine.StepFinished{At: at, Result: engine.StepResult{ExitCode: i % 2, Elapsed: time.Second, Tokens: 3}}
	}
	if snapshot {
		if err := rec.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	return x, s
}

// The state rebuilt from the event log is the state the run had.
func TestLoadStateReplaysTheLog(t *testing.T) {
	x, want := recordLoop(t, 501, false)
	defer x.Close()
	got, err := session.LoadState(planOf(t, loopPlan), x)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deepCopy(t, got), deepCopy(t, want)) {
		t.Fatalf("replayed state differs:\n got %+v\nwant %+v", got, want)
	}
	if got.Attempt != 251 || got.TotalTokens != 1500 {
		t.Errorf("attempt %d, tokens %d", got.Attempt, got.TotalTokens)
	}
}

// Resume of a session of 100,000 events: after a pause (a snapshot holds
// them all) and after a crash before any snapshot (every event replayed
// through the decision function, the worst case).
func BenchmarkResume100kEvents(b *testing.B) {
	for _, snapshot := range []bool{true, false} {
		name := "snapshot"
		if !snapshot {
			name = "replay-all"
		}
		b.Run(name, func(b *testing.B) {
			x, _ := recordLoop(b, 100_000, snapshot)
			defer x.Close()
			plan := planOf(b, loopPlan)
			for b.Loop() {
				s, err := session.LoadState(plan, x)
				if err != nil || s.Attempt != 50_000 {
					b.Fatalf("attempt %d, %v", s.Attempt, err)
				}
			}
		})
	}
}

// planOf loads an inline phases.yaml.
func planOf(t testing.TB, yamlText string) *spec.Plan {
	t.Helper()
	doc, err := spec.Parse("phases.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, "/project")
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// deepCopy copies a state through its JSON, as the store keeps it.
func deepCopy(t *testing.T, st engine.State) engine.State {
	t.Helper()
	var out engine.State
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// LoadState of a session of a few events: from a snapshot that holds
// them all, and from the log alone (the session a stop recorded without
// a snapshot leaves): what a reader would pay were a short run to stop
// without a snapshot.
func BenchmarkLoadStateFewEvents(b *testing.B) {
	for _, n := range []int{4, 8, 16, 32, 64} {
		for _, snapshot := range []bool{true, false} {
			name := fmt.Sprintf("%d/replay", n)
			if snapshot {
				name = fmt.Sprintf("%d/snapshot", n)
			}
			b.Run(name, func(b *testing.B) {
				x, want := recordLoop(b, n, snapshot)
				defer x.Close()
				plan := planOf(b, loopPlan)
				b.ReportAllocs()
				for b.Loop() {
					s, err := session.LoadState(plan, x)
					if err != nil || s.Attempt != want.Attempt {
						b.Fatalf("attempt %d, %v", s.Attempt, err)
					}
				}
			})
		}
	}
}
