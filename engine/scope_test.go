package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// A step that changed files outside writes pauses with out-of-scope, even
// when it failed and the retry policy would retry it, and a resume runs
// the step again.
func TestDecideOutOfScopePauses(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+`phases:
  - name: docs
    writes: [docs/**]
    steps: [{name: write, run: w}, {name: check, run: c}]
`))
	actions := s.finish(time.Minute, engine.StepResult{ExitCode: 1, OutOfScope: []string{"a.go", "b.go"}})
	f := wantPause(t, actions, engine.ReasonOutOfScope)
	want := `step "write" changed 2 file(s) outside writes [docs/**]: a.go, b.go; review them, then resume (the step runs again)`
	if f.Note != want || f.Values["files_out_of_scope"] != 2 {
		t.Errorf("firing %+v, want note %q and files_out_of_scope=2", f, want)
	}
	wantStart(t, s.send(engine.Resumed{At: s.now}), 0, 0, 1, "")
}

// Reverted, the change is recorded in the phase and the phase goes on;
// files_out_of_scope reads how many files there were.
func TestDecideOutOfScopeRevertedGoesOn(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+`phases:
  - name: design
    writes: []
    on_out_of_scope: revert
    steps: [{name: sketch, run: s}, {name: look, run: l}]
    pause_when: {many: files_out_of_scope > 1}
`))
	actions := s.finish(time.Minute, engine.StepResult{OutOfScope: []string{"x.md"}, Reverted: true})
	wantStart(t, actions, 0, 1, 1, "")
	fired := s.state.Phases[0].Fired
	if len(fired) != 1 || fired[0].Reason != engine.ReasonOutOfScopeReverted ||
		!strings.Contains(fired[0].Note, "outside writes [] (read-only): x.md; put back as they were before the step") {
		t.Errorf("fired %+v, want one out-of-scope-reverted naming x.md", fired)
	}
	actions = s.finish(time.Minute, engine.StepResult{OutOfScope: []string{"x.md", "y.md"}, Reverted: true})
	if f := wantPause(t, actions, "many"); f.Values["files_out_of_scope"] != 2 {
		t.Errorf("many fired with %v, want files_out_of_scope=2", f.Values)
	}
}
