package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// Issue 23, item 2: auto_advance: false on the last phase was ignored (the
// session completed with no gate). It is a final sign-off: the session
// pauses after the last phase, and a resume completes it without running
// anything again; the same for the phase of run --only.
func TestIssue23AutoAdvanceFalseOnLastPhaseGates(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		start      engine.Started
	}{
		{"last phase", "phases: [{name: build}, {name: review, auto_advance: false}]\n", engine.Started{}},
		{"defaults", "defaults: {auto_advance: false}\nphases: [{name: review}]\n", engine.Started{}},
		{"run --only", "phases: [{name: build, auto_advance: false}, {name: review}]\n", engine.Started{From: "build", Only: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planOf(t, "version: 1\nagent: {kind: command, command: [agent]}\n"+tc.yaml)
			s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
			tc.start.At = s.now
			s.send(tc.start)
			var actions []engine.Action
			for s.state.Status == engine.StatusRunning {
				actions = s.finish(time.Minute, engine.StepResult{})
			}
			f := wantPause(t, actions, engine.ReasonPhaseComplete)
			gate := s.state.Phases[s.state.Phase]
			if gate.Status != engine.StatusCompleted || !strings.Contains(f.Note, "resume completes the session") {
				t.Fatalf("paused at %q (%s) with note %q; want the phase completed and a note that says what resume does", gate.Name, gate.Status, f.Note)
			}
			if r := engine.Report(plan, s.state); r.PauseReason != engine.ReasonPhaseComplete || r.Phase != gate.Name {
				t.Errorf("status says %q at %q", r.PauseReason, r.Phase)
			}
			actions = s.send(engine.Resumed{At: s.now, Notes: "signed off"})
			if _, ok := last(actions).(engine.Complete); !ok || len(actions) != 1 || s.state.Status != engine.StatusCompleted {
				t.Fatalf("resume after the final gate: want Complete alone, got %#v (status %s)", actions, s.state.Status)
			}
			if s.state.Pause != nil || s.state.ByHand {
				t.Errorf("completed with pause %+v, by hand %v", s.state.Pause, s.state.ByHand)
			}
			if got := s.state.Phases[s.state.Phase]; got.Attempts != 1 || got.Human != 1 || len(got.Notes) != 1 {
				t.Errorf("the last phase after the sign-off: %+v", got)
			}
		})
	}
}

// Issue 23, item 13: a failing run: step was retried by the built-in
// retry (10+20+30 s, then needs-human). The built-in retry is for agent
// steps; a run: step fails the phase at once, unless a file gives the
// phase a retry.when.
func TestIssue23RunStepFailsWithoutBuiltInRetry(t *testing.T) {
	plan := planOf(t, "version: 1\nagent: {kind: command, command: [agent]}\nphases:\n  - {name: build, steps: [{agent: {}}, {name: test, run: 'echo FAIL; exit 1'}]}\n")
	s, _ := newSession(t, plan)
	s.finish(time.Minute, engine.StepResult{})
	actions := s.finish(time.Second, engine.StepResult{ExitCode: 1, Output: "FAIL\n"})
	f, ok := last(actions).(engine.Fail)
	if !ok || s.state.Status != engine.StatusFailed || s.state.Phases[0].Retries != 0 {
		t.Fatalf("a failing run: step: want Fail at once, got %#v (status %s)", actions, s.state.Status)
	}
	if !strings.Contains(f.Reason, `step "test"`) || !strings.Contains(f.Reason, "retry") {
		t.Errorf("fail reason %q: want the step, and how to have it retried", f.Reason)
	}

	// The built-in retry still retries an agent step.
	s, _ = newSession(t, plan)
	wantStart(t, s.sleepThrough(s.finish(time.Minute, engine.StepResult{ExitCode: 7}), 10*time.Second), 0, 0, 2, "")

	// A retry written in phases.yaml (or a spec) retries a run: step, with
	// the escalation that comes with it.
	for _, retry := range []string{
		"defaults: {retry: {when: exit_code != 0}}\n",
		"defaults: {retry: {when: exit_code != 0, backoff: 1s, escalate_when: attempt > 1}}\n",
	} {
		s, _ = newSession(t, planOf(t, "version: 1\n"+retry+"phases:\n  - {name: build, steps: [{run: make}]}\n"))
		actions = s.finish(time.Second, engine.StepResult{ExitCode: 1})
		if _, ok := last(actions).(engine.Sleep); !ok {
			t.Errorf("%s: want the run: step retried, got %#v", retry, actions)
		}
	}
}
