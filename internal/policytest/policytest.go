// Package policytest is the table of policy paths of the decision
// function that every driver's tests run: the local driver with real
// processes, the Temporal workflow with the real activity, and the
// workflow with the step activity mocked. Each case is a phases.yaml
// whose run: steps behave by $PIPELINE_ATTEMPT, the same behaviour as a
// Script for a mocked step, and what the session must end as.
package policytest

import (
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// Case is one policy path.
type Case struct {
	Name string
	// YAML is the phases.yaml; its run: steps behave as Script says.
	YAML string
	// Script is what a mocked step returns for a StartStep (Elapsed is
	// the driver's).
	Script func(a engine.StartStep) engine.StepResult
	Want   Want
}

// Want is how the session ends: its status, the pause reason, the
// back-offs slept (in order), and the first phase's attempts and
// restarts.
type Want struct {
	Status   engine.Status
	Reason   string
	Backoffs []time.Duration
	Attempts int
	Restarts int
}

func exit(code int) engine.StepResult { return engine.StepResult{ExitCode: code} }

// Cases is the table.
var Cases = []Case{
	{
		Name:   "a step that succeeds",
		YAML:   "version: 1\nphases:\n  - name: build\n    steps:\n      - run: \"true\"\n",
		Script: func(engine.StartStep) engine.StepResult { return exit(0) },
		Want:   Want{Status: engine.StatusCompleted, Attempts: 1},
	},
	{
		Name: "retry with back-off, then success",
		YAML: `version: 1
defaults:
  retry:
    when: exit_code != 0
    backoff: duration("10s") * consecutive_errors
    escalate_when: attempt > 5
phases:
  - name: build
    steps:
      - run: '[ "$PIPELINE_ATTEMPT" -ge 3 ]'
`,
		Script: func(a engine.StartStep) engine.StepResult {
			return exit(map[bool]int{true: 0, false: 1}[a.Attempt >= 3])
		},
		Want: Want{Status: engine.StatusCompleted, Backoffs: []time.Duration{10 * time.Second, 20 * time.Second}, Attempts: 3},
	},
	{
		Name:   "the built-in retry escalates an agent step to a human",
		YAML:   "version: 1\nagent: {kind: command, command: [sh, -c, 'exit 1']}\nphases:\n  - name: build\n",
		Script: func(engine.StartStep) engine.StepResult { return exit(1) },
		Want: Want{Status: engine.StatusPaused, Reason: engine.ReasonNeedsHuman,
			Backoffs: []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}, Attempts: 4},
	},
	{
		// Issue 23, item 13: the built-in retry is for agent steps.
		Name:   "a run: step with no retry written fails at once",
		YAML:   "version: 1\nphases:\n  - name: build\n    steps:\n      - run: 'echo FAIL; exit 1'\n",
		Script: func(engine.StartStep) engine.StepResult { return exit(1) },
		Want:   Want{Status: engine.StatusFailed, Attempts: 1},
	},
	{
		Name: "restart_when drops the native session, then escalation",
		YAML: `version: 1
defaults:
  restart_when:
    errors: consecutive_errors >= 2
  retry:
    when: exit_code != 0
    backoff: duration("1s")
    escalate_when: attempt > 3
phases:
  - name: build
    steps:
      - run: exit 2
`,
		Script: func(engine.StartStep) engine.StepResult { return exit(2) },
		Want: Want{Status: engine.StatusPaused, Reason: engine.ReasonNeedsHuman,
			Backoffs: []time.Duration{time.Second, time.Second, time.Second}, Attempts: 4, Restarts: 2},
	},
	{
		Name: "done_when false runs the phase again",
		YAML: `version: 1
phases:
  - name: build
    steps:
      - name: test
        run: '[ "$PIPELINE_ATTEMPT" -ge 2 ]'
    done_when: steps.test.exit_code == 0
`,
		Script: func(a engine.StartStep) engine.StepResult {
			return exit(map[bool]int{true: 0, false: 1}[a.Attempt >= 2])
		},
		Want: Want{Status: engine.StatusCompleted, Attempts: 2},
	},
	{
		Name: "a checkpoint pauses",
		YAML: `version: 1
phases:
  - name: design
    steps:
      - run: echo "[CHECKPOINT] halfway"
`,
		Script: func(engine.StartStep) engine.StepResult {
			return engine.StepResult{Checkpoint: true, CheckpointNote: "halfway", Output: "[CHECKPOINT] halfway\n"}
		},
		Want: Want{Status: engine.StatusPaused, Reason: "checkpoint", Attempts: 1},
	},
	{
		Name: "a failure no policy handles fails",
		YAML: `version: 1
defaults:
  retry:
    when: "false"
phases:
  - name: build
    steps:
      - run: exit 3
`,
		Script: func(engine.StartStep) engine.StepResult { return exit(3) },
		Want:   Want{Status: engine.StatusFailed, Attempts: 1},
	},
}

// Check returns what differs between a final state (with the back-offs
// slept) and the case's Want, or "".
func (c Case) Check(s engine.State, backoffs []time.Duration) string {
	w := c.Want
	var got Want
	got.Status = s.Status
	if s.Pause != nil && s.Status == engine.StatusPaused {
		got.Reason = s.Pause.Reason
	}
	got.Backoffs = backoffs
	if len(s.Phases) > 0 {
		got.Attempts, got.Restarts = s.Phases[0].Attempts, s.Phases[0].Restarts
	}
	if got.Status != w.Status || got.Reason != w.Reason || got.Attempts != w.Attempts || got.Restarts != w.Restarts ||
		len(got.Backoffs) != len(w.Backoffs) {
		return describe(got, w)
	}
	for i := range w.Backoffs {
		if got.Backoffs[i] != w.Backoffs[i] {
			return describe(got, w)
		}
	}
	return ""
}

func describe(got, want Want) string { return fmt.Sprintf("got %+v, want %+v", got, want) }
