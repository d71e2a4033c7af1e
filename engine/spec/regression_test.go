package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// loadProblems writes files into a fresh folder, loads its phases.yaml and
// returns the problems of the *spec.Error, failing when there is none.
func loadProblems(t *testing.T, files map[string]string) []spec.Problem {
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
	plan, err := spec.Load(filepath.Join(dir, "phases.yaml"), "")
	var specErr *spec.Error
	if !errors.As(err, &specErr) {
		t.Fatalf("Load gave a plan (%v) and error %v; want a *spec.Error", plan != nil, err)
	}
	return specErr.Problems
}

// Issue 8: now() read the wall clock, so replaying a session (or running
// Decide as a Temporal workflow) could decide differently, and the live
// monitor never evaluated it again as the clock moved. It is a load error
// that points at the call and names what to use instead.
func TestIssue8NowIsALoadError(t *testing.T) {
	problems := loadProblems(t, map[string]string{"phases.yaml": "version: 1\nagent: {kind: claude}\n" +
		"defaults:\n  pause_when:\n    late: tokens > 1 && now() > date(\"2026-01-01\")\nphases:\n  - name: build\n"})
	if len(problems) != 1 {
		t.Fatalf("%d problems, want 1: %v", len(problems), problems)
	}
	p := problems[0]
	if p.Line != 5 || p.Column != 25 {
		t.Errorf("at %d:%d, want 5:25, the n of now()", p.Line, p.Column)
	}
	if !strings.Contains(p.Message, "now()") || !strings.Contains(p.Hint, "elapsed") ||
		!strings.Contains(p.Hint, "phase_elapsed") || !strings.Contains(p.Hint, "session_elapsed") {
		t.Errorf("message %q, hint %q: want now() named and elapsed, phase_elapsed, session_elapsed offered", p.Message, p.Hint)
	}
}

// Issue 8: watch: was accepted, shown by plan and written by init, but
// nothing watched the files, so a spec change never resumed a session.
// Until something does, the key is a load error that says so, not a
// promise the tool does not keep (and not a bare "unknown key" either).
func TestIssue8WatchIsRefusedUntilSomethingWatches(t *testing.T) {
	for key, line := range map[string]string{
		"watch":          "watch: [specs/**/*.md]",
		"watch_debounce": "watch_debounce: 200ms",
	} {
		t.Run(key, func(t *testing.T) {
			problems := loadProblems(t, map[string]string{"phases.yaml": "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n" + line + "\n"})
			if len(problems) != 1 {
				t.Fatalf("%d problems, want 1: %v", len(problems), problems)
			}
			p := problems[0]
			if p.Line != 5 || p.Column != 1 {
				t.Errorf("at %d:%d, want 5:1, the key", p.Line, p.Column)
			}
			if want := key + " is not supported yet"; !strings.Contains(p.Message, want) || strings.Contains(p.Message, "unknown key") {
				t.Errorf("message %q, want it to say %q", p.Message, want)
			}
			if !strings.Contains(p.Hint, "remove "+key) {
				t.Errorf("hint %q, want it to say to remove %s", p.Hint, key)
			}
		})
	}
}
