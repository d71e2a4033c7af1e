package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// nothing watched the files, so a spec change never resumed a session; the
// keys were refused until pipeline watch could read them. They now load
// into the plan, where the watcher finds them, with where they were
// written.
func TestIssue8WatchReachesThePlan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.yaml")
	content := "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch: [specs/**/*.md]\nwatch_debounce: 1s\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Watch) != 1 || plan.Watch[0] != "specs/**/*.md" {
		t.Errorf("watch %q, want [specs/**/*.md]", plan.Watch)
	}
	if plan.WatchDebounce == nil || *plan.WatchDebounce != spec.Duration(time.Second) {
		t.Errorf("watch_debounce %v, want 1s", plan.WatchDebounce)
	}
	if got := plan.WatchFrom.String(); got != path+":5:8" {
		t.Errorf("watch from %s, want %s:5:8", got, path)
	}
	if got := plan.WatchDebounceFrom.String(); got != path+":6:17" {
		t.Errorf("watch_debounce from %s, want %s:6:17", got, path)
	}
}
