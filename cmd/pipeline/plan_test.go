package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan shows the watch globs, one a row, and the debounce, each with the
// place it was written; -o json carries them too.
func TestPlanShowsTheWatchKeys(t *testing.T) {
	dir := t.TempDir()
	content := "version: 1\nname: demo\nagent: {kind: claude}\nphases:\n  - name: build\n" +
		"watch:\n  - specs/**/*.md\n  - \"**/*.txt\"\nwatch_debounce: 1s\n"
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, dir, "plan")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "pipeline        demo  phases.yaml:2:7\n" +
		"file            phases.yaml\n" +
		"phases          build          phases.yaml:5:3\n" +
		"watch           specs/**/*.md  phases.yaml:7:3\n" +
		"                **/*.txt\n" +
		"watch_debounce  1s             phases.yaml:9:17\n" +
		"checkpoint      refs           built-in default\n" +
		"backend         local          built-in default\n" +
		"compact_prompt  Pipeline is compacting this conversation: the next turn starts a fresh …  built-in default\n\n"
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("plan begins\n%s\nwant\n%s", r.stdout[:min(len(r.stdout), len(want)+200)], want)
	}

	r = pipeline(t, dir, "plan", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var plan struct {
		Watch         []string `json:"watch"`
		WatchDebounce string   `json:"watch_debounce"`
		WatchFrom     struct {
			Line int `json:"line"`
		} `json:"watch_from"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if strings.Join(plan.Watch, ",") != "specs/**/*.md,**/*.txt" || plan.WatchDebounce != "1s" || plan.WatchFrom.Line != 7 {
		t.Errorf("plan -o json has watch %q from line %d, watch_debounce %q", plan.Watch, plan.WatchFrom.Line, plan.WatchDebounce)
	}
}

// checkpoint: is shown by plan with where it was written, and a value
// that is not a mode is an error at its line and column.
func TestPlanShowsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\ncheckpoint: commit\nphases:\n  - name: build\n    steps: [{name: b, run: \"true\"}]\n")
	r := pipeline(t, dir, "plan")
	if r.code != 0 || !strings.Contains(r.stdout, "checkpoint      commit") || !strings.Contains(r.stdout, "phases.yaml:2:13") {
		t.Errorf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "phases.yaml", "version: 1\ncheckpoint: comit\nphases:\n  - name: build\n    steps: [{name: b, run: \"true\"}]\n")
	r = pipeline(t, dir, "validate")
	if r.code != 2 || !strings.Contains(r.stderr, "phases.yaml:2:13") || !strings.Contains(r.stderr, `checkpoint "comit" is not a checkpoint mode`) ||
		!strings.Contains(r.stderr, `did you mean "commit"?`) {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// plan shows each phase's compact_when and the compact_prompt, a long one
// cut to a line, with where each was written; -o json carries them whole.
func TestPlanShowsCompaction(t *testing.T) {
	dir := t.TempDir()
	long := strings.TrimSpace(strings.Repeat("Write your working set as one JSON object. ", 4))
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: claude}\ncompact_prompt: "+long+"\n"+
		"defaults:\n  compact_when: context_tokens > 150000\nphases:\n  - name: design\n  - name: build\n    compact_when: tokens > 9000\n")
	r := pipeline(t, dir, "plan")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"compact_prompt  Write your working set as one JSON object. Write your working set as on…  phases.yaml:3:17\n",
		"   compact_when         context_tokens > 150000                     phases.yaml:5:17\n",
		"   compact_when         tokens > 9000                              phases.yaml:9:19\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan has no line\n%s\nin\n%s", want, r.stdout)
		}
	}

	r = pipeline(t, dir, "plan", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	type setting struct {
		Value *string `json:"value"`
		From  struct {
			Layer string `json:"layer"`
			Line  int    `json:"line"`
		} `json:"from"`
	}
	var plan struct {
		CompactPrompt setting `json:"compact_prompt"`
		Phases        []struct {
			CompactWhen setting `json:"compact_when"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if p := plan.CompactPrompt; p.Value == nil || *p.Value != long || p.From.Layer != "phases.yaml" || p.From.Line != 3 {
		t.Errorf("compact_prompt %+v", p)
	}
	if len(plan.Phases) != 2 {
		t.Fatalf("%d phases", len(plan.Phases))
	}
	for i, want := range []struct {
		value string
		line  int
	}{{"context_tokens > 150000", 5}, {"tokens > 9000", 9}} {
		got := plan.Phases[i].CompactWhen
		if got.Value == nil || *got.Value != want.value || got.From.Layer != "phases.yaml" || got.From.Line != want.line {
			t.Errorf("phase %d compact_when %+v, want %q from line %d", i, got, want.value, want.line)
		}
	}

	// Unset: no value, from the built-in default.
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: claude}\nphases:\n  - name: design\n")
	r = pipeline(t, dir, "plan", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if got := plan.Phases[0].CompactWhen; got.Value != nil || got.From.Layer != "default" {
		t.Errorf("compact_when unset: %+v, want no value from the built-in default", got)
	}
	if p := plan.CompactPrompt; p.Value == nil || !strings.Contains(*p.Value, `"pinned_facts"`) || p.From.Layer != "default" {
		t.Errorf("compact_prompt unset: %+v, want the built-in prompt", p)
	}
}

// backend: is shown by plan with where it was written; a kind that is not
// a backend and an address that is not HOST:PORT are errors at their line
// and column.
func TestPlanShowsBackend(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nbackend: {kind: temporal, address: 127.0.0.1:7233, task_queue: ci}\nphases:\n  - name: build\n    steps: [{name: b, run: \"true\"}]\n")
	r := pipeline(t, dir, "plan")
	if r.code != 0 || !strings.Contains(r.stdout, "backend         temporal, address 127.0.0.1:7233, task_queue ci  phases.yaml:2:10") {
		t.Errorf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "phases.yaml", "version: 1\nbackend:\n  kind: temporl\n  address: nohost\nphases:\n  - name: build\n    steps: [{name: b, run: \"true\"}]\n")
	r = pipeline(t, dir, "validate")
	if r.code != 2 || !strings.Contains(r.stderr, "phases.yaml:3:9") || !strings.Contains(r.stderr, `backend.kind "temporl" is not a backend`) ||
		!strings.Contains(r.stderr, `did you mean "temporal"?`) || !strings.Contains(r.stderr, "phases.yaml:4:12") ||
		!strings.Contains(r.stderr, `backend.address "nohost" is not HOST:PORT`) {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
