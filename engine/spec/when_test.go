package spec_test

import (
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// A phase's when: is merged as done_when is: the spec's pipeline.phases
// replaces phases.yaml's, and the plan says where it was written; a phase
// without one has none.
func TestWhenMergesFromTheSpec(t *testing.T) {
	pipeline := "version: 1\nagent: {kind: claude}\nspec: spec.md\nphases:\n  - name: design\n  - name: docs\n    when: spec.priority != \"low\"\n"
	dir := writeFiles(t, map[string]string{"phases.yaml": pipeline,
		"spec.md": "---\npriority: low\npipeline:\n  phases:\n    - name: design\n    - name: docs\n      when: phases.design.files_changed > 0\n---\n# spec\n"})
	plan, err := loadIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Phases[0].When != nil {
		t.Errorf("design has when %q, want none", plan.Phases[0].When.Value.Source)
	}
	when := plan.Phases[1].When
	if when == nil || when.Value.Source != "phases.design.files_changed > 0" || when.From.Layer != spec.LayerSpec ||
		filepath.Base(when.From.File) != "spec.md" || when.From.Line != 7 {
		t.Fatalf("docs when %+v, want the spec's, from spec.md:7", when)
	}
	if refs := when.Value.Program().PhaseRefs; len(refs) != 1 || refs[0].Name != "design" {
		t.Errorf("phase refs %+v", refs)
	}
}
