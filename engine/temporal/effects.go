package temporal

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// Activity names of the effects Decide asks for besides steps: each runs
// on a worker, in the step's folder (the folder of phases.yaml), with the
// same code as the local driver's.
const (
	ActivityCheckpoint = "Checkpoint"
	ActivityRunHooks   = "RunHooks"
	ActivityTakeMemory = "TakeMemory"
)

// EffectInput is the session an effect is for, its plan, and, for the
// hooks, its state as the workflow holds it (the others need none: it
// would only weigh on the history).
type EffectInput struct {
	SessionID string       `json:"session_id"`
	Plan      PlanSource   `json:"plan"`
	State     engine.State `json:"state,omitzero"`
}

// CheckpointInput asks for one checkpoint.
type CheckpointInput struct {
	EffectInput
	Checkpoint engine.Checkpoint `json:"checkpoint"`
}

// CheckpointOutput is the commit made, or why there is none: NoGit, the
// folder is not in a git work tree; Problem, what git said.
type CheckpointOutput struct {
	Commit  string `json:"commit,omitempty"`
	NoGit   bool   `json:"no_git,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// HooksInput asks for the on: commands of Events, each bounded by
// Timeout (session.HookTimeout when 0).
type HooksInput struct {
	EffectInput
	Events  []string      `json:"events"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// MemoryInput asks for the changes to the working set a human made in
// the worker's copy of the session after the event After of its log.
type MemoryInput struct {
	EffectInput
	After int64 `json:"after,omitempty"`
}

// MemoryOutput is those changes, oldest first, for the workflow to
// decide, and Last, the event of the copy's log they go up to: the next
// TakeMemory asks for what came after it.
type MemoryOutput struct {
	Remembered []engine.Remembered `json:"remembered,omitempty"`
	Last       int64               `json:"last,omitempty"`
}

// openEffect opens the worker's copy of the session an effect is for.
func (a *Activities) openEffect(ctx context.Context, in EffectInput) (*session.Session, error) {
	plan, err := in.Plan.Load()
	if err != nil {
		return nil, err
	}
	return a.open(ctx, in.SessionID, plan)
}

// Checkpoint keeps the work tree in git as the workflow's decision asks,
// with the local driver's code (local.TakeCheckpoint). A checkpoint git
// cannot make is no error: the output says why, and the session goes on.
func (a *Activities) Checkpoint(ctx context.Context, in CheckpointInput) (CheckpointOutput, error) {
	sess, err := a.openEffect(ctx, in.EffectInput)
	if err != nil {
		return CheckpointOutput{}, err
	}
	defer sess.Close()
	git := sess.Git()
	if git == nil {
		return CheckpointOutput{NoGit: true}, nil
	}
	// The work tree is looked at anew: this activity has no step's last
	// look at hand (the local driver hands its step's on, two git
	// processes fewer; the tree is the same).
	commit, _, err := local.TakeCheckpoint(git, in.SessionID, in.Checkpoint, session.WorkTree{})
	if err != nil {
		return CheckpointOutput{Problem: err.Error()}, nil
	}
	return CheckpointOutput{Commit: commit}, nil
}

// RunHooks runs the plan's on: commands for where the session stopped,
// as the local driver does when its run ends (session.RunHooksOf, with
// the workflow's state): their output goes to the worker's transcripts.
func (a *Activities) RunHooks(ctx context.Context, in HooksInput) error {
	sess, err := a.openEffect(ctx, in.EffectInput)
	if err != nil {
		return err
	}
	defer sess.Close()
	log := activity.GetLogger(ctx)
	sess.RunHooksOf(ctx, in.State, in.Timeout, func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) })
	return nil
}

// TakeMemory returns the changes to the working set a human made for
// the session (pipeline memory pin, task add …) since the last it
// returned, for the workflow to decide before the next step starts. On
// a worker every change reaches the copy of the session first: recorded
// there at once while no step runs, or left as a request that opening
// the copy records (session.Open, and Close after a step). So the copy's
// log is read, from After on; what the copy recorded stays there.
func (a *Activities) TakeMemory(ctx context.Context, in MemoryInput) (MemoryOutput, error) {
	sess, err := a.openEffect(ctx, in.EffectInput)
	if err != nil {
		return MemoryOutput{}, err
	}
	defer sess.Close()
	out := MemoryOutput{Last: in.After}
	err = sess.X.Events(in.After, func(seq int64, typ string, payload []byte) error {
		out.Last = seq
		if typ != "Remembered" {
			return nil
		}
		ev, err := engine.DecodeEvent(typ, payload)
		if err != nil {
			return err
		}
		if r := ev.(engine.Remembered); r.Source == engine.SourceHuman {
			out.Remembered = append(out.Remembered, r)
		}
		return nil
	})
	return out, err
}
