package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run --name names a session: every command takes the name in place of
// its id, run --name again continues it, a taken or completed name is
// refused (exit 2) and a name that could be read as an id is no name.
func TestSessionNames(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "agent.sh", answerAgent)
	write(t, dir, "phases.yaml", answerPhases)
	write(t, dir, "spec.md", "# The spec\n")
	if r := pipeline(t, dir, "run", "--name", "feature-a"); r.code != exitPaused {
		t.Fatalf("run --name: exit %d\n%s", r.code, r.stderr)
	}
	s := status(t, dir, "feature-a")
	if s.Status != "paused" {
		t.Fatalf("status feature-a: %+v", s)
	}
	id := s.ID
	if text := pipeline(t, dir, "status", "feature-a"); !strings.Contains(text.stdout, id+", named feature-a") {
		t.Errorf("status does not show the name:\n%s", text.stdout)
	}
	if logs := pipeline(t, dir, "logs", "feature-a"); logs.code != 0 || !strings.Contains(logs.stdout, "check the design") {
		t.Errorf("logs feature-a: exit %d\n%s%s", logs.code, logs.stdout, logs.stderr)
	}

	// Another name starts another session; the taken name with --new is
	// refused and makes nothing.
	sessions, _ := os.ReadDir(filepath.Join(dir, ".pipeline", "sessions"))
	if r := pipeline(t, dir, "run", "--new", "--name", "feature-a"); r.code != exitUsage || !strings.Contains(r.stderr, "the name feature-a is session "+id+"'s") {
		t.Errorf("run --new --name of a taken name: exit %d\n%s", r.code, r.stderr)
	}
	if after, _ := os.ReadDir(filepath.Join(dir, ".pipeline", "sessions")); len(after) != len(sessions) {
		t.Errorf("a refused run left a session: %d then %d", len(sessions), len(after))
	}
	for _, bad := range []string{"1abc", "-x", "a/b", strings.Repeat("a", 65)} {
		if r := pipeline(t, dir, "run", "--name", bad); r.code != exitUsage {
			t.Errorf("run --name %q: exit %d, want 2\n%s", bad, r.code, r.stderr)
		}
	}

	// run --name again continues the named session, to its end.
	if r := pipeline(t, dir, "run", "--name", "feature-a"); r.code != 0 || !strings.Contains(r.stderr, "resuming session "+id) {
		t.Fatalf("run --name again: exit %d\n%s", r.code, r.stderr)
	}
	if s := status(t, dir, "feature-a"); s.Status != "completed" || s.ID != id {
		t.Errorf("status feature-a: %+v", s)
	}
	if r := pipeline(t, dir, "run", "--name", "feature-a"); r.code != exitUsage || !strings.Contains(r.stderr, "completed") {
		t.Errorf("run --name of a completed session: exit %d\n%s", r.code, r.stderr)
	}
}
