package temporal_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/policytest"
)

// resumeAtPause resumes the session once, if it stands paused when the
// test clock reaches idle/4 (every case has paused by then), after pin.
func (r *run) resumeAtPause(pin func()) {
	r.after(idle/4, func() {
		if s := r.query(); s.Status == engine.StatusPaused {
			pin()
			r.env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{})
		}
	})
}

// mockedEffects is what the mocked activities saw and answer.
type mockedEffects struct {
	mu      sync.Mutex
	c       policytest.Case
	refs    []string
	hooks   []string
	pinned  bool
	pinSeen bool
}

// mock makes the step activity follow the case's script and the effects'
// activities stand for a folder as the case's: git or not, and the pin
// left in the worker's copy once it is made.
func (m *mockedEffects) mock(r *run) {
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.pinned && slices.ContainsFunc(in.State.WorkingSet.Pinned, func(f engine.MemoryItem) bool { return f.Text == m.c.Pin }) {
				m.pinSeen = true
			}
			return temporal.StepOutput{Result: m.c.Script(in.Start)}, nil
		})
	r.env.OnActivity(temporal.ActivityCheckpoint, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.CheckpointInput) (temporal.CheckpointOutput, error) {
			if !m.c.Git {
				return temporal.CheckpointOutput{NoGit: true}, nil
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.refs = append(m.refs, in.Checkpoint.Name)
			return temporal.CheckpointOutput{Commit: "commit-" + in.Checkpoint.Name}, nil
		})
	r.env.OnActivity(temporal.ActivityRunHooks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.HooksInput) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.hooks = append(m.hooks, in.Events...)
			return nil
		})
	r.env.OnActivity(temporal.ActivityTakeMemory, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.MemoryInput) (temporal.MemoryOutput, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			// The pin is event 1 of the copy's log: taken once.
			if !m.pinned || in.After >= 1 {
				return temporal.MemoryOutput{Last: in.After}, nil
			}
			return temporal.MemoryOutput{Last: 1, Remembered: []engine.Remembered{{At: start, Source: engine.SourceHuman,
				Notes: []engine.MemoryNote{{Kind: engine.NoteFact, Text: m.c.Pin}}}}}, nil
		})
}

// TestPolicyTableMocked runs the policy paths every driver shares (the
// local driver runs the same table) with the activities mocked: the
// step by each case's script, the effects by what a folder like the
// case's would answer.
func TestPolicyTableMocked(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(t, c.YAML)
			m := &mockedEffects{c: c}
			m.mock(r)
			if c.Resume {
				r.resumeAtPause(func() {
					m.mu.Lock()
					defer m.mu.Unlock()
					m.pinned = c.Pin != ""
				})
			}
			s := r.execute()
			m.mu.Lock()
			defer m.mu.Unlock()
			slices.Sort(m.refs)
			seen := policytest.Seen{Backoffs: r.sleeps(), Refs: m.refs, Hooks: m.hooks, PinSeen: m.pinSeen}
			if diff := c.Check(s, seen); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

// TestPolicyTableRealActivity runs the same table with the real
// activities: each run: step is a shell command run by the step
// executor on this worker, and the checkpoints, hooks and memory are
// taken by the effects' activities in the pipeline's folder (a git work
// tree where the case asks for one); the pin is made in the worker's
// copy of the session as pipeline memory pin makes it.
func TestPolicyTableRealActivity(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(t, c.YAML)
			dir := filepath.Dir(r.in.Plan.File)
			if err := policytest.SetUp(dir, c); err != nil {
				t.Fatal(err)
			}
			if c.Resume {
				r.resumeAtPause(func() {
					if c.Pin == "" {
						return
					}
					if err := policytest.Pin(filepath.Join(dir, ".pipeline"), r.in.SessionID, c.Pin, time.Now()); err != nil {
						t.Errorf("pin: %v", err)
					}
				})
			}
			s := r.execute()
			refs, err := policytest.Refs(dir, r.in.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			seen := policytest.Seen{Backoffs: r.sleeps(), Refs: refs, Hooks: policytest.Hooks(dir), PinSeen: policytest.PinSeen(dir, c.Pin)}
			if diff := c.Check(s, seen); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}
