// Package policytest is the table of policy paths of the decision
// function that every driver's tests run: the local driver with real
// processes, the Temporal workflow with the real activities, and the
// workflow with the activities mocked. Each case is a phases.yaml whose
// run: steps behave by $PIPELINE_ATTEMPT (or by files they leave), the
// same behaviour as a Script for a mocked step, and what the session
// must end as: with the effects Decide asks for (checkpoints in git,
// on: hooks, a human's pin, the write scope) carried out by the driver.
package policytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// Case is one policy path.
type Case struct {
	Name string
	// YAML is the phases.yaml; its run: steps behave as Script says.
	YAML string
	// Script is what a mocked step returns for a StartStep (Elapsed is
	// the driver's).
	Script func(a engine.StartStep) engine.StepResult
	// Git makes the pipeline's folder a git work tree with one commit
	// (see SetUp): checkpoints and the write scope need one.
	Git bool
	// Resume resumes the session once, when it first stands paused;
	// Pin, when set, is pinned first, as pipeline memory pin does (see
	// Pin), for the step that runs next.
	Resume bool
	Pin    string
	Want   Want
}

// Want is how the session ends: its status, the pause reason, the
// back-offs slept (in order), and the first phase's attempts and
// restarts; and the effects the runner carried out: the checkpoints
// made (their names under refs/pipeline/<session>/), the on: hooks run
// (their events, in order), that the step after the resume was given
// the pin, and the files a step changed outside its writes globs that
// were put back.
type Want struct {
	Status   engine.Status
	Reason   string
	Backoffs []time.Duration
	Attempts int
	Restarts int
	Refs     []string
	Hooks    []string
	PinSeen  bool
	Reverted []string
	// Skipped are the phases a false when: skipped.
	Skipped []string
}

// Seen is what a runner saw of a run besides its final state.
type Seen struct {
	Backoffs []time.Duration
	// Refs are the names of the checkpoints made for the session.
	Refs []string
	// Hooks are the events whose hooks ran, in order.
	Hooks []string
	// PinSeen: the step after the resume was given the case's Pin.
	PinSeen bool
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
		// Issue 27: a when: is decided as its phase is reached, from
		// the phases before it.
		Name: "a phase whose when: is false is skipped",
		YAML: `version: 1
phases:
  - name: build
    steps:
      - run: "true"
  - name: docs
    when: phases.build.attempts > 1
    steps:
      - run: exit 9
  - name: test
    when: phases.build.status == "completed" && phases.docs.status == "skipped"
    steps:
      - run: "true"
`,
		Script: func(a engine.StartStep) engine.StepResult { return exit(map[bool]int{true: 9, false: 0}[a.Phase == 1]) },
		Want:   Want{Status: engine.StatusCompleted, Attempts: 1, Skipped: []string{"docs"}},
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
	{
		// Issue 22: every effect on every driver.
		Name: "a checkpoint of the start and of each phase, in git",
		YAML: `version: 1
phases:
  - name: build
    steps:
      - run: echo built > built.txt
  - name: test
    steps:
      - run: test -f built.txt
`,
		Git:    true,
		Script: func(engine.StartStep) engine.StepResult { return exit(0) },
		Want:   Want{Status: engine.StatusCompleted, Attempts: 1, Refs: []string{"00-start", "01-build", "02-test"}},
	},
	{
		Name: "on: hooks run on a pause and on completion",
		YAML: `version: 1
on:
  paused: ['echo paused >> ` + HooksLog + `']
  completed: ['echo completed >> ` + HooksLog + `']
phases:
  - name: design
    steps:
      - run: 'test -f looked || { touch looked; echo "[CHECKPOINT] look"; }'
`,
		Resume: true,
		Script: func(a engine.StartStep) engine.StepResult {
			if a.Execution == 1 {
				return engine.StepResult{Checkpoint: true, CheckpointNote: "look", Output: "[CHECKPOINT] look\n"}
			}
			return exit(0)
		},
		Want: Want{Status: engine.StatusCompleted, Attempts: 1, Hooks: []string{"paused", "completed"}},
	},
	{
		Name: "a pin made while paused reaches the next step's prompt",
		YAML: `version: 1
agent:
  kind: command
  command: [sh, -c, 'if [ -f paused-once ]; then cat > ` + PromptAfter + `; else touch paused-once; echo "[CHECKPOINT] pin something"; fi']
phases:
  - name: build
`,
		Resume: true,
		Pin:    "PIN-the-answer-is-42",
		Script: func(a engine.StartStep) engine.StepResult {
			if a.Execution == 1 {
				return engine.StepResult{Checkpoint: true, CheckpointNote: "pin something", Output: "[CHECKPOINT] pin something\n"}
			}
			return exit(0)
		},
		Want: Want{Status: engine.StatusCompleted, Attempts: 1, PinSeen: true},
	},
	{
		Name: "a change outside writes is put back",
		YAML: `version: 1
phases:
  - name: build
    writes: ["src/**"]
    on_out_of_scope: revert
    steps:
      - name: edit
        run: 'mkdir -p src && echo in > src/a.txt && echo out > outside.txt'
      - name: check
        run: 'test -f src/a.txt && test ! -e outside.txt'
`,
		Git: true,
		Script: func(a engine.StartStep) engine.StepResult {
			if a.Step == 0 {
				return engine.StepResult{OutOfScope: []string{"outside.txt"}, Reverted: true}
			}
			return exit(0)
		},
		Want: Want{Status: engine.StatusCompleted, Attempts: 1, Refs: []string{"00-start", "01-build"}, Reverted: []string{"outside.txt"}},
	},
}

// Check returns what differs between a final state (with what the
// runner saw) and the case's Want, or "".
func (c Case) Check(s engine.State, seen Seen) string {
	w := c.Want
	got := Want{Status: s.Status, Backoffs: seen.Backoffs, Refs: seen.Refs, Hooks: seen.Hooks, PinSeen: seen.PinSeen}
	if s.Pause != nil && s.Status == engine.StatusPaused {
		got.Reason = s.Pause.Reason
	}
	if len(s.Phases) > 0 {
		got.Attempts, got.Restarts = s.Phases[0].Attempts, s.Phases[0].Restarts
	}
	got.Reverted = reverted(s, w.Reverted)
	for _, rec := range s.Phases {
		if engine.SkippedBy(rec) != nil {
			got.Skipped = append(got.Skipped, rec.Name)
		}
	}
	if got.Status != w.Status || got.Reason != w.Reason || got.Attempts != w.Attempts || got.Restarts != w.Restarts ||
		got.PinSeen != w.PinSeen || !slices.Equal(got.Backoffs, w.Backoffs) || !slices.Equal(got.Refs, w.Refs) ||
		!slices.Equal(got.Hooks, w.Hooks) || !slices.Equal(got.Reverted, w.Reverted) || !slices.Equal(got.Skipped, w.Skipped) {
		text := describe(got, w)
		if s.Pause != nil && s.Pause.Note != "" {
			text += "; the pause's note: " + s.Pause.Note
		}
		return text
	}
	return ""
}

// reverted are the files of want that a phase's history says were put
// back (out-of-scope-reverted), and "?" for such a firing that names
// none of them.
func reverted(s engine.State, want []string) []string {
	var out []string
	for _, rec := range s.Phases {
		for _, f := range rec.Fired {
			if f.Reason != engine.ReasonOutOfScopeReverted {
				continue
			}
			named := false
			for _, file := range want {
				if strings.Contains(f.Note, file) && !slices.Contains(out, file) {
					out, named = append(out, file), true
				}
			}
			if !named {
				out = append(out, "?")
			}
		}
	}
	return out
}

func describe(got, want Want) string { return fmt.Sprintf("got %+v, want %+v", got, want) }

// SetUp makes dir (the pipeline's folder, phases.yaml written) what the
// case needs: with Git, a git work tree holding one commit.
func SetUp(dir string, c Case) error {
	if !c.Git {
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init", "--allow-empty"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v %s", args, err, out)
		}
	}
	return nil
}

// Refs are the names of the checkpoints of session in the git work tree
// of dir (refs/pipeline/<session>/<name>), sorted; none outside git.
func Refs(dir, session string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, nil
	}
	prefix := "refs/pipeline/" + session + "/"
	cmd := exec.Command("git", "for-each-ref", "--format=%(refname)", prefix)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git for-each-ref: %v", err)
	}
	var names []string
	for _, line := range strings.Fields(string(out)) {
		names = append(names, strings.TrimPrefix(line, prefix))
	}
	sort.Strings(names)
	return names, nil
}

// HooksLog is the file the cases' on: hooks write their event to, in the
// pipeline's folder.
const HooksLog = "hooks.log"

// Hooks are the events the cases' hooks wrote to HooksLog in dir.
func Hooks(dir string) []string {
	content, err := os.ReadFile(filepath.Join(dir, HooksLog))
	if err != nil {
		return nil
	}
	return strings.Fields(string(content))
}

// PromptAfter is the file the pin case's agent writes its prompt to
// when it runs after the resume.
const PromptAfter = "prompt-after.txt"

// PinSeen reports whether the prompt the pin case's agent was given
// after the resume holds pin.
func PinSeen(dir, pin string) bool {
	content, err := os.ReadFile(filepath.Join(dir, PromptAfter))
	return err == nil && pin != "" && strings.Contains(string(content), pin)
}

// Pin pins text in session id of the store at storeDir as pipeline
// memory pin does: recorded at once when no runner holds the session,
// else left for its runner.
func Pin(storeDir, id, text string, now time.Time) error {
	st, err := store.Open(storeDir)
	if err != nil {
		return err
	}
	ref, err := session.Find(st, session.Options{ID: id})
	if err != nil {
		return err
	}
	defer ref.Close()
	_, err = ref.Remember(now, []engine.MemoryNote{{Kind: engine.NoteFact, Text: text}}, nil)
	return err
}
