package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// conditional is a plan whose docs phase runs only for a spec whose
// priority is not low, and whose review runs only when build changed
// files.
const conditional = `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: build
  - name: docs
    when: spec.priority != "low"
  - name: review
    when: phases.build.files_changed > 0 && phases.docs.status == "completed"
`

// A when: that is true runs its phase, as if it had none.
func TestDecideWhenTrueRunsThePhase(t *testing.T) {
	plan := planOf(t, conditional)
	plan.SpecValues = map[string]any{"priority": "high"}
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{Files: []string{"main.go"}})
	wantStart(t, actions, 1, 0, 1, "")
	actions = s.finish(time.Minute, engine.StepResult{})
	wantStart(t, actions, 2, 0, 1, "")
	if s.state.Phases[1].Status != engine.StatusCompleted || s.state.Phases[2].Status != engine.StatusRunning {
		t.Errorf("phases %+v", s.state.Phases)
	}
	if skipped := engine.SkippedBy(s.state.Phases[1]); skipped != nil {
		t.Errorf("docs ran, yet SkippedBy = %+v", skipped)
	}
}

// A when: that is false skips its phase with the expression and the
// values it read (only those it read); the next phase runs, told so by a
// resume context; a skipped last phase completes the session.
func TestDecideWhenFalseSkipsWithValues(t *testing.T) {
	plan := planOf(t, conditional)
	plan.SpecValues = map[string]any{"priority": "low", "owner": "ann"}
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{Files: []string{"main.go"}})
	if _, ok := last(actions).(engine.Complete); !ok || s.state.Status != engine.StatusCompleted {
		t.Fatalf("docs and review skipped: want Complete, got %#v (state %s)", actions, s.state.Status)
	}
	docs := engine.SkippedBy(s.state.Phases[1])
	if s.state.Phases[1].Status != engine.StatusSkipped || docs == nil {
		t.Fatalf("docs record %+v: want skipped by its when", s.state.Phases[1])
	}
	if docs.Expression != `spec.priority != "low"` {
		t.Errorf("expression %q", docs.Expression)
	}
	if got, _ := json.Marshal(docs.Values); string(got) != `{"spec":{"priority":"low"}}` {
		t.Errorf("values %s: want only the key read", got)
	}
	review := engine.SkippedBy(s.state.Phases[2])
	if review == nil {
		t.Fatalf("review record %+v: want skipped", s.state.Phases[2])
	}
	if got := strings.Join(engine.FlatValues(review.Values), ", "); got != "phases.build.attempts=1, phases.build.files_changed=1, phases.build.status=completed, phases.docs.attempts=0, phases.docs.files_changed=0, phases.docs.status=skipped" {
		t.Errorf("review read %s", got)
	}
	if line := engine.CompletedLine(s.state); line != "completed: 1 phase run, 2 skipped" {
		t.Errorf("completed line %q", line)
	}
	report := engine.Report(plan, s.state)
	if report.Phases[1].SkippedBy == nil || report.Phases[1].Status != "skipped" || report.Phases[0].SkippedBy != nil {
		t.Errorf("report phases %+v", report.Phases)
	}
}

// The phase after a skipped one starts with a resume context that names
// the skip.
func TestDecideWhenFalseTellsTheNextAgent(t *testing.T) {
	plan := planOf(t, `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: design
    when: files_changed > 0
  - name: build
`)
	s, actions := newSession(t, plan)
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.Phase != 1 || !start.ResumeContext {
		t.Fatalf("want build started with a resume context, got %#v", actions)
	}
	reason, why, _ := engine.ResumeWhy(plan, s.state, start)
	if reason != "skipped: design" || !strings.Contains(why, "files_changed > 0") {
		t.Errorf("ResumeWhy = %q, %q", reason, why)
	}
}

// A when: that fails at run time pauses with expression-error at its
// phase, never taken as false; once the spec is fixed, the resume decides
// it again.
func TestDecideWhenErrorPauses(t *testing.T) {
	plan := planOf(t, `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: build
  - name: docs
    when: spec.points > 3
`)
	plan.SpecValues = map[string]any{"points": "many"}
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{})
	f := wantPause(t, actions, engine.ReasonExpressionError)
	if !strings.Contains(f.Note, "spec.points > 3") || s.state.Phase != 1 || s.state.Phases[1].Status == engine.StatusSkipped {
		t.Fatalf("pause %+v at phase %d (%+v)", f, s.state.Phase, s.state.Phases[1])
	}
	plan.SpecValues = map[string]any{"points": 1}
	actions = s.send(engine.Resumed{At: s.now})
	if _, ok := last(actions).(engine.Complete); !ok || engine.SkippedBy(s.state.Phases[1]) == nil {
		t.Fatalf("resumed with points 1: want docs skipped and Complete, got %#v", actions)
	}
}

// A phase behind a human gate is reached when the gate is resumed: its
// when: is decided then.
func TestDecideWhenAfterAGate(t *testing.T) {
	plan := planOf(t, `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: build
    auto_advance: false
  - name: docs
    when: spec.priority != "low"
  - name: review
`)
	plan.SpecValues = map[string]any{"priority": "low"}
	s, _ := newSession(t, plan)
	wantPause(t, s.finish(time.Minute, engine.StepResult{}), engine.ReasonPhaseComplete)
	actions := s.send(engine.Resumed{At: s.now})
	wantStart(t, actions, 2, 0, 1, "")
	if engine.SkippedBy(s.state.Phases[1]) == nil {
		t.Errorf("docs %+v: want skipped", s.state.Phases[1])
	}
}

// A phase named on the command line runs whatever its when: says.
func TestDecideWhenNamedPhaseRuns(t *testing.T) {
	plan := planOf(t, conditional)
	plan.SpecValues = map[string]any{"priority": "low"}
	s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	actions := s.send(engine.Started{At: s.now, From: "docs"})
	wantStart(t, actions, 1, 0, 1, "")
}
