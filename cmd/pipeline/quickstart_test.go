package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The quickstart, as make run shows it: it pauses at the design's
// checkpoint, a resume with notes completes it. Regression: the resume
// context named the checkpoint marker, the scripted agent echoes its
// prompt, and every resume paused again at the marker it read back.
func TestQuickstartPausesOnceThenCompletes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "examples", "quickstart"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the quickstart: %v\n%s", err, out)
	}
	if r := pipeline(t, dir, "run"); r.code != exitPaused || !strings.Contains(r.stdout, "paused: checkpoint: design drafted") {
		t.Fatalf("run: exit %d, want 3 at the checkpoint:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := pipeline(t, dir, "resume", "--notes", "the design is fine; go on")
	if r.code != 0 || !strings.Contains(r.stdout, "completed: 3 phases") {
		t.Fatalf("resume: exit %d, want the session completed:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if content, err := os.ReadFile(filepath.Join(dir, "greeting.txt")); err != nil || !strings.Contains(string(content), "hello") {
		t.Errorf("the implementation phase did not write greeting.txt (%v)", err)
	}
}
