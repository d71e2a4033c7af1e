package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With --output json an error is a JSON object on standard output: the
// message, the exit code, and for a spec error where it is.
func TestErrorsAreJSONUnderOutputJSON(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: command, command: [\"true\"]}\nphases:\n  - name: build\n    stepz: []\n")
	type report struct {
		Error    string `json:"error"`
		Code     int    `json:"code"`
		Position *struct {
			File   string `json:"file"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"position"`
		Problems []json.RawMessage `json:"problems"`
	}
	decode := func(args ...string) (report, result) {
		t.Helper()
		r := pipeline(t, dir, args...)
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: stdout is not JSON (%v): %q; stderr %q", args, err, r.stdout, r.stderr)
		}
		return rep, r
	}
	rep, r := decode("plan", "-o", "json")
	if r.code != exitUsage || rep.Code != exitUsage || rep.Position == nil || rep.Position.Line != 5 || rep.Position.Column == 0 ||
		!strings.HasSuffix(rep.Position.File, "phases.yaml") || !strings.Contains(rep.Error, "stepz") || len(rep.Problems) != 1 {
		t.Errorf("plan -o json on a broken file: exit %d, %+v", r.code, rep)
	}
	if r.stderr == "" {
		t.Error("the error is no longer on standard error")
	}
	rep, r = decode("status", "--output=json")
	if r.code != exitUsage || rep.Code != exitUsage || !strings.Contains(rep.Error, "no sessions") || rep.Position != nil {
		t.Errorf("status -o json with no store: exit %d, %+v", r.code, rep)
	}
	rep, r = decode("sessions", "-o", "json", "--bogus")
	if r.code != exitUsage || !strings.Contains(rep.Error, "bogus") {
		t.Errorf("an unknown flag under -o json: exit %d, %+v", r.code, rep)
	}
	if r := pipeline(t, dir, "plan"); r.stdout != "" {
		t.Errorf("without -o json an error wrote to standard output: %q", r.stdout)
	}
}

// run FILE --file OTHER is refused rather than one silently chosen.
func TestFileGivenTwiceIsAnError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	write(t, dir, "b.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	r := pipeline(t, dir, "run", "a.yaml", "--file", "b.yaml")
	if r.code != exitUsage || !strings.Contains(r.stderr, "given twice, as a.yaml and as --file b.yaml") {
		t.Errorf("run a.yaml --file b.yaml: exit %d, %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); err == nil {
		t.Error("the refused run made a store")
	}
}

// A phase of a spec's agent_phases that phases.yaml does not have is a
// warning, with the name it may have meant: it silently ran without the
// phase's test step.
func TestUnknownAgentPhaseIsAWarning(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
spec: specs/001/README.md
agent: {kind: command, command: ["true"]}
phases:
  - name: design
  - name: implementation
    steps: [{agent: {}}, {name: test, run: 'true'}]
`)
	write(t, dir, "specs/001/README.md", "---\nagent_phases:\n  - design: API first\n  - implementaton: build it\n---\n# Spec\n")
	want := `specs/001/README.md:4:5: warning: phase "implementaton" of agent_phases is not in phases.yaml`
	for _, args := range [][]string{{"validate"}, {"plan"}, {"run"}} {
		r := pipeline(t, dir, args...)
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, `did you mean "implementation"?`) {
			t.Errorf("%v: exit %d, no warning in:\n%s", args, r.code, r.stderr)
		}
		if args[0] != "run" && r.code != 0 {
			t.Errorf("%v: a warning made it fail: exit %d", args, r.code)
		}
	}
	var v struct {
		Files []struct {
			Warnings []struct {
				Message string `json:"message"`
			} `json:"warnings"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(pipeline(t, dir, "validate", "-o", "json").stdout), &v); err != nil || len(v.Files) != 1 || len(v.Files[0].Warnings) != 1 {
		t.Errorf("validate -o json: %v, %+v", err, v)
	}
}

// A --spec that is not there says relative to what it was looked for, and
// names the file beside phases.yaml it may have meant; an empty store
// gives the command that starts a session of that pipeline.
func TestSpecFlagRelativeToWhatAndTheNextCommand(t *testing.T) {
	top := t.TempDir()
	write(t, top, "proj/phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n")
	write(t, top, "proj/specs/a/README.md", "---\nstatus: planned\n---\n")
	for _, args := range [][]string{{"run", "--file", "proj/phases.yaml"}, {"plan", "proj/phases.yaml"}} {
		r := pipeline(t, top, append(args, "--spec", "specs/a/README.md")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--spec specs/a/README.md: no such file in the current folder") ||
			!strings.Contains(r.stderr, "relative to the current folder") || !strings.Contains(r.stderr, "did you mean --spec proj/specs/a/README.md?") {
			t.Errorf("%v: exit %d, %s", args, r.code, r.stderr)
		}
	}
	r := pipeline(t, top, "status", "--file", "proj/phases.yaml")
	if r.code != exitUsage || !strings.Contains(r.stderr, "start one with: pipeline run proj/phases.yaml ") {
		t.Errorf("status of no session: exit %d, %s", r.code, r.stderr)
	}
}
