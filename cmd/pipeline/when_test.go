package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// whenPhases skips docs unless the spec's priority is low; review, an
// agent step, writes the prompt it was given to prompt.txt.
const whenPhases = `version: 1
spec: spec.md
spec_status: false
agent: {kind: command, command: [sh, -c, "cat > prompt.txt"]}
phases:
  - {name: build, steps: [{run: "echo built > built.txt"}]}
  - name: docs
    when: 'spec.priority == "low"'
    steps: [{run: "echo docs > docs.txt"}]
  - name: review
`

// Issue 27, must show: a phase with when: 'spec.priority == "low"' on a
// spec of priority high is skipped, and status -o json says why; the
// phase after it runs, and its agent is told.
func TestWhenSkipsAPhaseAndStatusSaysWhy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "spec.md", "---\npriority: high\n---\n\n# A spec of priority high\n")
	write(t, dir, "phases.yaml", whenPhases)
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, `phase docs skipped: when (spec.priority == "low") is false, with spec.priority=high`) ||
		!strings.Contains(r.stdout+r.stderr, "completed: 2 phases run, 1 skipped") {
		t.Fatalf("run: exit %d, want 0 and the skip said as it happens: %s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "docs.txt")); !os.IsNotExist(err) {
		t.Errorf("docs.txt exists (%v): the skipped phase ran", err)
	}
	r = pipeline(t, dir, "status", "-o", "json")
	var status struct {
		Status string `json:"status"`
		Phases []struct {
			Name      string `json:"name"`
			Status    string `json:"status"`
			SkippedBy *struct {
				Reason     string         `json:"reason"`
				Expression string         `json:"expression"`
				Values     map[string]any `json:"values"`
			} `json:"skipped_by"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil || len(status.Phases) != 3 {
		t.Fatalf("status -o json (%v): %s%s", err, r.stdout, r.stderr)
	}
	docs := status.Phases[1]
	if status.Status != "completed" || docs.Name != "docs" || docs.Status != "skipped" || docs.SkippedBy == nil {
		t.Fatalf("status %s, docs %+v: want completed, docs skipped by its when\n%s", status.Status, docs, r.stdout)
	}
	if docs.SkippedBy.Reason != "when" || docs.SkippedBy.Expression != `spec.priority == "low"` {
		t.Errorf("skipped_by %+v", *docs.SkippedBy)
	}
	if spec, _ := docs.SkippedBy.Values["spec"].(map[string]any); spec["priority"] != "high" {
		t.Errorf("skipped_by values %v: want spec.priority high", docs.SkippedBy.Values)
	}
	if status.Phases[0].Status != "completed" || status.Phases[2].Status != "completed" || status.Phases[0].SkippedBy != nil {
		t.Errorf("build and review: %+v", status.Phases)
	}
	text := pipeline(t, dir, "status").stdout
	if !strings.Contains(text, `skipped  docs: when (spec.priority == "low") was false, with spec.priority=high`) {
		t.Errorf("status text does not say why docs was skipped:\n%s", text)
	}
	prompt := fileContent(t, filepath.Join(dir, "prompt.txt"))
	if !strings.Contains(prompt, "## Phases skipped") || !strings.Contains(prompt, `- docs: when (spec.priority == "low"), with spec.priority=high`) {
		t.Errorf("review's prompt does not tell of the skip:\n%s", prompt)
	}
}

// plan shows each phase's when:, and a when: that reads what is not
// known before its phase runs is exit 2 with its place and a hint.
func TestWhenInPlanAndValidate(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "spec.md", "---\npriority: high\n---\n")
	write(t, dir, "phases.yaml", whenPhases)
	r := pipeline(t, dir, "plan")
	if r.code != 0 || !strings.Contains(r.stdout, `when                 spec.priority == "low"`) {
		t.Errorf("plan: exit %d, want the when: of docs:\n%s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "phases.yaml", strings.Replace(whenPhases, `'spec.priority == "low"'`, `'exit_code == 0'`, 1))
	r = pipeline(t, dir, "validate")
	if r.code != exitUsage || !strings.Contains(r.stderr, "phases.yaml:8:12: phases[1].when: a phase's when: is decided before the phase runs: exit_code is not known then") ||
		!strings.Contains(r.stderr, "hint: a when: reads spec") {
		t.Errorf("validate: exit %d, want 2 with the place and a hint:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
