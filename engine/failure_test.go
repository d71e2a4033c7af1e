package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

const fourPhases = `version: 1
defaults: {retry: {when: "false"}}
phases:
  - {name: design, steps: [{run: a}]}
  - {name: build, steps: [{run: b}, {name: test, run: c}]}
  - {name: docs, steps: [{run: d}]}
  - {name: review, steps: [{run: e}]}
`

func phaseStatuses(s engine.State) string {
	var out []string
	for _, p := range s.Phases {
		out = append(out, p.Name+"="+string(p.Status))
	}
	return strings.Join(out, " ")
}

// A failed session resumed retries the step that failed, as a new attempt,
// and the phases before it are not run again.
func TestDecideResumeOfAFailedSessionRetriesTheFailedStep(t *testing.T) {
	s, _ := newSession(t, planOf(t, fourPhases))
	s.finish(time.Minute, engine.StepResult{})                       // design
	s.finish(time.Minute, engine.StepResult{})                       // build/run
	actions := s.finish(time.Minute, engine.StepResult{ExitCode: 2}) // build/test
	if _, ok := last(actions).(engine.Fail); !ok || s.state.Status != engine.StatusFailed {
		t.Fatalf("want Fail, got %#v", actions)
	}
	actions = s.send(engine.Resumed{At: s.now, Notes: "fixed the fixture"})
	wantStart(t, actions, 1, 1, 2, "")
	if s.state.Status != engine.StatusRunning || s.state.FailReason != "" || s.state.Phases[1].Status != engine.StatusRunning {
		t.Fatalf("state after resume: %s, %q, %s", s.state.Status, s.state.FailReason, phaseStatuses(s.state))
	}
	if s.state.Phases[0].Status != engine.StatusCompleted || s.state.Phases[0].Attempts != 1 {
		t.Errorf("design ran again: %+v", s.state.Phases[0])
	}
}

// The agent of a failed session resumed is told it failed, and why: not
// that it paused, nor that its runner died.
func TestDecideResumeOfAFailedSessionSaysItFailed(t *testing.T) {
	s, _ := newSession(t, planOf(t, "version: 1\nagent: {kind: command, command: [agent]}\ndefaults: {retry: {when: \"false\"}}\nphases: [{name: design}]\n"))
	s.finish(time.Minute, engine.StepResult{ExitCode: 1, Output: "boom"})
	if s.state.Status != engine.StatusFailed {
		t.Fatalf("status %s, want failed", s.state.Status)
	}
	start := last(s.send(engine.Resumed{At: s.now})).(engine.StartStep)
	if reason, why, note := engine.ResumeWhy(s.plan, s.state, start); reason != engine.ResumedFromFailure ||
		!strings.Contains(why, "failed") || note == "" {
		t.Errorf("the resume context says %q, %q, %q; want the failure and its reason", reason, why, note)
	}
}

// resume --phase of a failed session jumps; the failed phase stays failed,
// the phases jumped over are skipped.
func TestDecideResumeOfAFailedSessionAtAnotherPhase(t *testing.T) {
	s, _ := newSession(t, planOf(t, fourPhases))
	s.finish(time.Minute, engine.StepResult{ExitCode: 1}) // design fails
	actions := s.send(engine.Resumed{At: s.now, Phase: "docs"})
	wantStart(t, actions, 2, 0, 1, "")
	if got, want := phaseStatuses(s.state), "design=failed build=skipped docs=running review="; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

func TestDecideRunFromAPhaseSkipsTheOnesBefore(t *testing.T) {
	plan := planOf(t, fourPhases)
	s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	actions := s.send(engine.Started{At: s.now, From: "docs"})
	wantStart(t, actions, 2, 0, 1, "")
	s.finish(time.Minute, engine.StepResult{})
	actions = s.finish(time.Minute, engine.StepResult{})
	if _, ok := last(actions).(engine.Complete); !ok {
		t.Fatalf("want Complete, got %#v", actions)
	}
	if got, want := phaseStatuses(s.state), "design=skipped build=skipped docs=completed review=completed"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

func TestDecideRunOnlyOnePhase(t *testing.T) {
	plan := planOf(t, fourPhases)
	s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	actions := s.send(engine.Started{At: s.now, From: "build", Only: true})
	wantStart(t, actions, 1, 0, 1, "")
	s.finish(time.Minute, engine.StepResult{})
	actions = s.finish(time.Minute, engine.StepResult{})
	if _, ok := last(actions).(engine.Complete); !ok || s.state.Status != engine.StatusCompleted {
		t.Fatalf("want Complete after the one phase, got %#v", actions)
	}
	if got, want := phaseStatuses(s.state), "design=skipped build=completed docs=skipped review=skipped"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

// A paused session resumed at a later phase shows the phases it jumped
// over, the one it paused in included, as skipped.
func TestDecideResumeAtALaterPhaseSkips(t *testing.T) {
	s, _ := newSession(t, planOf(t, fourPhases))
	s.send(engine.PauseRequested{At: s.now})
	s.finish(time.Second, engine.StepResult{ExitCode: 130, Stopped: true})
	actions := s.send(engine.Resumed{At: s.now, Phase: "review"})
	wantStart(t, actions, 3, 0, 1, "")
	if got, want := phaseStatuses(s.state), "design=skipped build=skipped docs=skipped review=running"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

// A step whose program could not start fails the session at once: no
// retry, no back-off, whatever retry.when says.
func TestDecideStepThatCouldNotStartIsNotRetried(t *testing.T) {
	s, _ := newSession(t, planOf(t, policies+"phases: [{name: build}]\n"))
	actions := s.finish(0, engine.StepResult{ExitCode: 127, NotStarted: true,
		Error: `exec: "agent": executable file not found in $PATH`})
	f, ok := last(actions).(engine.Fail)
	if !ok {
		t.Fatalf("want Fail, got %#v", actions)
	}
	if !strings.Contains(f.Reason, "could not start") || !strings.Contains(f.Reason, `"agent"`) {
		t.Errorf("reason %q", f.Reason)
	}
	if s.state.Phases[0].Retries != 0 || s.state.Attempt != 1 {
		t.Errorf("retried: %+v", s.state.Phases[0])
	}
}

func TestDecideCompletedByHand(t *testing.T) {
	s, _ := newSession(t, planOf(t, fourPhases))
	s.finish(time.Minute, engine.StepResult{ExitCode: 1})
	s.send(engine.Completed{At: s.now})
	r := engine.Report(s.plan, s.state)
	if r.Status != "completed" || !r.ByHand {
		t.Errorf("report status %q by hand %v", r.Status, r.ByHand)
	}
}

// A resume that found the work tree (its snapshot) starts the next phase's
// files_changed from it, so that the driver takes no second snapshot; a
// phase already under way keeps the tree it started from.
func TestDecideResumeSnapshotStartsThePhase(t *testing.T) {
	s, _ := newSession(t, planOf(t, "version: 1\ndefaults: {retry: {when: \"false\"}}\nphases:\n  - {name: design, auto_advance: false, steps: [{run: a}]}\n  - {name: build, steps: [{run: b}, {name: c, run: c}]}\n"))
	s.finish(time.Minute, engine.StepResult{HeadBefore: "h0", TreeBefore: "t0"})
	if s.state.Status != engine.StatusPaused {
		t.Fatalf("status %s, want paused at the review gate", s.state.Status)
	}
	s.send(engine.Resumed{At: s.now, Head: "h1", Tree: "t1"})
	if rec := s.state.Phases[1]; rec.HeadBefore != "h1" || rec.TreeBefore != "t1" {
		t.Errorf("build starts from %q/%q, want the resume's snapshot h1/t1", rec.HeadBefore, rec.TreeBefore)
	}
	s.send(engine.PauseRequested{At: s.now, Reason: engine.ReasonHuman})
	s.finish(time.Minute, engine.StepResult{Stopped: true, HeadBefore: "h1", TreeBefore: "t1"})
	s.send(engine.Resumed{At: s.now, Head: "h2", Tree: "t2"})
	if rec := s.state.Phases[1]; rec.TreeBefore != "t1" {
		t.Errorf("a resume mid-phase moved its starting tree to %q, want t1", rec.TreeBefore)
	}
}
