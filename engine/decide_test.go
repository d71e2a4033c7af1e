package engine_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// planOf loads an inline phases.yaml.
func planOf(t *testing.T, yamlText string) *spec.Plan {
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

// session drives Decide with a fake clock, one event at a time.
type session struct {
	t     *testing.T
	plan  *spec.Plan
	state engine.State
	now   time.Time
	// effects are the effect actions (checkpoints, hooks, memory) of the
	// last event, which send leaves out of what it returns: the tests of
	// effects_test.go look at them.
	effects []engine.Action
}

func newSession(t *testing.T, plan *spec.Plan) (*session, []engine.Action) {
	s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	return s, s.send(engine.Started{At: s.now})
}

func (s *session) send(ev engine.Event) []engine.Action {
	before := s.state
	snapshot := deepCopy(s.t, before)
	next, actions := engine.Decide(s.plan, s.state, ev)
	if !reflect.DeepEqual(deepCopy(s.t, before), snapshot) {
		s.t.Fatalf("Decide changed the state it was given")
	}
	s.state = next
	s.effects = nil
	var decided []engine.Action
	for _, a := range actions {
		switch a.(type) {
		case engine.Checkpoint, engine.RunHooks, engine.TakeMemory:
			s.effects = append(s.effects, a)
		default:
			decided = append(decided, a)
		}
	}
	return decided
}

// finish ends the running step after d with the given result.
func (s *session) finish(d time.Duration, r engine.StepResult) []engine.Action {
	s.now = s.now.Add(d)
	r.Elapsed = d
	return s.send(engine.StepFinished{At: s.now, Result: r})
}

// sleepThrough expects a Sleep of want, advances the fake clock by it and
// delivers the timer.
func (s *session) sleepThrough(actions []engine.Action, want time.Duration) []engine.Action {
	s.t.Helper()
	sleep, ok := last(actions).(engine.Sleep)
	if !ok || sleep.Duration != want {
		s.t.Fatalf("want Sleep(%v), got %#v", want, actions)
	}
	s.now = s.now.Add(sleep.Duration)
	return s.send(engine.TimerExpired{At: s.now})
}

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

func last(actions []engine.Action) engine.Action {
	if len(actions) == 0 {
		return nil
	}
	return actions[len(actions)-1]
}

func wantStart(t *testing.T, actions []engine.Action, phase, step, attempt int, sessionID string) {
	t.Helper()
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.Phase != phase || start.Step != step || start.Attempt != attempt || start.SessionID != sessionID {
		t.Fatalf("want StartStep{phase %d, step %d, attempt %d, session %q}, got %#v", phase, step, attempt, sessionID, actions)
	}
}

func wantPause(t *testing.T, actions []engine.Action, reason string) engine.Firing {
	t.Helper()
	p, ok := last(actions).(engine.Pause)
	if !ok || p.Firing.Reason != reason {
		t.Fatalf("want Pause(%s), got %#v", reason, actions)
	}
	return p.Firing
}

const policies = `
version: 1
agent: {kind: command, command: [agent], feature: f}
defaults:
  pause_when:
    tokens: tokens > 15000
    time: elapsed > duration("30m")
    checkpoint: checkpoint
  restart_when:
    errors: consecutive_errors >= 3
    context: context_tokens > 350000
  retry:
    when: exit_code != 0 || timed_out
    backoff: duration("10s") * consecutive_errors
    escalate_when: attempt > 3
`

// Three failures in a row back off 10s, 20s, 30s; the third also restarts
// the native session; the fourth failed attempt escalates to a human.
func TestDecideBackoffRestartEscalate(t *testing.T) {
	s, actions := newSession(t, planOf(t, policies+"phases: [{name: build}]\n"))
	wantStart(t, actions, 0, 0, 1, "")
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 1, SessionID: "native-1"})
	actions = s.sleepThrough(actions, 10*time.Second)
	wantStart(t, actions, 0, 0, 2, "native-1")
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 1, SessionID: "native-1"})
	actions = s.sleepThrough(actions, 20*time.Second)
	wantStart(t, actions, 0, 0, 3, "native-1")
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 2, SessionID: "native-1"})
	actions = s.sleepThrough(actions, 30*time.Second)
	if drop, ok := actions[0].(engine.DropSession); !ok || drop.Key != "feature:f" {
		t.Fatalf("the third failure should restart the native session: %#v", actions)
	}
	wantStart(t, actions, 0, 0, 4, "")
	if rec := s.state.Phases[0]; rec.Restarts != 1 || rec.Retries != 3 || rec.Fired[0].Reason != "errors" {
		t.Errorf("phase record %+v", rec)
	}
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 1, SessionID: "native-2"})
	f := wantPause(t, actions, engine.ReasonNeedsHuman)
	if f.Values["attempt"] != 4 || f.Expression != "attempt > 3" {
		t.Errorf("escalation record %+v", f)
	}
	if s.state.Status != engine.StatusPaused || s.state.Errors != 4 {
		t.Errorf("state %+v", s.state)
	}
}

func TestDecideContextRestart(t *testing.T) {
	s, actions := newSession(t, planOf(t, policies+"phases: [{name: design}, {name: build}]\n"))
	wantStart(t, actions, 0, 0, 1, "")
	actions = s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 400000})
	// The next phase shares the feature, but the session is dropped.
	if len(actions) != 2 {
		t.Fatalf("want DropSession and StartStep, got %#v", actions)
	}
	if _, ok := actions[0].(engine.DropSession); !ok {
		t.Fatalf("want DropSession first, got %#v", actions)
	}
	wantStart(t, actions, 1, 0, 1, "")
	if fired := s.state.Phases[0].Fired; len(fired) != 1 || fired[0].Reason != "context" || fired[0].Values["context_tokens"] != 400000 {
		t.Errorf("fired %+v", fired)
	}
}

func TestDecideSharesFeatureSessionAcrossPhases(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: design}, {name: build}]\n"))
	actions := s.finish(time.Minute, engine.StepResult{SessionID: "native-1"})
	wantStart(t, actions, 1, 0, 1, "native-1")
}

func TestDecideCheckpointPausesLiveAndAtEnd(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: design}, {name: build}]\n"))
	actions := s.send(engine.TriggerFired{At: s.now, Firing: engine.Firing{Reason: "checkpoint", Note: "design drafted"}})
	if stop, ok := last(actions).(engine.StopStep); !ok || stop.Reason != "checkpoint" {
		t.Fatalf("want StopStep, got %#v", actions)
	}
	// A second firing while stopping asks nothing more.
	if again := s.send(engine.TriggerFired{At: s.now, Firing: engine.Firing{Reason: "tokens"}}); len(again) != 0 {
		t.Fatalf("second firing: %#v", again)
	}
	actions = s.finish(time.Second, engine.StepResult{ExitCode: -1, Stopped: true, Checkpoint: true, CheckpointNote: "design drafted"})
	f := wantPause(t, actions, "checkpoint")
	if f.Note != "design drafted" || s.state.Phase != 0 || s.state.Step != 0 {
		t.Errorf("pause %+v at phase %d step %d", f, s.state.Phase, s.state.Step)
	}
	// Resume runs the paused step again.
	actions = s.send(engine.Resumed{At: s.now, Notes: "looks good"})
	wantStart(t, actions, 0, 0, 1, "")
	// A checkpoint seen only at the end pauses too.
	actions = s.finish(time.Second, engine.StepResult{Checkpoint: true, CheckpointNote: "again"})
	wantPause(t, actions, "checkpoint")
}

func TestDecideTimeLimitPauses(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: design}]\n"))
	actions := s.finish(31*time.Minute, engine.StepResult{})
	f := wantPause(t, actions, "time")
	if f.Values["elapsed"] != "31m0s" {
		t.Errorf("values %+v", f.Values)
	}
}

func TestDecideDoneWhenRerunsThePhase(t *testing.T) {
	plan := planOf(t, policies+`phases:
  - name: build
    steps:
      - agent: {}
      - {name: test, run: go test ./...}
    done_when: steps.test.exit_code == 0
  - name: review
`)
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{})
	wantStart(t, actions, 0, 1, 1, "")
	// The test fails: not retried alone, the phase runs again.
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 1})
	wantStart(t, actions, 0, 0, 2, "")
	if s.state.ConsecutiveErrors != 1 {
		t.Errorf("a false done_when counts as an error: %+v", s.state)
	}
	s.finish(time.Minute, engine.StepResult{})
	actions = s.finish(time.Minute, engine.StepResult{ExitCode: 0})
	wantStart(t, actions, 1, 0, 1, "")
	if s.state.Phases[0].Status != engine.StatusCompleted || s.state.Phases[0].Attempts != 2 {
		t.Errorf("build record %+v", s.state.Phases[0])
	}
}

func TestDecideDoneWhenNeverTrueEscalates(t *testing.T) {
	plan := planOf(t, policies+`phases:
  - name: build
    steps: [{agent: {}}, {name: test, run: "false"}]
    done_when: steps.test.exit_code == 0
`)
	s, _ := newSession(t, plan)
	var actions []engine.Action
	for attempt := 1; attempt <= 4; attempt++ {
		s.finish(time.Minute, engine.StepResult{})
		actions = s.finish(time.Minute, engine.StepResult{ExitCode: 1})
		if attempt < 4 {
			wantStart(t, actions, 0, 0, attempt+1, "")
		}
	}
	wantPause(t, actions, engine.ReasonNeedsHuman)
}

func TestDecideAutoAdvanceFalsePausesAtTheBoundary(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: design, auto_advance: false}, {name: build}]\n"))
	actions := s.finish(time.Minute, engine.StepResult{})
	f := wantPause(t, actions, engine.ReasonPhaseComplete)
	if !strings.Contains(f.Note, `"design"`) || s.state.Phases[0].Status != engine.StatusCompleted {
		t.Errorf("pause %+v, record %+v", f, s.state.Phases[0])
	}
	actions = s.send(engine.Resumed{At: s.now})
	wantStart(t, actions, 1, 0, 1, "")
	actions = s.finish(time.Minute, engine.StepResult{})
	if _, ok := last(actions).(engine.Complete); !ok || s.state.Status != engine.StatusCompleted {
		t.Fatalf("want Complete, got %#v", actions)
	}
}

func TestDecideUnhandledFailureFails(t *testing.T) {
	plan := planOf(t, `version: 1
phases: [{name: build, steps: [{run: make}], retry: {when: "false"}}]
`)
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{ExitCode: 2})
	if f, ok := last(actions).(engine.Fail); !ok || !strings.Contains(f.Reason, "exit code 2") {
		t.Fatalf("want Fail, got %#v", actions)
	}
}

func TestDecideRuntimeExpressionErrorPauses(t *testing.T) {
	plan := planOf(t, `version: 1
phases: [{name: build, steps: [{run: make}], pause_when: {big: spec.points > 3}}]
`)
	plan.SpecValues = map[string]any{"points": "many"}
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{})
	f := wantPause(t, actions, engine.ReasonExpressionError)
	if !strings.Contains(f.Note, "spec.points > 3") {
		t.Errorf("note %q", f.Note)
	}
	// Placed in the file once: the expression is not repeated.
	if strings.Count(f.Note, "spec.points > 3") != 1 || !strings.Contains(f.Note, "phases.yaml:2:") {
		t.Errorf("note %q: want the expression once, with its place in the file", f.Note)
	}
}

func TestDecidePauseRequested(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: build}]\n"))
	actions := s.send(engine.PauseRequested{At: s.now, Reason: engine.ReasonInterrupted})
	if _, ok := last(actions).(engine.StopStep); !ok {
		t.Fatalf("want StopStep, got %#v", actions)
	}
	actions = s.finish(time.Second, engine.StepResult{ExitCode: -1, Stopped: true})
	wantPause(t, actions, engine.ReasonInterrupted)

	// During a back-off the pause is immediate, and resume retries.
	s, _ = newSession(t, planOf(t, policies+"phases: [{name: build}]\n"))
	actions = s.finish(time.Second, engine.StepResult{ExitCode: 1})
	if _, ok := last(actions).(engine.Sleep); !ok {
		t.Fatalf("want Sleep, got %#v", actions)
	}
	wantPause(t, s.send(engine.PauseRequested{At: s.now, Notes: "wait"}), engine.ReasonHuman)
	if late := s.send(engine.TimerExpired{At: s.now}); len(late) != 0 {
		t.Fatalf("a timer after the pause started something: %#v", late)
	}
	wantStart(t, s.send(engine.Resumed{At: s.now}), 0, 0, 2, "")
	if s.state.Phases[0].Human != 2 {
		t.Errorf("human interventions %d, want 2", s.state.Phases[0].Human)
	}
}

func TestDecideTotalsAcrossSteps(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: a}, {name: b}]\n"))
	s.finish(time.Minute, engine.StepResult{Tokens: 100, CostUSD: 0.5})
	actions := s.finish(2*time.Minute, engine.StepResult{Tokens: 50, CostUSD: 0.25})
	if _, ok := last(actions).(engine.Complete); !ok {
		t.Fatalf("want Complete, got %#v", actions)
	}
	st := s.state
	if st.TotalTokens != 150 || st.CostUSD != 0.75 || st.SessionElapsed != 3*time.Minute || st.Phases[1].Tokens != 50 {
		t.Errorf("totals %+v", st)
	}
}

// A resume with another agent kind or model than the one that made the
// native session says so and starts fresh: a CLI never gets another's id.
func TestDecideAgentChangeStartsFresh(t *testing.T) {
	first := planOf(t, "version: 1\nagent: {kind: command, command: [a], model: m1, feature: f}\nphases: [{name: one, auto_advance: false}, {name: two}]\n")
	s, _ := newSession(t, first)
	s.finish(time.Second, engine.StepResult{SessionID: "native-1"})
	if s.state.Status != engine.StatusPaused || s.state.NativeAgents["feature:f"] != "command/m1" {
		t.Fatalf("state %+v", s.state)
	}
	s.plan = planOf(t, "version: 1\nagent: {kind: command, command: [a], model: m2, feature: f}\nphases: [{name: one, auto_advance: false}, {name: two}]\n")
	actions := s.send(engine.Resumed{At: s.now})
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.SessionID != "" || !start.ResumeContext || !strings.Contains(start.Note, "command/m2") {
		t.Fatalf("actions %#v", actions)
	}
	if _, ok := actions[0].(engine.DropSession); !ok {
		t.Fatalf("the old session is not dropped: %#v", actions)
	}
}

// Regression: Decide wrote into its input. clone() did not copy a phase's
// Notes (nor Files), so two decisions taken from one state shared the
// spare capacity of its Notes, and the second overwrote the first's note.
// Branch: two events applied to one state, then both results and the input
// checked.
func TestDecideBranchesDoNotShareNotes(t *testing.T) {
	plan := planOf(t, policies+"phases: [{name: a}]\n")
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s, _ := engine.Decide(plan, engine.State{}, engine.Started{At: at})
	s, _ = engine.Decide(plan, s, engine.StepFinished{At: at, Result: engine.StepResult{Checkpoint: true,
		Files: []string{"a.go", "b.go", "c.go"}}})
	for _, n := range []string{"one", "two", "three"} {
		s, _ = engine.Decide(plan, s, engine.Noted{At: at, Notes: n})
	}
	if got := s.Phases[0].Notes; len(got) != 3 || cap(got) == len(got) {
		t.Fatalf("the test needs notes with spare capacity: len %d cap %d", len(got), cap(got))
	}
	before := deepCopy(t, s)
	a, _ := engine.Decide(plan, s, engine.Noted{At: at, Notes: "A"})
	b, _ := engine.Decide(plan, s, engine.Noted{At: at, Notes: "B"})
	if got := a.Phases[0].Notes; len(got) != 4 || got[3] != "A" {
		t.Errorf("branch A's notes: %q", got)
	}
	if got := b.Phases[0].Notes; len(got) != 4 || got[3] != "B" {
		t.Errorf("branch B's notes: %q", got)
	}
	if !reflect.DeepEqual(deepCopy(t, s), before) {
		t.Errorf("the input state changed")
	}
	// Files: a branch that changes its copy leaves the other alone.
	a.Phases[0].Files[0] = "changed"
	if b.Phases[0].Files[0] != "a.go" || s.Phases[0].Files[0] != "a.go" {
		t.Errorf("files are shared between states: %q %q", b.Phases[0].Files, s.Phases[0].Files)
	}
}

// Issue 12: the resume context words the reason it is owed for.
func TestResumeWhyNamesWhatHappened(t *testing.T) {
	plan := planOf(t, policies+"phases: [{name: design}, {name: build}]\n")
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 400000})
	start := last(actions).(engine.StartStep)
	if reason, why, _ := engine.ResumeWhy(plan, s.state, start); reason != "restart: context" || !strings.Contains(why, `restart policy "context"`) {
		t.Errorf("after a restart: %q, %q", reason, why)
	}
	actions = s.send(engine.Recovered{At: s.now})
	start = last(actions).(engine.StartStep)
	if reason, why, _ := engine.ResumeWhy(plan, s.state, start); reason != engine.ReasonRunnerDied || !strings.Contains(why, "killed or crashed") {
		t.Errorf("after a recovery: %q, %q", reason, why)
	}
	if s.state.Resuming != nil {
		t.Errorf("the agent step took the resumption, the state keeps %+v", s.state.Resuming)
	}
}
