package engine_test

import (
	"fmt"
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

// Issue 23, item 11: a needs-human pause had an empty note (the hook's
// $PIPELINE_NOTE, status's pause_note, the CI annotation). It names the
// step that failed, its exit code and its last error line; when a false
// done_when escalates, the steps that failed in the phase's last attempt.
func TestIssue23NeedsHumanPauseSaysWhatFailed(t *testing.T) {
	t.Run("retry escalates", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
defaults: {retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 2}}
phases: [{name: build, steps: [{name: lint, run: make lint}]}]
`))
		var actions []engine.Action
		for range 3 {
			actions = s.finish(time.Second, engine.StepResult{ExitCode: 7,
				Output: "checking…\nerror: cannot import module 'tokenize2'\n\n"})
		}
		f := wantPause(t, actions, engine.ReasonNeedsHuman)
		for _, want := range []string{`step "lint"`, "exit code 7", "error: cannot import module 'tokenize2'"} {
			if !strings.Contains(f.Note, want) {
				t.Errorf("needs-human note %q: want %q in it", f.Note, want)
			}
		}
		if r := engine.Report(s.plan, s.state); r.PauseNote != f.Note {
			t.Errorf("status pause_note %q, want the pause's note", r.PauseNote)
		}
	})
	t.Run("an agent's error, a time-out", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
agent: {kind: command, command: [agent]}
defaults: {retry: {backoff: 0s, escalate_when: attempt >= 1}}
phases: [{name: build}]
`))
		actions := s.finish(time.Second, engine.StepResult{ExitCode: 1, Error: "API Error: 529 overloaded", Output: "working\n"})
		if f := wantPause(t, actions, engine.ReasonNeedsHuman); !strings.Contains(f.Note, "API Error: 529 overloaded") {
			t.Errorf("note %q: want the agent's error", f.Note)
		}
		s, _ = newSession(t, s.plan)
		actions = s.finish(time.Second, engine.StepResult{ExitCode: -1, TimedOut: true, Output: "still going\n"})
		if f := wantPause(t, actions, engine.ReasonNeedsHuman); !strings.Contains(f.Note, "timed out") {
			t.Errorf("note %q: want the time-out", f.Note)
		}
	})
	t.Run("done_when escalates", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
defaults: {retry: {escalate_when: attempt >= 1}}
phases:
  - name: build
    steps: [{run: make}, {name: test, run: make test}]
    done_when: steps.test.exit_code == 0
`))
		s.finish(time.Second, engine.StepResult{})
		actions := s.finish(time.Second, engine.StepResult{ExitCode: 2, Output: "--- FAIL: TestParse (0.00s)\nFAIL\n"})
		f := wantPause(t, actions, engine.ReasonNeedsHuman)
		for _, want := range []string{"done_when", "steps.test.exit_code == 0", `step "test"`, "exit code 2", "FAIL"} {
			if !strings.Contains(f.Note, want) {
				t.Errorf("needs-human note %q: want %q in it", f.Note, want)
			}
		}
	})
}

// Issue 23, item 10: what failed goes into the resume context within its
// budget: the output of a failed step is cut from its first lines, after
// the files and the summaries, and the step and its exit code stay.
func TestIssue23RetryContextKeepsTheFailureWithinBudget(t *testing.T) {
	var out []string
	for i := range 400 {
		out = append(out, fmt.Sprintf("test line %d of a long failing run", i))
	}
	in := engine.ResumeInput{Pipeline: "p", Phase: "build", Step: "agent", Attempt: 2, Reason: engine.ReasonRetry,
		Failed:       []engine.StepFailure{{Step: "agent", ExitCode: 7, Output: strings.Join(out, "\n")}},
		FilesChanged: []string{"a.go", "b.go", "c.go"}}
	text, err := engine.RenderResumeContext("", in, 300, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step agent: exit code 7", "test line 399 of", "earlier lines cut"} {
		if !strings.Contains(text, want) {
			t.Errorf("the context within 300 tokens lost %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "test line 0 of") || len(text) > 4*300 {
		t.Errorf("the context is over its budget (%d bytes) or kept the first lines:\n%s", len(text), text)
	}
}

// Issue 23, item 14: a resume after needs-human reused the attempt that
// had failed (its transcript appended to). The pause ended that attempt:
// the resume starts a new one; after a false done_when escalated, the
// phase's steps from the first. A human pause in a retry's back-off
// resumes the attempt the retry had started, with no number skipped.
func TestIssue23ResumeAfterNeedsHumanStartsANewAttempt(t *testing.T) {
	t.Run("a step that failed", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
defaults: {retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 1}}
phases: [{name: build, steps: [{run: make}, {name: lint, run: make lint}]}]
`))
		s.finish(time.Second, engine.StepResult{})
		wantStart(t, s.finish(time.Second, engine.StepResult{ExitCode: 1}), 0, 1, 2, "")
		wantPause(t, s.finish(time.Second, engine.StepResult{ExitCode: 1}), engine.ReasonNeedsHuman)
		if r := engine.Report(s.plan, s.state); r.Attempt != 2 || r.Step != "lint" {
			t.Errorf("paused at step %s, attempt %d; want lint, 2", r.Step, r.Attempt)
		}
		wantStart(t, s.send(engine.Resumed{At: s.now, Notes: "fixed the config"}), 0, 1, 3, "")
		if got := s.state.Phases[0].Attempts; got != 3 {
			t.Errorf("the phase records %d attempts, want 3", got)
		}
	})
	t.Run("done_when false", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
defaults: {retry: {escalate_when: attempt >= 1}}
phases:
  - name: build
    steps: [{run: make}, {name: test, run: make test}]
    done_when: steps.test.exit_code == 0
`))
		s.finish(time.Second, engine.StepResult{})
		wantPause(t, s.finish(time.Second, engine.StepResult{ExitCode: 1}), engine.ReasonNeedsHuman)
		wantStart(t, s.send(engine.Resumed{At: s.now}), 0, 0, 2, "")
	})
	t.Run("a pause in a back-off", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, `version: 1
defaults: {retry: {when: exit_code != 0, backoff: 1m}}
phases: [{name: build, steps: [{run: make}]}]
`))
		if _, ok := last(s.finish(time.Second, engine.StepResult{ExitCode: 1})).(engine.Sleep); !ok {
			t.Fatal("want a back-off")
		}
		wantPause(t, s.send(engine.PauseRequested{At: s.now, Reason: engine.ReasonHuman}), engine.ReasonHuman)
		wantStart(t, s.send(engine.Resumed{At: s.now}), 0, 0, 2, "")
	})
	t.Run("a checkpoint", func(t *testing.T) {
		s, _ := newSession(t, planOf(t, "version: 1\nphases: [{name: build, steps: [{run: make}]}]\n"))
		wantPause(t, s.finish(time.Second, engine.StepResult{Checkpoint: true}), "checkpoint")
		wantStart(t, s.send(engine.Resumed{At: s.now}), 0, 0, 1, "")
	})
}

// Issue 23, item 12: after a rewind the agent was told `pause_when
// "rewound" fired`, and status kept the rewound run's summary. The agent
// is told a human rewound the work tree to the checkpoint before the
// phase; the summaries of the phases rewound are dropped. No reason the
// engine gives itself is worded as a pause_when trigger.
func TestIssue23RewindTellsTheAgentAHumanRewound(t *testing.T) {
	plan := planOf(t, "version: 1\nagent: {kind: command, command: [agent]}\nphases: [{name: a}, {name: b}, {name: c}]\n")
	s, _ := newSession(t, plan)
	for _, out := range []string{"wrote a.txt", "[SUMMARY] b is half done", "wrote c.txt"} {
		s.finish(time.Minute, engine.StepResult{Output: out + "\n"})
	}
	if s.state.Status != engine.StatusCompleted || s.state.Phases[1].Summary == "" {
		t.Fatalf("status %s, b's summary %q", s.state.Status, s.state.Phases[1].Summary)
	}
	s.send(engine.Rewound{At: s.now, Phase: "b", Checkpoint: "0123456789abcdef"})
	r := engine.Report(plan, s.state)
	if r.Phases[0].Summary == "" || r.Phases[1].Summary != "" || r.Phases[2].Summary != "" {
		t.Errorf("after the rewind status shows summaries %q, %q, %q; want a's only", r.Phases[0].Summary, r.Phases[1].Summary, r.Phases[2].Summary)
	}
	if got := s.state.WorkingSet.PhaseSummary("b"); got != "" {
		t.Errorf("the working set keeps the rewound run's summary of b: %q", got)
	}
	start, ok := last(s.send(engine.Resumed{At: s.now})).(engine.StartStep)
	if !ok {
		t.Fatal("the resume started no step")
	}
	reason, why, _ := engine.ResumeWhy(plan, s.state, start)
	if reason != engine.ReasonRewound || strings.Contains(why, "pause_when") || !strings.Contains(why, "rewound the work tree") ||
		!strings.Contains(why, "checkpoint before this phase") {
		t.Errorf("after a rewind the agent is told %q: %q", reason, why)
	}

	for _, reason := range []string{engine.ReasonNeedsHuman, engine.ReasonInterrupted, engine.ReasonPhaseComplete,
		engine.ReasonExpressionError, engine.ReasonHuman, engine.ReasonRateLimit, engine.ReasonStoreError,
		engine.ReasonOutOfScope, engine.ReasonConflicts, engine.ReasonRewound, engine.ReasonRunnerDied,
		engine.ResumedFromFailure, engine.ReasonCompaction, engine.ReasonRetry, engine.ReasonNotDone} {
		a := engine.StartStep{Resuming: &engine.Resumption{Firing: engine.Firing{Reason: reason}, Phase: "a"}}
		if _, why, _ := engine.ResumeWhy(plan, s.state, a); strings.Contains(why, "pause_when") {
			t.Errorf("reason %s is told as a trigger: %q", reason, why)
		}
	}
}

// Issue 23, item 16: "completed: 3 phases" counted the phases that run
// --only, run --from, resume --phase or a fork skipped. The line says
// how many ran and how many were skipped (or failed and left).
func TestIssue23CompletedCountsOnlyThePhasesThatRan(t *testing.T) {
	plan := planOf(t, "version: 1\ndefaults: {retry: {when: \"false\"}}\nphases: [{name: a, steps: [{run: a}]}, {name: b, steps: [{run: b}]}, {name: c, steps: [{run: c}]}]\n")
	run := func(start engine.Started, results ...engine.StepResult) engine.State {
		s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
		start.At = s.now
		s.send(start)
		for _, r := range results {
			s.finish(time.Second, r)
			if s.state.Status == engine.StatusFailed {
				s.send(engine.Resumed{At: s.now, Phase: "c"})
			}
		}
		return s.state
	}
	for _, tc := range []struct {
		name  string
		state engine.State
		want  string
	}{
		{"all", run(engine.Started{}, engine.StepResult{}, engine.StepResult{}, engine.StepResult{}), "completed: 3 phases"},
		{"--only", run(engine.Started{From: "b", Only: true}, engine.StepResult{}), "completed: 1 phase run, 2 skipped"},
		{"--from", run(engine.Started{From: "b"}, engine.StepResult{}, engine.StepResult{}), "completed: 2 phases run, 1 skipped"},
		{"resume --phase after a failure", run(engine.Started{}, engine.StepResult{ExitCode: 1}, engine.StepResult{}), "completed: 1 phase run, 1 failed, 1 skipped"},
	} {
		if tc.state.Status != engine.StatusCompleted {
			t.Fatalf("%s: status %s", tc.name, tc.state.Status)
		}
		if got := engine.CompletedLine(tc.state); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if got := engine.Report(plan, tc.state).CompletedLine(); got != tc.want {
			t.Errorf("%s: the report's line %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Issue 23, item 6: the project's facts went whole into a new session's
// first prompt: 400 facts (165 KB) made a {prompt} argument too long for
// exec, and a 60 MB memory cost 18 s. They are kept within the resume
// context's budget, with its cut order (the first facts kept, the rest
// counted), and a memory far over the budget is cut before its tokens
// are counted.
func TestIssue23ProjectFactsKeepWithinBudget(t *testing.T) {
	var facts []string
	for i := range 400 {
		facts = append(facts, fmt.Sprintf("fact %d: %s", i, strings.Repeat("the build needs the vendored parser ", 11)))
	}
	count := func(s string) int { return (len(s) + 3) / 4 }
	text := engine.RenderProjectFacts(facts, 3000, count)
	if count(text) > 3000 || !strings.Contains(text, "- fact 0: ") || strings.Contains(text, "fact 399:") {
		t.Errorf("%d tokens, want at most 3000 with the first facts kept:\n%.300s", count(text), text)
	}
	if !strings.Contains(text, "more (pipeline memory --project lists them)") {
		t.Errorf("the cut is not said:\n%s", text[max(0, len(text)-300):])
	}
	if all := engine.RenderProjectFacts(facts[:3], 3000, count); strings.Count(all, "\n- fact") != 3 || strings.Contains(all, "more") {
		t.Errorf("three facts within the budget are not kept whole:\n%s", all)
	}

	// 60 MB of facts: what is counted stays near the budget.
	huge := make([]string, 150_000)
	for i := range huge {
		huge[i] = facts[i%len(facts)]
	}
	counted := 0
	text = engine.RenderProjectFacts(huge, 3000, func(s string) int { counted += len(s); return count(s) })
	if count(text) > 3000 || counted > 64*3000*32 {
		t.Errorf("%d tokens rendered, %d bytes counted for a 60 MB memory", count(text), counted)
	}
}
