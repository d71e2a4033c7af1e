package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A LeanSpec spec with comments, quoted dates and a body.
const leanSpec = `---
# The board reads status; pipeline moves it.
status: planned  # planned, in-progress, complete
created: '2026-11-01'
priority: "high"
tags:
  - cli   # first tag
created_at: '2026-11-01T09:00:00Z'
---

# Spec status follows the session

The body says status: planned and stays as it is.

- [x] written
`

const specPhases = `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: "true"}]}
`

// specStatusOf is the spec_status of status -o json.
type specStatusOf struct {
	SpecStatus *struct {
		From      string   `json:"from"`
		To        string   `json:"to"`
		Held      string   `json:"held"`
		Unchecked []string `json:"unchecked"`
	} `json:"spec_status"`
}

func readSpecStatus(t *testing.T, dir string) specStatusOf {
	t.Helper()
	r := pipeline(t, dir, "status", "-o", "json")
	var s specStatusOf
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.SpecStatus == nil {
		t.Fatalf("status -o json has no spec_status (%v): %s %s", err, r.stdout, r.stderr)
	}
	return s
}

// onlyLeanSpecKeysChanged runs diff on the spec as written and as it is
// now, and fails on any changed line that is not one of LeanSpec's keys.
func onlyLeanSpecKeysChanged(t *testing.T, dir, before string) string {
	t.Helper()
	original := filepath.Join(t.TempDir(), "spec-before.md")
	if err := os.WriteFile(original, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("diff", original, filepath.Join(dir, "spec.md")).Output()
	allowed := regexp.MustCompile(`^[<>] (status: \S+  # planned, in-progress, complete|updated_at: '[^']+'|completed_at: '[^']+'|completed: '\d{4}-\d\d-\d\d'|transitions:|  - status: (in-progress|complete)|    at: '\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z')$`)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if (strings.HasPrefix(line, "<") || strings.HasPrefix(line, ">")) && !allowed.MatchString(line) {
			t.Errorf("diff shows a line other than LeanSpec's keys: %q\n%s", line, out)
		}
	}
	return string(out)
}

// Issue 27: planned → in-progress while the session is paused, complete
// with completed_at after it completes; diff shows only those keys.
func TestSpecStatusFollowsTheSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "spec.md", leanSpec)
	write(t, dir, "phases.yaml", specPhases)
	r := pipeline(t, dir, "run")
	if r.code != exitPaused || !strings.Contains(r.stdout+r.stderr, "planned → in-progress") {
		t.Fatalf("run: exit %d, want a pause that says the spec moved: %s%s", r.code, r.stdout, r.stderr)
	}
	paused := fileContent(t, filepath.Join(dir, "spec.md"))
	if !strings.Contains(paused, "status: in-progress  # planned") || !strings.Contains(paused, "transitions:\n  - status: in-progress\n") {
		t.Fatalf("paused, the spec reads:\n%s", paused)
	}
	diff := onlyLeanSpecKeysChanged(t, dir, leanSpec)
	t.Logf("diff while paused:\n%s", diff)
	if s := readSpecStatus(t, dir); s.SpecStatus.From != "planned" || s.SpecStatus.To != "in-progress" {
		t.Errorf("status spec_status %+v, want planned → in-progress", *s.SpecStatus)
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	done := fileContent(t, filepath.Join(dir, "spec.md"))
	for _, want := range []string{"status: complete  # planned", "  - status: complete\n", "completed_at: '", "completed: '"} {
		if !strings.Contains(done, want) {
			t.Errorf("completed, the spec has no %q:\n%s", want, done)
		}
	}
	t.Logf("diff after completion:\n%s", onlyLeanSpecKeysChanged(t, dir, leanSpec))
	if text := pipeline(t, dir, "status").stdout; !strings.Contains(text, "spec status  in-progress → complete") {
		t.Errorf("status does not show the spec's move:\n%s", text)
	}
}

// Issue 27: an unchecked "- [ ]" item leaves the spec in-progress at
// completion, with a message naming it; complete --force completes it.
func TestSpecWithAnUncheckedItemStaysInProgress(t *testing.T) {
	dir := t.TempDir()
	spec := strings.Replace(leanSpec, "- [x] written\n", "- [x] written\n- [ ] write the docs\n", 1)
	write(t, dir, "spec.md", spec)
	write(t, dir, "phases.yaml", "version: 1\nspec: spec.md\nphases:\n  - {name: one, steps: [{run: \"true\"}]}\n")
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "write the docs") {
		t.Fatalf("run: exit %d, want completion naming the unchecked item: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "spec.md")); !strings.Contains(got, "status: in-progress  #") || strings.Contains(got, "completed_at") {
		t.Errorf("the spec with an unchecked item reads:\n%s", got)
	}
	s := readSpecStatus(t, dir)
	if s.SpecStatus.To != "in-progress" || len(s.SpecStatus.Unchecked) != 1 || s.SpecStatus.Unchecked[0] != "write the docs" ||
		!strings.Contains(s.SpecStatus.Held, "--force") {
		t.Errorf("status spec_status %+v, want held at in-progress by the item", *s.SpecStatus)
	}

	// A paused session completed by hand: held again, then forced.
	write(t, dir, "phases.yaml", specPhases)
	if r := pipeline(t, dir, "run", "--new"); r.code != exitPaused {
		t.Fatalf("run --new: exit %d: %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	if r := pipeline(t, dir, "complete", "-o", "json", id); r.code != 0 || !strings.Contains(r.stdout, "write the docs") {
		t.Fatalf("complete: exit %d, want the item named: %s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "phases.yaml", specPhases+"# again\n")
	if r := pipeline(t, dir, "run", "--new"); r.code != exitPaused {
		t.Fatalf("run --new: exit %d: %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "complete", "--force"); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "in-progress → complete") {
		t.Fatalf("complete --force: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "spec.md")); !strings.Contains(got, "status: complete  #") || !strings.Contains(got, "- [ ] write the docs") {
		t.Errorf("after complete --force the spec reads:\n%s", got)
	}
}

// A draft is not moved (and the run says so); spec_status: false, in
// phases.yaml or in the spec's pipeline block, writes nothing; a spec
// without status is never written.
func TestSpecStatusIsLeftAlone(t *testing.T) {
	cases := []struct {
		name, spec, phases, say string
	}{
		{"draft", strings.Replace(leanSpec, "status: planned", "status: draft", 1), specPhases, "draft"},
		{"off in phases.yaml", leanSpec, strings.Replace(specPhases, "spec: spec.md\n", "spec: spec.md\nspec_status: false\n", 1), ""},
		{"off in the spec", strings.Replace(leanSpec, "created: '2026-11-01'\n", "created: '2026-11-01'\npipeline: {spec_status: false}\n", 1), specPhases, ""},
		{"no status", strings.Replace(leanSpec, "status: planned  # planned, in-progress, complete\n", "", 1), specPhases, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "spec.md", c.spec)
			write(t, dir, "phases.yaml", c.phases)
			r := pipeline(t, dir, "run")
			if r.code != exitPaused {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			if c.say != "" && !strings.Contains(r.stdout+r.stderr, c.say) {
				t.Errorf("run does not say why the spec stays: %s%s", r.stdout, r.stderr)
			}
			if r := pipeline(t, dir, "resume"); r.code != 0 {
				t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
			}
			if got := fileContent(t, filepath.Join(dir, "spec.md")); got != c.spec {
				t.Errorf("the spec was written:\n%s", got)
			}
		})
	}
}

// pipeline complete writes the spec of a paused session a watcher
// watches: the watcher knows the session wrote it, and resumes nothing.
func TestWatchDoesNotResumeForTheSpecStatusWrite(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "spec.md", leanSpec)
	id := runToFirstPause(t, dir, specPhases)
	w := watchStart(t, dir)
	if r := pipeline(t, dir, "complete", "--force"); r.code != 0 {
		t.Fatalf("complete: exit %d: %s", r.code, r.stderr)
	}
	skipped := w.awaitEvent(t, "skipped", id)
	if skipped.Change != "spec" || !strings.Contains(skipped.Reason, "the session itself wrote the spec") {
		t.Errorf("skipped %+v, want the session's own write of the spec", skipped)
	}
	events := w.stop(t)
	if n := count(events, "resumed"); n != 0 {
		t.Errorf("the watcher resumed %d time(s) for the session's own write: %+v", n, events)
	}
}
