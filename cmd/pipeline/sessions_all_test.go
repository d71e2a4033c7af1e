package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// twoPhases pauses after its first phase.
const twoPhases = `version: 1
phases:
  - {name: one, steps: [{run: 'true'}], auto_advance: false}
  - {name: two, steps: [{run: 'true'}]}
`

// sessions names a LeanSpec spec (every one is README.md) by its folder.
func TestSessionsShowsTheSpecFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", twoPhases)
	write(t, dir, "specs/045-dashboard/README.md", "---\nstatus: planned\n---\n# Dashboard\n")
	if r := pipeline(t, dir, "run", "--spec", "specs/045-dashboard/README.md"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if out := pipeline(t, dir, "sessions").stdout; !strings.Contains(out, " 045-dashboard/README.md ") {
		t.Errorf("sessions does not show the spec's folder:\n%s", out)
	}
}

// sessions --all lists the sessions of every pipeline below the current
// folder, not those inside node_modules; an empty list says what to type.
func TestSessionsAll(t *testing.T) {
	top := t.TempDir()
	for _, project := range []string{"a", "b/sub", "node_modules/dep"} {
		write(t, top, project+"/phases.yaml", twoPhases)
		if r := pipeline(t, top, "run", project+"/phases.yaml"); r.code != exitPaused {
			t.Fatalf("run %s: exit %d, %s", project, r.code, r.stderr)
		}
	}
	r := pipeline(t, top, "sessions", "--all")
	for _, want := range []string{"FILE\n", " a/phases.yaml\n", " b/sub/phases.yaml\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in sessions --all:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "node_modules") {
		t.Errorf("sessions --all looked inside node_modules:\n%s", r.stdout)
	}
	var list []struct {
		File string `json:"file"`
	}
	if err := json.Unmarshal([]byte(pipeline(t, top, "sessions", "--all", "-o", "json").stdout), &list); err != nil || len(list) != 2 {
		t.Errorf("sessions --all -o json: %v, %+v", err, list)
	}
	if r := pipeline(t, top, "sessions", "--all", "--file", "a/phases.yaml"); r.code != exitUsage {
		t.Errorf("--all with --file: exit %d", r.code)
	}
	if out := pipeline(t, t.TempDir(), "sessions").stdout; !strings.Contains(out, "no sessions yet; start one with: pipeline run\n") {
		t.Errorf("an empty list gives no next command:\n%s", out)
	}
}

// clean --dry-run says what it would remove, never that it removed.
func TestCleanDryRunSaysWouldRemove(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != exitCompleted {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "clean", "--older-than", "1h", "--keep", "0", "--dry-run")
	if strings.Contains(r.stdout, " removed\n") || !strings.Contains(r.stdout, "0 session(s) would be removed") {
		t.Errorf("clean --dry-run:\n%s", r.stdout)
	}
}

// With sessions, but none of this spec or none the filters keep, the
// message says so and what to type.
func TestEmptyResultsGiveTheNextCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	write(t, dir, "specs/a/README.md", "---\nstatus: planned\n---\n")
	if r := pipeline(t, dir, "run"); r.code != exitCompleted {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if out := pipeline(t, dir, "sessions", "--active").stdout; !strings.Contains(out, "none of the 1 sessions matches; pipeline sessions lists them all\n") {
		t.Errorf("sessions --active with none active:\n%s", out)
	}
	r := pipeline(t, dir, "status", "--spec", "specs/a/README.md")
	if r.code != exitUsage || !strings.Contains(r.stderr, "no session of phases.yaml with spec specs/a/README.md in ") ||
		!strings.Contains(r.stderr, "start one with: pipeline run --spec specs/a/README.md ") {
		t.Errorf("status of a spec with no session: exit %d, %s", r.code, r.stderr)
	}
}
