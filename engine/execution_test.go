package engine_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

const twoSteps = `version: 1
phases:
  - name: build
    steps:
      - name: one
        run: "true"
      - name: two
        run: "true"
    pause_when:
      slow: elapsed > duration("1h")
`

// startOf returns the StartStep among actions, failing the test when
// there is none.
func startOf(t *testing.T, actions []engine.Action) engine.StartStep {
	t.Helper()
	for _, a := range actions {
		if start, ok := a.(engine.StartStep); ok {
			return start
		}
	}
	t.Fatalf("no StartStep in %#v", actions)
	return engine.StartStep{}
}

// TestExecutionNumbersCountEveryStart: each step started gets the next
// number, kept in the state.
func TestExecutionNumbersCountEveryStart(t *testing.T) {
	s, actions := newSession(t, planOf(t, twoSteps))
	first := startOf(t, actions)
	if first.Execution != 1 || s.state.Execution != 1 {
		t.Fatalf("first step: execution %d, state %d; want 1", first.Execution, s.state.Execution)
	}
	second := startOf(t, s.send(engine.StepFinished{At: s.now, Result: engine.StepResult{}, Execution: 1}))
	if second.Execution != 2 || second.Step != 1 || s.state.Execution != 2 {
		t.Fatalf("second step: %+v, state %d; want step 1, execution 2", second, s.state.Execution)
	}
}

// TestLateTriggerLeavesTheNextStepAlone is the regression of issue 22: a
// trigger of step one, delivered after step one ended and step two
// started, changes nothing; the same trigger of step two stops it.
func TestLateTriggerLeavesTheNextStepAlone(t *testing.T) {
	s, _ := newSession(t, planOf(t, twoSteps))
	startOf(t, s.send(engine.StepFinished{At: s.now, Result: engine.StepResult{}, Execution: 1}))
	before := deepCopy(t, s.state)
	late := engine.TriggerFired{At: s.now, Execution: 1, Firing: engine.Firing{Reason: "slow", At: s.now}}
	if actions := s.send(late); len(actions) != 0 {
		t.Fatalf("a trigger of an ended step asked for %#v", actions)
	}
	if !reflect.DeepEqual(deepCopy(t, s.state), before) {
		t.Fatalf("a trigger of an ended step changed the state:\n%+v\nwant\n%+v", s.state, before)
	}
	// A late end of step one is dropped as well: step two still runs.
	if actions := s.send(engine.StepFinished{At: s.now, Result: engine.StepResult{ExitCode: 9}, Execution: 1}); len(actions) != 0 || !s.state.StepRunning {
		t.Fatalf("a second end of step one: %#v, running %v", actions, s.state.StepRunning)
	}
	actions := s.send(engine.StepFinished{At: s.now.Add(time.Second), Result: engine.StepResult{}, Execution: 2})
	if _, ok := last(actions).(engine.Complete); !ok || s.state.Status != engine.StatusCompleted {
		t.Fatalf("step two's own end: %#v, %s; want the session completed", actions, s.state.Status)
	}

	s2, _ := newSession(t, planOf(t, twoSteps))
	s2.send(engine.StepFinished{At: s2.now, Result: engine.StepResult{}, Execution: 1})
	own := engine.TriggerFired{At: s2.now, Execution: 2, Firing: engine.Firing{Reason: "slow", At: s2.now}}
	if _, ok := last(s2.send(own)).(engine.StopStep); !ok {
		t.Fatal("the running step's own trigger did not stop it")
	}
}

// TestEventsWithoutExecutionDecideAsBefore: a session recorded before
// executions were numbered (its events carry 0) decides as it did.
func TestEventsWithoutExecutionDecideAsBefore(t *testing.T) {
	s, _ := newSession(t, planOf(t, twoSteps))
	s.state.Execution = 0 // as a state written before the field was
	ev, err := engine.DecodeEvent("TriggerFired", []byte(`{"At":"2026-11-25T09:00:00Z","Firing":{"reason":"slow","at":"2026-11-25T09:00:00Z"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.(engine.TriggerFired).Execution != 0 {
		t.Fatalf("decoded %+v", ev)
	}
	if _, ok := last(s.send(ev)).(engine.StopStep); !ok {
		t.Fatal("an old TriggerFired no longer stops the running step")
	}
	ev, err = engine.DecodeEvent("StepFinished", []byte(`{"At":"2026-11-25T09:00:01Z","Result":{"exit_code":0,"tokens":0,"elapsed":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := last(s.send(ev)).(engine.Pause); !ok || s.state.Pause.Reason != "slow" {
		t.Fatalf("an old StepFinished after the trigger: %+v", s.state.Pause)
	}
	// And a number written is read back.
	typ, payload, err := engine.EncodeEvent(engine.StepFinished{Execution: 7})
	if err != nil {
		t.Fatal(err)
	}
	back, err := engine.DecodeEvent(typ, payload)
	if err != nil || back.(engine.StepFinished).Execution != 7 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// A step a lost fleet worker ran counts as an attempt (NewAttempt): it
// runs again as the next one; a runner that died here runs it again as
// the same attempt, as before.
func TestARecoveryCountsAnAttemptWhenAsked(t *testing.T) {
	for _, c := range []struct {
		newAttempt bool
		want       int
	}{{false, 1}, {true, 2}} {
		s, _ := newSession(t, planOf(t, twoSteps))
		again := startOf(t, s.send(engine.Recovered{At: s.now, NewAttempt: c.newAttempt}))
		if again.Attempt != c.want || again.Phase != 0 || again.Step != 0 || s.state.Phases[0].Attempts != c.want {
			t.Errorf("NewAttempt %v: %+v, %d attempts; want the first step again as attempt %d", c.newAttempt, again, s.state.Phases[0].Attempts, c.want)
		}
	}
}
