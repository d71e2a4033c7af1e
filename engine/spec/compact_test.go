package spec_test

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/triggers"
)

// compact_when flows as the other policies do: built-in (none) → phases.yaml
// defaults → the spec's pipeline.defaults → the phase in phases.yaml → the
// phase in the spec's pipeline.phases; compact_prompt is the built-in one,
// phases.yaml's, or the spec's pipeline.compact_prompt. Each value says
// where it was written.
func TestCompactKeysMergeWithProvenance(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", []byte(`version: 1
agent: {kind: claude}
compact_prompt: |
  Write your working set as JSON.
defaults:
  compact_when: context_tokens > 150000
phases:
  - name: design
  - name: build
    compact_when: tokens > 9000
  - name: review
    compact_when: false
  - name: ship
`))
	if err != nil {
		t.Fatal(err)
	}
	fm, err := spec.ParseSpec("spec.md", []byte(`---
pipeline:
  compact_prompt: Summarise for the next session.
  defaults:
    compact_when: total_tokens > 400000
  phases:
    - name: design
    - name: build
    - name: review
      compact_when: context_tokens > 90000
    - name: ship
---
# Spec
`))
	if err != nil {
		t.Fatal(err)
	}

	// phases.yaml alone.
	plan, err := spec.Resolve(doc, nil, testBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.CompactPrompt; got.Value != "Write your working set as JSON.\n" || got.From.String() != "phases.yaml:3:17" {
		t.Errorf("compact_prompt %q from %s, want phases.yaml's from phases.yaml:3:17", got.Value, got.From)
	}
	wantAlone := []struct{ source, from string }{
		{"context_tokens > 150000", "phases.yaml:6:17"}, // defaults
		{"tokens > 9000", "phases.yaml:10:19"},          // the phase
		{"false", "phases.yaml:12:19"},                  // turned off
		{"context_tokens > 150000", "phases.yaml:6:17"},
	}
	checkCompactWhen(t, "phases.yaml alone", plan, wantAlone)

	// With the spec's frontmatter over it.
	plan, err = spec.Resolve(doc, fm, testBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.CompactPrompt; got.Value != "Summarise for the next session." || got.From.String() != "spec.md:3:19 (spec frontmatter)" {
		t.Errorf("compact_prompt %q from %s, want the spec's from spec.md:3:19", got.Value, got.From)
	}
	checkCompactWhen(t, "with the spec", plan, []struct{ source, from string }{
		{"total_tokens > 400000", "spec.md:5:19 (spec frontmatter)"}, // the spec's defaults over phases.yaml's
		{"tokens > 9000", "phases.yaml:10:19"},                       // the phase in phases.yaml over any defaults
		{"context_tokens > 90000", "spec.md:10:21 (spec frontmatter)"},
		{"total_tokens > 400000", "spec.md:5:19 (spec frontmatter)"},
	})
	// A condition compiled against the variables of restart_when.
	fired, err := plan.Phases[2].CompactWhen.Value.Program().Eval(&triggers.Env{ContextTokens: 90001})
	if err != nil || !fired {
		t.Errorf("context_tokens > 90000 at 90001 gave %v, %v", fired, err)
	}
}

func checkCompactWhen(t *testing.T, what string, plan *spec.Plan, want []struct{ source, from string }) {
	t.Helper()
	if len(plan.Phases) != len(want) {
		t.Fatalf("%s: %d phases, want %d", what, len(plan.Phases), len(want))
	}
	for i, w := range want {
		got := plan.Phases[i].CompactWhen
		if got.Value == nil || got.Value.Source != w.source || got.Value.Program() == nil || got.From.String() != w.from {
			t.Errorf("%s: phase %s compact_when %v from %s, want %q from %s", what, plan.Phases[i].Name, got.Value, got.From, w.source, w.from)
		}
	}
}

// Nobody sets them: no compaction (a nil condition, from the built-in
// default) and the built-in prompt, which asks for the working set's keys.
func TestCompactKeysUnset(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", []byte("version: 1\nagent: {kind: claude}\nphases: [{name: build}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, testBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Phases[0].CompactWhen; got.Value != nil || got.From.Layer != spec.LayerDefault {
		t.Errorf("compact_when %v from %s, want none from the built-in default", got.Value, got.From)
	}
	if got := plan.CompactPrompt; got.Value != spec.DefaultCompactPrompt || got.From.Layer != spec.LayerDefault {
		t.Errorf("compact_prompt %q from %s, want the built-in one", got.Value, got.From)
	}
	for _, key := range []string{`"summary"`, `"pinned_facts"`, `"decisions"`, `"open_tasks"`, `"files_touched"`} {
		if !strings.Contains(spec.DefaultCompactPrompt, key) {
			t.Errorf("the built-in compaction prompt does not ask for %s", key)
		}
	}
}
