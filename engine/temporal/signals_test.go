package temporal_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

const agentPlan = `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: design
  - name: build
`

// TestPauseSignalDuringAStepStopsItAndPauses: pause while a step runs
// cancels its activity; the step's stopped end pauses the session with
// the human's notes, and status says so.
func TestPauseSignalDuringAStepStopsItAndPauses(t *testing.T) {
	r := newRun(t, agentPlan)
	released := make(chan struct{})
	r.env.SetOnActivityCanceledListener(func(*activity.Info) { close(released) })
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			select {
			case <-released:
			case <-time.After(testwait.Failsafe):
				t.Error("the step was never cancelled")
			}
			return temporal.StepOutput{Result: engine.StepResult{Stopped: true, ExitCode: 130}}, nil
		})
	r.after(time.Millisecond, func() { r.env.SignalWorkflow(temporal.SignalPause, temporal.PauseSignal{Notes: "lunch"}) })
	s := r.execute()
	if s.Status != engine.StatusPaused || s.Pause == nil || s.Pause.Reason != engine.ReasonHuman || s.Pause.Note != "lunch" {
		t.Fatalf("want paused-by-human with the notes, got %s %+v", s.Status, s.Pause)
	}
	v, err := r.env.QueryWorkflow(temporal.QueryStatus)
	if err == nil {
		var report engine.StatusReport
		if err := v.Get(&report); err != nil || report.PauseReason != engine.ReasonHuman || report.Phase != "design" {
			t.Fatalf("status: %+v %v", report, err)
		}
	}
}

// TestResumeSignalCarriesNotesToTheNextStep: a checkpoint pauses; the
// resume signal's notes reach the next step's resume context.
func TestResumeSignalCarriesNotesToTheNextStep(t *testing.T) {
	r := newRun(t, agentPlan)
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			if in.Start.Phase == 0 && in.Start.Attempt == 1 && !in.Start.ResumeContext {
				return temporal.StepOutput{Result: engine.StepResult{Checkpoint: true, CheckpointNote: "API drafted", SessionID: "native-1"},
					Phase: "design", Markers: []engine.MemoryNote{{Kind: engine.NoteDecision, Text: "REST, not gRPC"}}}, nil
			}
			return temporal.StepOutput{Result: engine.StepResult{SessionID: "native-1"}}, nil
		})
	r.after(time.Hour, func() {
		if s := r.query(); s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" {
			t.Errorf("want paused at the checkpoint, got %s %+v", s.Status, s.Pause)
		}
		r.env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{Notes: "keep it small"})
	})
	s := r.execute()
	if s.Status != engine.StatusCompleted {
		t.Fatalf("want completed, got %s %+v", s.Status, s.Pause)
	}
	starts := r.startSteps()
	if len(starts) != 3 {
		t.Fatalf("want 3 steps (design, design again, build), got %+v", starts)
	}
	resumed := starts[1]
	if !resumed.ResumeContext || resumed.Resuming == nil || resumed.Resuming.Firing.Reason != "checkpoint" || resumed.SessionID != "native-1" {
		t.Fatalf("the step after the resume: %+v", resumed)
	}
	if notes := s.Phases[0].Notes; len(notes) != 1 || notes[0] != "keep it small" {
		t.Fatalf("the phase's notes (the resume context's human notes): %q", notes)
	}
	if d := s.WorkingSet.Decisions; len(d) != 1 || d[0].Text != "REST, not gRPC" || d[0].Phase != "design" {
		t.Fatalf("the step's markers in the working set: %+v", d)
	}
}

// TestLostWorkerRunsTheStepAgain: a heartbeat timeout is a runner that
// died: the markers of its last heartbeat are kept, and the step runs
// again with the resume context, as Recovered has it.
func TestLostWorkerRunsTheStepAgain(t *testing.T) {
	r := newRun(t, agentPlan)
	calls := 0
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			calls++
			if calls == 1 {
				return temporal.StepOutput{}, sdktemporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil,
					temporal.Progress{Phase: "design", Markers: []engine.MemoryNote{{Kind: engine.NoteFact, Text: "port 8080"}}})
			}
			return temporal.StepOutput{}, nil
		})
	s := r.execute()
	if s.Status != engine.StatusCompleted {
		t.Fatalf("want completed, got %s %+v", s.Status, s.Pause)
	}
	starts := r.startSteps()
	// The lost worker's run counts: the step runs again as attempt 2.
	if len(starts) != 3 || starts[1].Phase != 0 || starts[1].Attempt != 2 || starts[1].Resuming == nil ||
		starts[1].Resuming.Firing.Reason != engine.ReasonRunnerDied {
		t.Fatalf("want the design step again, as attempt 2, as after a runner that died: %+v", starts)
	}
	if a := s.Phases[0].Attempts; a != 2 {
		t.Errorf("the design phase counts %d attempts, want 2 (the lost worker's and the one after it)", a)
	}
	if f := s.WorkingSet.Pinned; len(f) != 1 || f[0].Text != "port 8080" {
		t.Fatalf("the lost worker's heartbeated markers: %+v", f)
	}
}

// TestWorkersLostTooOftenPause: a step whose workers keep getting lost
// pauses (worker-lost) rather than run for ever.
func TestWorkersLostTooOftenPause(t *testing.T) {
	r := newRun(t, agentPlan)
	r.in.Options.MaxLost = 2
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(context.Context, temporal.StepInput) (temporal.StepOutput, error) {
			return temporal.StepOutput{}, sdktemporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		})
	s := r.execute()
	if s.Status != engine.StatusPaused || s.Pause.Reason != temporal.ReasonWorkerLost || len(r.startSteps()) != 3 {
		t.Fatalf("want paused worker-lost after 3 tries, got %s %+v after %d", s.Status, s.Pause, len(r.startSteps()))
	}
}

// TestHeartbeatTimeoutOfTheEnvironment: the test environment's own
// heartbeat watch (on the wall clock) catches a step that stops
// heartbeating; the step runs again.
func TestHeartbeatTimeoutOfTheEnvironment(t *testing.T) {
	r := newRun(t, agentPlan)
	r.in.Options.HeartbeatTimeout = 200 * time.Millisecond
	calls := 0
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(context.Context, temporal.StepInput) (temporal.StepOutput, error) {
			calls++
			if calls == 1 {
				time.Sleep(time.Second) // a worker that hangs: no heartbeat
			}
			return temporal.StepOutput{}, nil
		})
	s := r.execute()
	if s.Status != engine.StatusCompleted || len(r.startSteps()) != 3 {
		t.Fatalf("want completed after the design step ran again, got %s after %d steps", s.Status, len(r.startSteps()))
	}
}

// TestActivityErrorPausesWithTheReason: a worker that cannot run the
// step at all pauses the session, saying why; nothing is retried behind
// the YAML's back.
func TestActivityErrorPausesWithTheReason(t *testing.T) {
	r := newRun(t, agentPlan)
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(context.Context, temporal.StepInput) (temporal.StepOutput, error) {
			return temporal.StepOutput{}, sdktemporal.NewApplicationError("the session store is full", "store")
		})
	s := r.execute()
	if s.Status != engine.StatusPaused || s.Pause.Reason != temporal.ReasonWorkerError || !strings.Contains(s.Pause.Note, "store is full") ||
		len(r.startSteps()) != 1 {
		t.Fatalf("got %s %+v after %d steps", s.Status, s.Pause, len(r.startSteps()))
	}
}

// TestContinueAsNewCarriesTheState: past MaxEvents the run continues as
// new with the state and the events it had not decided, asking for the
// workflow's changes in its input (no version marker); the next run
// carries on.
func TestContinueAsNewCarriesTheState(t *testing.T) {
	r := newRun(t, agentPlan)
	r.in.Options.MaxEvents = 2
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(context.Context, temporal.StepInput) (temporal.StepOutput, error) {
			return temporal.StepOutput{}, nil
		})
	r.env.ExecuteWorkflow(temporal.SessionWorkflow, r.in)
	err := r.env.GetWorkflowError()
	var next *workflow.ContinueAsNewError
	if !errors.As(err, &next) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var in temporal.SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(next.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Runs != 1 || len(in.Events) != 1 || in.Events[0].Type != "StepFinished" || in.State.Phase != 1 || !in.State.StepRunning {
		t.Fatalf("the next run's input: runs %d, events %+v, phase %d", in.Runs, in.Events, in.State.Phase)
	}
	// It has every change without a version marker of its own.
	if in.Changes != temporal.SessionChanges {
		t.Errorf("the next run asks for changes %d; want %d", in.Changes, temporal.SessionChanges)
	}
	r2 := newRun(t, agentPlan)
	r2.in = in
	r2.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(context.Context, temporal.StepInput) (temporal.StepOutput, error) {
			return temporal.StepOutput{}, nil
		})
	if s := r2.execute(); s.Status != engine.StatusCompleted || s.Phases[1].Status != engine.StatusCompleted {
		t.Fatalf("the next run: %s", s.Status)
	}
}

// TestResumeSignalWithANewPlan: a resume that carries phases.yaml as it
// is now switches the session to it (PlanChanged, then Resumed): the
// next step is given the new plan; a pause signal on the paused session
// leaves its notes for the resume.
func TestResumeSignalWithANewPlan(t *testing.T) {
	r := newRun(t, agentPlan)
	edited := strings.Replace(agentPlan, "  - name: design\n", "  - name: design\n    prompt: Design it small.\n", 1)
	newSource := r.in.Plan
	newSource.YAML = []byte(edited)
	newSource.Digest = ""
	plan, err := newSource.Load()
	if err != nil {
		t.Fatal(err)
	}
	newSource.Digest = plan.Digest
	var plans []string
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			plans = append(plans, in.Plan.Digest)
			if len(plans) == 1 {
				return temporal.StepOutput{Result: engine.StepResult{Checkpoint: true}}, nil
			}
			return temporal.StepOutput{Result: engine.StepResult{}}, nil
		})
	r.after(time.Hour, func() {
		r.env.SignalWorkflow(temporal.SignalPause, temporal.PauseSignal{Notes: "left while paused"})
	})
	r.after(2*time.Hour, func() {
		r.env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{Notes: "spec edited", Plan: &newSource})
	})
	s := r.execute()
	if s.Status != engine.StatusCompleted {
		t.Fatalf("want completed, got %s %+v", s.Status, s.Pause)
	}
	if len(plans) != 3 || plans[0] != r.in.Plan.Digest || plans[1] != plan.Digest || plans[2] != plan.Digest {
		t.Fatalf("the steps' plans: %q (old %s, new %s)", plans, r.in.Plan.Digest, plan.Digest)
	}
	if s.PlanDigest != plan.Digest {
		t.Fatalf("the state's plan: %s, want %s", s.PlanDigest, plan.Digest)
	}
	if notes := s.Phases[0].Notes; len(notes) != 2 || notes[0] != "left while paused" || notes[1] != "spec edited" {
		t.Fatalf("the phase's notes: %q", notes)
	}
}

// TestStepsCarryTheirExecution: each step the workflow starts carries
// the next execution number (a step run again after a lost worker too),
// and the step's end, with that number, is decided.
func TestStepsCarryTheirExecution(t *testing.T) {
	r := newRun(t, agentPlan)
	calls := 0
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			calls++
			if calls == 1 {
				return temporal.StepOutput{}, sdktemporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
			return temporal.StepOutput{}, nil
		})
	s := r.execute()
	starts := r.startSteps()
	// design (lost, then again), build.
	if s.Status != engine.StatusCompleted || len(starts) != 3 {
		t.Fatalf("want completed after 3 starts, got %s after %d", s.Status, len(starts))
	}
	for i, start := range starts {
		if start.Execution != i+1 {
			t.Fatalf("start %d (%+v): execution %d, want %d", i, start, start.Execution, i+1)
		}
	}
	if s.Execution != 3 {
		t.Fatalf("state's execution %d, want 3", s.Execution)
	}
}

// TestAFolderOutsideGitIsAskedOnce: once a worker has said the
// pipeline's folder is not in git, the session asks for no checkpoint
// (each would be a round trip for nothing) until it is resumed.
func TestAFolderOutsideGitIsAskedOnce(t *testing.T) {
	r := newRun(t, agentPlan)
	var asked []string
	r.env.OnActivity(temporal.ActivityCheckpoint, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.CheckpointInput) (temporal.CheckpointOutput, error) {
			asked = append(asked, in.Checkpoint.Name)
			return temporal.CheckpointOutput{NoGit: true}, nil
		})
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			if in.Start.Execution == 1 {
				return temporal.StepOutput{Result: engine.StepResult{Checkpoint: true, CheckpointNote: "look"}}, nil
			}
			return temporal.StepOutput{}, nil
		})
	r.after(time.Hour, func() { r.env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{}) })
	if s := r.execute(); s.Status != engine.StatusCompleted {
		t.Fatalf("want completed, got %s %+v", s.Status, s.Pause)
	}
	// The start; then, after the resume, the first phase's end.
	if want := []string{"00-start", "01-design"}; !slices.Equal(asked, want) {
		t.Fatalf("checkpoints asked for %v, want %v", asked, want)
	}
}

// TestRememberSignalReachesTheNextStep: a fact pinned while the session is
// paused (the remember signal, as pipeline memory pin sends it) is in the
// working set the next step is started with.
func TestRememberSignalReachesTheNextStep(t *testing.T) {
	r := newRun(t, agentPlan)
	var pinnedAtStart []string
	r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
			if in.Start.Phase == 0 && in.Start.Attempt == 1 && !in.Start.ResumeContext {
				return temporal.StepOutput{Result: engine.StepResult{Checkpoint: true, CheckpointNote: "API drafted"}}, nil
			}
			for _, m := range in.State.WorkingSet.Pinned {
				pinnedAtStart = append(pinnedAtStart, m.Text)
			}
			return temporal.StepOutput{}, nil
		})
	r.after(time.Hour, func() {
		r.env.SignalWorkflow(temporal.SignalRemember, temporal.RememberSignal{Notes: []engine.MemoryNote{{Kind: engine.NoteFact, Text: "the port is 8443"}}})
	})
	r.after(2*time.Hour, func() {
		if s := r.query(); len(s.WorkingSet.Pinned) != 1 || s.WorkingSet.Pinned[0].Source != engine.SourceHuman {
			t.Errorf("the paused session's working set after the signal: %+v", s.WorkingSet.Pinned)
		}
		r.env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{})
	})
	s := r.execute()
	if s.Status != engine.StatusCompleted {
		t.Fatalf("want completed, got %s %+v", s.Status, s.Pause)
	}
	if len(pinnedAtStart) == 0 || pinnedAtStart[0] != "the port is 8443" {
		t.Fatalf("the steps after the pin were started with pinned facts %q", pinnedAtStart)
	}
}
