package main

import (
	"os"
	"path/filepath"
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

// Issue 23, item 25: a forged line of index.tsv with the id
// ../../../pwned was listed by sessions, and clean stopped on it with exit
// 1 after removing the other sessions. Both skip it with a warning on
// standard error, exit 0, and leave what is outside the store alone.
func TestIssue23ForgedIndexLineDoesNotStopClean(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "project/phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	project := filepath.Join(dir, "project")
	if r := pipeline(t, project, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	write(t, dir, "pwned/keep.txt", "mine")
	index := filepath.Join(project, ".pipeline", "index.tsv")
	f, err := os.OpenFile(index, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("../../../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n")
	f.Close()
	r := pipeline(t, project, "sessions")
	if r.code != 0 || strings.Contains(r.stdout, "pwned") || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "index.tsv line 3 is not a line of the sessions index") {
		t.Errorf("sessions: exit %d, stdout %q, stderr %q; want 0, the forged line skipped with a warning", r.code, r.stdout, r.stderr)
	}
	r = pipeline(t, project, "clean", "--older-than", "1ns", "--keep", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "1 session(s) removed") || !strings.Contains(r.stderr, "skipped") {
		t.Errorf("clean: exit %d, stdout %q, stderr %q; want 0 and the real session removed", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned", "keep.txt")); err != nil {
		t.Errorf("outside the store: %v", err)
	}
}
