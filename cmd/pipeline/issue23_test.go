package main

import (
	"strings"
	"testing"
)

// Issue 23, item 3: a spec whose pipeline.phases names one phase of four
// ran one phase without a word, and validate said "ok … 1 phases".
// validate and plan warn on standard error at the list, naming what is
// dropped, and validate counts "1 phase".
func TestIssue23ValidateWarnsOfDroppedPhasesAndCountsOnePhase(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nspec: spec.md\nagent: {kind: claude}\nphases: [{name: design}, {name: implementation}, {name: testing}, {name: review}]\n")
	write(t, dir, "spec.md", "---\npipeline:\n  phases:\n    - name: review\n      auto_advance: false\n---\n# spec\n")
	r := pipeline(t, dir, "validate")
	if r.code != 0 || r.stdout != "ok  phases.yaml: 1 phase, with spec spec.md\n" {
		t.Errorf("validate: exit %d, stdout %q; want 0 and ok … 1 phase", r.code, r.stdout)
	}
	for _, out := range []result{r, pipeline(t, dir, "plan")} {
		if !strings.Contains(out.stderr, "spec.md:3:3: warning: pipeline.phases names only 1 phase") ||
			!strings.Contains(out.stderr, "design, implementation, testing are not run") {
			t.Errorf("stderr %q: want the warning at spec.md:3:3 naming the dropped phases", out.stderr)
		}
	}
	write(t, dir, "spec.md", "# no frontmatter\n")
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: claude}\nphases: [{name: design}]\n")
	if r := pipeline(t, dir, "validate"); r.stdout != "ok  phases.yaml: 1 phase\n" || r.stderr != "" {
		t.Errorf("validate: stdout %q, stderr %q; want ok … 1 phase and no warning", r.stdout, r.stderr)
	}
}
