//go:build agentclis

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 11 with a real agent CLI: a session paused in one checkout, its
// .pipeline/ copied with the project to another path on a machine whose
// HOME has never seen the agent's session. The resumed step asks Claude
// Code for its session, the CLI says it has none, and the step runs again
// in a fresh one with the resume context; the session completes.
func TestClaudeSessionResumedInAnotherCheckoutStartsAFreshNativeSession(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
defaults:
  pause_when: {checkpoint: checkpoint}
phases:
  - name: design
    prompt: Draft the design.
  - name: build
    prompt: Build it.
`)
	r.mock.SetReply("[CHECKPOINT] design drafted")
	r.run(t, exitPaused)
	before := r.status(t)
	native := before.Phases[0].NativeSession
	if before.Status != "paused" || before.PauseReason != "checkpoint" || native == "" {
		t.Fatalf("status %+v", before)
	}
	r.mock.SetReply("")

	dir := moveProject(t, r.dir)
	home := t.TempDir()
	env := slices.DeleteFunc(slices.Clone(r.env), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
	env = append(env, "HOME="+home)
	out := pipelineEnv(t, dir, env, "resume")
	if out.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stdout, "No conversation found with session ID") {
		t.Errorf("the CLI was not asked for the old session:\n%s", out.stdout)
	}
	turns := claudeTurns(t, r.mock, 3)
	design := turns[1]
	if !claudeFresh(design) || !strings.Contains(design.LastUserText(), "[Resume context]") || !strings.Contains(design.LastUserText(), "Draft the design.") {
		t.Errorf("the resumed design turn is not a fresh conversation with the resume context: %q", design.LastUserText())
	}
	after := decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json"))
	lost := slices.ContainsFunc(after.Phases[0].Fired, func(f struct {
		Reason string         `json:"reason"`
		Values map[string]any `json:"values"`
	}) bool {
		return f.Reason == "session-lost"
	})
	if after.Status != "completed" || !lost || after.Phases[0].NativeSession == native || after.Phases[0].NativeSession == "" {
		t.Errorf("status %s, design fired %+v, native session %q then %q", after.Status, after.Phases[0].Fired, native, after.Phases[0].NativeSession)
	}
	// The new native session is in the new HOME, and the old one nowhere
	// there.
	if found, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", after.Phases[0].NativeSession+".jsonl")); len(found) != 1 {
		t.Errorf("the new native session is not in the new HOME: %v", found)
	}
	if _, err := os.Stat(r.dir); err == nil {
		t.Error("the old checkout is still there")
	}
}
