package engine_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// kinds names the actions in order, with what tells effects apart:
// "Checkpoint(01-build)", "RunHooks(paused)", "TakeMemory", "StartStep".
func kinds(actions []engine.Action) string {
	var out []string
	for _, a := range actions {
		switch a := a.(type) {
		case engine.Checkpoint:
			name := a.Name
			if a.Commit {
				name += ",commit"
			}
			out = append(out, "Checkpoint("+name+")")
		case engine.RunHooks:
			out = append(out, "RunHooks("+strings.Join(a.Events, ",")+")")
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", a), "engine."))
		}
	}
	return strings.Join(out, " ")
}

// decided runs Decide and keeps its state: the actions as Decide gives
// them, effects included.
type decided struct {
	t     *testing.T
	s     *session
	state engine.State
}

func (d *decided) send(ev engine.Event) string {
	d.t.Helper()
	next, actions := engine.Decide(d.s.plan, d.state, ev)
	d.state = next
	return kinds(actions)
}

func wantKinds(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: actions %s\nwant %s", what, got, want)
	}
}

const effectsPlan = `version: 1
on:
  paused: [echo paused]
  completed: [echo done]
phases:
  - name: build
    steps:
      - run: make
  - name: test
    steps:
      - run: make test
    pause_when:
      checkpoint: checkpoint
`

// TestCheckpointsComeBeforeTheNextStep: the session's start, each phase
// completed and each pause ask for a checkpoint, ahead of the step that
// follows (none of its writes may get in), and the memory is taken just
// before each step starts.
func TestCheckpointsComeBeforeTheNextStep(t *testing.T) {
	s, _ := newSession(t, planOf(t, "version: 1\nphases: [{name: build, steps: [{run: make}]}, {name: test, steps: [{run: make test}]}]\n"))
	d := &decided{t: t, s: s}
	now := s.now
	wantKinds(t, "start", d.send(engine.Started{At: now}), "Checkpoint(00-start) TakeMemory StartStep")
	wantKinds(t, "the start's checkpoint taken", d.send(engine.Checkpointed{At: now, Kind: engine.CheckpointStart, Phase: -1, Commit: "c0"}), "")
	wantKinds(t, "phase build done", d.send(engine.StepFinished{At: now, Execution: 1}), "Checkpoint(01-build) TakeMemory StartStep")
	d.send(engine.Checkpointed{At: now, Kind: engine.CheckpointPhase, Phase: 0, Commit: "c1"})
	if d.state.StartCheckpoint != "c0" || d.state.Phases[0].Checkpoint != "c1" {
		t.Fatalf("checkpoints recorded: start %q, build %q", d.state.StartCheckpoint, d.state.Phases[0].Checkpoint)
	}
	wantKinds(t, "a pause asked for", d.send(engine.PauseRequested{At: now, Reason: engine.ReasonHuman}), "StopStep")
	wantKinds(t, "the step stopped", d.send(engine.StepFinished{At: now, Execution: 2, Result: engine.StepResult{Stopped: true, ExitCode: -1}}),
		"Checkpoint(02-test-paused) Pause")
	wantKinds(t, "resumed", d.send(engine.Resumed{At: now}), "TakeMemory StartStep")
	wantKinds(t, "the last phase done", d.send(engine.StepFinished{At: now, Execution: 3}), "Checkpoint(02-test) Complete")
}

// TestCheckpointModes: checkpoint: off asks for none; checkpoint: commit
// commits a phase's end on the branch, the rest under refs.
func TestCheckpointModes(t *testing.T) {
	for _, c := range []struct{ mode, start, phase string }{
		{"off", "TakeMemory StartStep", "Complete"},
		{"commit", "Checkpoint(00-start) TakeMemory StartStep", "Checkpoint(01-build,commit) Complete"},
		{"refs", "Checkpoint(00-start) TakeMemory StartStep", "Checkpoint(01-build) Complete"},
	} {
		s, _ := newSession(t, planOf(t, "version: 1\ncheckpoint: "+c.mode+"\nphases: [{name: build, steps: [{run: make}]}]\n"))
		d := &decided{t: t, s: s}
		wantKinds(t, c.mode+" start", d.send(engine.Started{At: s.now}), c.start)
		wantKinds(t, c.mode+" end", d.send(engine.StepFinished{At: s.now, Execution: 1}), c.phase)
	}
}

// TestHooksComeWithTheRunsEnd: the on: commands of where the session
// stopped come just before the action that ends the run, and only when
// the plan has some for it.
func TestHooksComeWithTheRunsEnd(t *testing.T) {
	s, _ := newSession(t, planOf(t, effectsPlan))
	d := &decided{t: t, s: s}
	d.send(engine.Started{At: s.now})
	d.send(engine.StepFinished{At: s.now, Execution: 1})
	wantKinds(t, "a checkpoint pauses", d.send(engine.StepFinished{At: s.now, Execution: 2, Result: engine.StepResult{Checkpoint: true, CheckpointNote: "look"}}),
		"Checkpoint(02-test-paused) RunHooks(paused) Pause")
	wantKinds(t, "resumed", d.send(engine.Resumed{At: s.now}), "TakeMemory StartStep")
	wantKinds(t, "completed", d.send(engine.StepFinished{At: s.now, Execution: 3}), "Checkpoint(02-test) RunHooks(completed) Complete")

	// A failure with no failed: hook asks for none.
	s2, _ := newSession(t, planOf(t, "version: 1\non: {completed: [echo done]}\ncheckpoint: off\nphases: [{name: build, steps: [{run: make}]}]\n"))
	d2 := &decided{t: t, s: s2}
	d2.send(engine.Started{At: s2.now})
	wantKinds(t, "failed", d2.send(engine.StepFinished{At: s2.now, Execution: 1, Result: engine.StepResult{ExitCode: 1}}), "Fail")

	// needs-human runs the paused hooks, then the needs-human ones.
	if got := engine.HookEvents(engine.State{Status: engine.StatusPaused, Pause: &engine.Firing{Reason: engine.ReasonNeedsHuman}}); !reflect.DeepEqual(got, []string{"paused", "needs-human"}) {
		t.Fatalf("needs-human hooks: %v", got)
	}
}

// TestCommandsAskForNoEffects: a session completed by hand, or rewound,
// is changed by a command, not a run: no runner is there to carry out a
// checkpoint or a hook.
func TestCommandsAskForNoEffects(t *testing.T) {
	s, _ := newSession(t, planOf(t, effectsPlan))
	d := &decided{t: t, s: s}
	d.send(engine.Started{At: s.now})
	d.send(engine.PauseRequested{At: s.now})
	d.send(engine.StepFinished{At: s.now, Execution: 1, Result: engine.StepResult{Stopped: true}})
	wantKinds(t, "rewound", d.send(engine.Rewound{At: s.now, Phase: "build"}), "")
	wantKinds(t, "completed by hand", d.send(engine.Completed{At: s.now.Add(time.Minute)}), "Complete")
}

// TestMemoryIsTakenBeforeARetry: the step a back-off ends with starts
// after the memory is taken too.
func TestMemoryIsTakenBeforeARetry(t *testing.T) {
	s, _ := newSession(t, planOf(t, "version: 1\ncheckpoint: off\ndefaults: {retry: {when: exit_code != 0, backoff: duration(\"1s\")}}\nphases: [{name: build, steps: [{run: make}]}]\n"))
	d := &decided{t: t, s: s}
	d.send(engine.Started{At: s.now})
	wantKinds(t, "failed once", d.send(engine.StepFinished{At: s.now, Execution: 1, Result: engine.StepResult{ExitCode: 1}}), "Sleep")
	wantKinds(t, "back-off over", d.send(engine.TimerExpired{At: s.now.Add(time.Second)}), "TakeMemory StartStep")
}
