package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// writeFiles writes files into a fresh folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadIn loads the phases.yaml of dir.
func loadIn(dir string) (*spec.Plan, error) {
	return spec.Load(filepath.Join(dir, "phases.yaml"), "")
}

// Issue 23, item 24: on: {paused: 42} was accepted: YAML reads 42 as a
// number, and the hook "ran" the command 42. A number, or true or false,
// where a shell line is expected (a hook, an item of a list of hooks, a
// step's run:) is refused where it was written, with how to quote it.
func TestIssue23NumberAsHookCommandIsRefused(t *testing.T) {
	cases := []struct {
		name, yaml string
		line, col  int
		want       string
	}{
		{"number hook", "on: {paused: 42}\n", 3, 14, "on.paused must be a shell line, not a number (42)"},
		{"float hook", "on:\n  failed: 1.5\n", 4, 11, "on.failed must be a shell line, not a number (1.5)"},
		{"boolean hook", "on:\n  completed: true\n", 4, 14, "on.completed must be a shell line, not true or false (true)"},
		{"number in a list of hooks", "on:\n  needs-human: [echo a, 7]\n", 4, 25, "on.needs-human[1] must be a shell line, not a number (7)"},
		{"number as run", "phases:\n  - name: b\n    steps: [{run: 42}]\n", 5, 19, "phases[0].steps[0].run must be a shell line, not a number (42)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yaml := "version: 1\nagent: {kind: claude}\n" + c.yaml
			if !strings.Contains(c.yaml, "phases:") {
				yaml += "phases: [{name: a}]\n"
			}
			problems := loadProblems(t, map[string]string{"phases.yaml": yaml})
			if len(problems) != 1 {
				t.Fatalf("%d problems, want 1: %v", len(problems), problems)
			}
			p := problems[0]
			if p.Message != c.want || p.Line != c.line || p.Column != c.col {
				t.Errorf("%d:%d %q, want %d:%d %q", p.Line, p.Column, p.Message, c.line, c.col, c.want)
			}
			if !strings.Contains(p.Hint, "quote it") {
				t.Errorf("hint %q does not say to quote it", p.Hint)
			}
		})
	}
	// Quoted, it is the command.
	dir := writeFiles(t, map[string]string{"phases.yaml": "version: 1\non: {paused: '42'}\nphases: [{name: a, steps: [{run: 'true'}]}]\n"})
	if _, err := loadIn(dir); err != nil {
		t.Errorf("quoted: %v", err)
	}
}
