//go:build agentclis

package main

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// A read-only phase (writes: []) runs each agent CLI in its own read-only
// mode, over the agent's args that would lift it; the next phase, without
// writes, runs as the args say. What proves that the real CLI got the
// flag and accepted it is what it sent to the mock of its vendor's API:
// the instructions of its read-only mode in the read-only turn alone.

func TestReadOnlyPhaseRunsClaudeInPlanMode(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, args: [--permission-mode, acceptEdits]}
phases:
  - name: design
    writes: []
    prompt: Draft the design.
  - name: build
    prompt: Build it.
`)
	r.run(t, 0)
	turns := claudeTurns(t, r.mock, 2)
	// Claude Code 2.x tells the model in a system reminder.
	const plan = "Plan mode is active."
	if !strings.Contains(string(turns[0].Body), plan) {
		t.Errorf("the read-only phase's turn does not carry %q: Claude Code did not run with --permission-mode plan", plan)
	}
	if strings.Contains(string(turns[1].Body), plan) {
		t.Errorf("the phase without writes ran in plan mode too")
	}
}

func TestReadOnlyPhaseRunsCodexInAReadOnlySandbox(t *testing.T) {
	mock, dir := codexProject(t)
	// codex exec's own default is read-only: the args ask for more, and
	// the read-only phase takes it back.
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, args: [--sandbox, workspace-write]}
phases:
  - name: design
    writes: []
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 {
		t.Fatalf("the mock saw %d turns, want 2", len(turns))
	}
	for i, want := range []string{"read-only", "workspace-write"} {
		if mode := "`sandbox_mode` is `" + want + "`"; !strings.Contains(string(turns[i].Body), mode) {
			t.Errorf("turn %d does not carry %s", i+1, mode)
		}
	}
}

func TestReadOnlyPhaseRunsGeminiInPlanMode(t *testing.T) {
	mock, dir := geminiSetup(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, args: [--approval-mode, auto_edit]}
phases:
  - name: design
    writes: []
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var turns []mockapi.GeminiRequest
	for _, turn := range mock.Turns() {
		if turn.Kind == mockapi.GeminiTurn {
			turns = append(turns, turn)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("the mock saw %d turns, want 2", len(turns))
	}
	// Gemini CLI 0.61's plan mode offers the model exit_plan_mode.
	const plan = "exit_plan_mode"
	if !strings.Contains(string(turns[0].Body), plan) {
		t.Errorf("the read-only phase's turn does not offer %s: Gemini CLI did not run with --approval-mode plan", plan)
	}
	if strings.Contains(string(turns[1].Body), plan) {
		t.Errorf("the phase without writes ran in plan mode too")
	}
}
