package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// truthAgent is a command agent that keeps every prompt it is sent, one
// file per phase (appended), and prints [CHECKPOINT] the first time it
// runs in a phase named in $CHECKPOINT_IN, then waits to be stopped.
const truthAgent = `#!/bin/sh
prompt=$(cat)
printf '%s\n=====\n' "$prompt" >> "prompts-$PIPELINE_PHASE.txt"
if [ "$PIPELINE_PHASE" = "$CHECKPOINT_IN" ] && [ ! -f "checkpointed-$PIPELINE_PHASE" ]; then
  : > "checkpointed-$PIPELINE_PHASE"
  echo "[CHECKPOINT] halfway there"
  exec sleep 30
fi
echo "finished $PIPELINE_PHASE"
`

func truthProject(t *testing.T, phases string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "agent.sh", truthAgent)
	if err := os.Chmod(filepath.Join(dir, "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", "version: 1\nname: truth\nagent: {kind: command, command: [./agent.sh]}\n"+phases)
	return dir
}

// lastPrompt is the last prompt the agent was sent in phase.
func lastPrompt(t *testing.T, dir, phase string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "prompts-"+phase+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimSuffix(string(data), "=====\n"), "=====\n")
	return parts[len(parts)-1]
}

func wantIn(t *testing.T, text string, want []string, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in\n%s", w, text)
		}
	}
	for _, a := range absent {
		if strings.Contains(text, a) {
			t.Errorf("%q should not be in\n%s", a, text)
		}
	}
}

// Issue 12: after a checkpoint the resume context said "restart:
// checkpoint"; it says the agent checkpointed, and lists the steps of the
// phase that ran with their own exit codes.
func TestResumeContextAfterCheckpointSaysCheckpoint(t *testing.T) {
	dir := truthProject(t, `defaults: {pause_when: {checkpoint: checkpoint}}
phases:
  - name: build
    steps:
      - {name: prep, run: "true"}
      - {name: lint, run: "sh -c 'echo lint ok'"}
      - {name: agent, agent: {}}
`)
	env := append(os.Environ(), "CHECKPOINT_IN=build")
	if r := pipelineEnv(t, dir, env, "run", "--grace", "1s"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	wantIn(t, lastPrompt(t, dir, "build"),
		[]string{"You printed the checkpoint marker, and the session paused there", "(your checkpoint note: halfway there)",
			"step prep: exit 0; step lint: exit 0; step agent: stopped)"},
		[]string{"restart:", "runner stopped", "exit 0,0"})
}

// Issue 12: after an auto_advance: false pause the resume context said
// "the runner stopped (killed or crashed)".
func TestResumeContextAfterReviewGateSaysSo(t *testing.T) {
	dir := truthProject(t, `phases:
  - {name: design, auto_advance: false}
  - {name: build}
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	wantIn(t, lastPrompt(t, dir, "build"),
		[]string{`resuming phase "build"`, "auto_advance: false", "- design (passed, 1 attempt): finished design"},
		[]string{"runner stopped", "restart:"})
}

// Issue 12: a needs-human pause followed by resume --phase said "the
// runner stopped", and "Done so far" listed the phase that never passed.
func TestResumeContextAfterNeedsHumanAndPhaseJump(t *testing.T) {
	dir := truthProject(t, `defaults:
  retry: {when: exit_code != 0, backoff: 1ms, escalate_when: attempt >= 2}
phases:
  - name: design
    steps: [{name: check, run: "false"}]
  - name: build
  - name: review
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if s := status(t, dir); s.PauseReason != "needs-human" {
		t.Fatalf("status %+v", s)
	}
	if r := pipeline(t, dir, "resume", "--phase", "review"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	wantIn(t, lastPrompt(t, dir, "review"),
		[]string{"The session paused for a human (attempt >= 2 was true)", "resumed with --phase review",
			`stood at phase "design"`},
		[]string{"runner stopped", "## Done so far", "- design", "- build ("})
}

// Issue 12: the view and the transcript showed every err line before
// every out line. A run: step's two streams share one pipe, so both keep
// the order the step wrote.
func TestRunStepKeepsTheOrderOfItsOutputAndErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: order
phases:
  - name: build
    steps: [{name: both, run: "sh -c 'for i in 1 2 3 4; do echo out $i; echo err $i >&2; done'"}]
`)
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	var shown []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if _, text, ok := strings.Cut(line, " | "); ok {
			shown = append(shown, text)
		}
	}
	want := []string{"out 1", "err 1", "out 2", "err 2", "out 3", "err 3", "out 4", "err 4"}
	if strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Errorf("the view showed %q, want %q:\n%s", shown, want, r.stdout)
	}
	logs := pipeline(t, dir, "logs")
	if !strings.Contains(logs.stdout, strings.Join(want, "\n")+"\n") {
		t.Errorf("logs:\n%s", logs.stdout)
	}
}
