package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A short run's stop carries its snapshot in its log: no state.json, and
// what the run decided (here --no-human-gates through a gate, a completion)
// is what status, sessions and resume say, before and after its
// phases.yaml changes (a replay of the log through the gated plan would
// say "paused: phase-complete").
func TestAShortRunStopsWithoutStateJSONAndReadsTheSame(t *testing.T) {
	dir := gatedProject(t)
	if r := pipeline(t, dir, "run", "--no-human-gates"); r.code != 0 {
		t.Fatalf("run --no-human-gates: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	folders, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "2*"))
	if len(folders) != 1 {
		t.Fatalf("sessions %v", folders)
	}
	if _, err := os.Stat(filepath.Join(folders[0], "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a short run left state.json (%v)", err)
	}
	check := func(when string) {
		t.Helper()
		if s := status(t, dir); s.Status != "completed" || s.PauseReason != "" {
			t.Errorf("%s: status %s (%s), want completed", when, s.Status, s.PauseReason)
		}
		if r := pipeline(t, dir, "sessions"); r.code != 0 || !strings.Contains(r.stdout, "completed") || strings.Contains(r.stdout, "paused") {
			t.Errorf("%s: sessions: exit %d\n%s", when, r.code, r.stdout)
		}
		if r := pipeline(t, dir, "resume"); r.code != exitUsage || strings.Contains(r.stdout, "shipping") {
			t.Errorf("%s: resume of a completed session: exit %d\n%s%s", when, r.code, r.stdout, r.stderr)
		}
	}
	check("after the run")
	content, err := os.ReadFile(filepath.Join(dir, "phases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", strings.ReplaceAll(string(content), "echo building", "echo building again"))
	check("after phases.yaml changed")
}
