package temporal_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

var start = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

// idle is how long after its last event a test lets a paused session
// wait for a signal before it looks and ends the workflow: the test clock
// skips there at once.
const idle = 1000 * time.Hour

// sourceIn writes yamlText as the phases.yaml of a new folder and returns
// the plan's source.
func sourceIn(t *testing.T, yamlText string) temporal.PlanSource {
	t.Helper()
	file := filepath.Join(t.TempDir(), "phases.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := temporal.ReadPlanSource(file, "")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// run is one session's workflow under test: the environment, and what
// it saw.
type run struct {
	t        *testing.T
	env      *testsuite.TestWorkflowEnvironment
	in       temporal.SessionInput
	mu       sync.Mutex
	backoffs []time.Duration
	starts   []engine.StartStep
	// last is the state queried when the session stood paused.
	last *engine.State
}

func newRun(t *testing.T, yamlText string) *run {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflow(temporal.SessionWorkflow)
	env.RegisterActivity(&temporal.Activities{Grace: time.Second, HeartbeatEvery: 100 * time.Millisecond})
	r := &run{t: t, env: env, in: temporal.SessionInput{SessionID: session.NewSessionID(start), Plan: sourceIn(t, yamlText),
		Events: []temporal.EventRecord{temporal.MustRecord(engine.Started{At: start})}}}
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.backoffs = append(r.backoffs, d)
	})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != temporal.ActivityRunStep {
			return
		}
		var in temporal.StepInput
		if err := args.Get(&in); err != nil {
			t.Errorf("step input: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.starts = append(r.starts, in.Start)
	})
	return r
}

// after calls fn once the test clock has reached d after the start.
func (r *run) after(d time.Duration, fn func()) { r.env.RegisterDelayedCallback(fn, d) }

// query asks the workflow for its state now.
func (r *run) query() engine.State {
	r.t.Helper()
	v, err := r.env.QueryWorkflow(temporal.QueryState)
	if err != nil {
		r.t.Fatalf("query: %v", err)
	}
	var s engine.State
	if err := v.Get(&s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// execute runs the workflow until it ends, or stands paused with nothing
// more to do (then it is cancelled); it returns the last state.
func (r *run) execute() engine.State {
	r.t.Helper()
	r.after(idle, func() {
		s := r.query()
		r.last = &s
		r.env.CancelWorkflow()
	})
	r.env.ExecuteWorkflow(temporal.SessionWorkflow, r.in)
	if !r.env.IsWorkflowCompleted() {
		r.t.Fatal("the workflow did not end")
	}
	if r.last != nil {
		return *r.last
	}
	if err := r.env.GetWorkflowError(); err != nil {
		r.t.Fatalf("workflow: %v", err)
	}
	var s engine.State
	if err := r.env.GetWorkflowResult(&s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// sleeps are the back-offs the workflow slept: its timers, less the
// test's own.
func (r *run) sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, d := range r.backoffs {
		if d < idle/2 {
			out = append(out, d)
		}
	}
	return out
}

func (r *run) startSteps() []engine.StartStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.StartStep(nil), r.starts...)
}
