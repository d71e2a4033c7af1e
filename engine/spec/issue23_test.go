package spec_test

import (
	"fmt"
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

// Issue 23, item 27: a value written as a plain scalar over several lines
// (phases: design followed by more-indented lines) was reported at its
// last line, or the line after it, when it ran to the end of the file or
// its next lines started with "- ": the YAML parser places such a scalar
// at its end. Every problem with such a value is reported where it
// starts, in phases.yaml and in a spec's frontmatter alike.
func TestIssue23MultiLineScalarReportedWhereItStarts(t *testing.T) {
	head := "version: 1\nname: t\nagent: {kind: claude}\n"
	cases := []struct {
		name, file, text string
		line, col        int
		want             string
	}{
		{"list items at the end", "phases.yaml", head + "phases: design\n  - implementation\n  - testing\n", 4, 9, "phases must be a list"},
		{"no final line break", "phases.yaml", head + "phases: design\n  - implementation\n  - testing", 4, 9, "phases must be a list"},
		{"blank lines after", "phases.yaml", head + "phases: design\n  - implementation\n  - testing\n\n\n", 4, 9, "phases must be a list"},
		{"one dash line last", "phases.yaml", head + "phases: design\n  implementation\n  - testing\n", 4, 9, "phases must be a list"},
		{"deeper", "phases.yaml", head + "phases:\n  - name: a\n    steps: run\n      - this\n      - that\n", 6, 12, "phases[0].steps must be a list"},
		{"an expression", "phases.yaml", head + "phases:\n  - name: a\n    done_when: steps.x.exit_code\n      - 1\n      - 2 == 0\n", 6, 22, `done_when reads steps.x, but the phase has no step "x"`},
		{"in a spec", "spec.md", "---\ntitle: x\npipeline:\n  phases: design\n    - implementation\n---\n", 4, 11, "pipeline.phases must be a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{c.file: c.text}
			if c.file == "spec.md" {
				files["phases.yaml"] = head + "spec: spec.md\nphases: [{name: a}]\n"
			}
			problems := loadProblems(t, files)
			if len(problems) != 1 {
				t.Fatalf("%d problems, want 1: %v", len(problems), problems)
			}
			p := problems[0]
			if !strings.Contains(p.Message, c.want) || p.Line != c.line || p.Column != c.col || filepath.Base(p.File) != c.file {
				t.Errorf("%s:%d:%d %q, want %s:%d:%d %q", filepath.Base(p.File), p.Line, p.Column, p.Message, c.file, c.line, c.col, c.want)
			}
		})
	}
}

// Issue 23, item 27: the reworded expression messages keep their place in
// the file: backoff: 1s * 2 points at the 1 of 1s.
func TestIssue23BareDurationPointsIntoTheFile(t *testing.T) {
	problems := loadProblems(t, map[string]string{"phases.yaml": "version: 1\nagent: {kind: claude}\n" +
		"defaults:\n  retry:\n    backoff: 1s * 2\nphases: [{name: a}]\n"})
	if len(problems) != 1 {
		t.Fatalf("%d problems, want 1: %v", len(problems), problems)
	}
	p := problems[0]
	if p.Line != 5 || p.Column != 14 || !strings.Contains(p.Message, `1s is a duration written bare`) || !strings.Contains(p.Hint, `duration("1s") * 2`) {
		t.Errorf("%d:%d %q (hint %q), want 5:14, the duration named and duration(\"1s\") * 2 offered", p.Line, p.Column, p.Message, p.Hint)
	}
}

// Issue 23, item 3: a spec's pipeline: {phases: [{name: review,
// auto_advance: false}]} left one phase of four without a word, and
// validate said "1 phases". Naming only phases phases.yaml has, and fewer
// of them, is a warning at the list (validate, plan and run print the
// plan's warnings) that names what is dropped and shows how to amend a
// phase and keep them all; a list with a new phase, or with every phase,
// is meant as it is and has none.
func TestIssue23SpecPhasesThatDropPhasesWarn(t *testing.T) {
	pipeline := "version: 1\nagent: {kind: claude}\nspec: spec.md\nphases:\n  - name: design\n  - name: implementation\n  - name: testing\n  - name: review\n"
	cases := []struct {
		name, frontmatter string
		phases            int
		warn              []string
	}{
		{"one of four", "pipeline:\n  phases:\n    - name: review\n      auto_advance: false\n", 1,
			[]string{"names only 1 phase of phases.yaml's 4", "design, implementation, testing are not run", "{name: design}, {name: implementation}, {name: testing}, {name: review, ...}"}},
		{"two of four, out of order", "pipeline:\n  phases:\n    - name: testing\n    - name: design\n      prompt: x\n", 2,
			[]string{"names only 2 phases", "implementation, review are not run", "{name: design, ...}, {name: implementation}, {name: testing, ...}, {name: review}"}},
		{"three of four", "pipeline:\n  phases: [{name: design}, {name: implementation}, {name: review}]\n", 3,
			[]string{"testing is not run"}},
		{"every phase", "pipeline:\n  phases: [{name: design}, {name: implementation}, {name: testing}, {name: review, timeout: 1h}]\n", 4, nil},
		{"a new phase", "pipeline:\n  phases: [{name: design}, {name: security-audit}]\n", 2, nil},
		{"no phases", "pipeline:\n  agent: {model: opus}\n", 4, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"phases.yaml": pipeline, "spec.md": "---\n" + c.frontmatter + "---\n# spec\n"})
			plan, err := loadIn(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Phases) != c.phases {
				t.Errorf("%d phases, want %d", len(plan.Phases), c.phases)
			}
			if c.warn == nil {
				if len(plan.Warnings) != 0 {
					t.Errorf("warnings %v, want none", plan.Warnings)
				}
				return
			}
			if len(plan.Warnings) != 1 {
				t.Fatalf("warnings %v, want 1", plan.Warnings)
			}
			w := plan.Warnings[0]
			if filepath.Base(w.File) != "spec.md" || w.Line != 3 || w.Column != 3 {
				t.Errorf("warning at %s, want spec.md:3:3, the phases key", w.Position)
			}
			text := w.Message + "\n" + w.Hint
			for _, want := range c.warn {
				if !strings.Contains(text, want) {
					t.Errorf("warning %q does not say %q", text, want)
				}
			}
		})
	}
	if got := spec.Count(1, "phase") + ", " + spec.Count(4, "phase") + ", " + spec.Count(0, "phase"); got != "1 phase, 4 phases, 0 phases" {
		t.Errorf("Count: %s", got)
	}
}

// Issue 22 (listed in issue 23): validate said ok for a kind: command
// agent whose command: ./path did not exist; the step failed only when
// it ran. A program named by a path (an agent's command, the first word
// of a run: step or of a hook) that is not there, is a folder, or cannot
// be run is a warning at its place (validate stays 0: an earlier phase
// may build it); one that is there, or a name looked for on PATH, is not.
func TestIssue23MissingCommandPathWarns(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"phases.yaml": "version: 1\nspec: spec.md\n" +
			"agent: {kind: command, command: [./bin/my-agent, \"{prompt}\"]}\n" +
			"on:\n  paused: ./scripts/page-me.sh --now\n  failed: [echo failed, ./scripts/here.sh]\n" +
			"phases:\n  - name: build\n    steps:\n      - {name: a, run: './scripts/check.sh -v'}\n      - {name: b, run: make test}\n      - {name: c, run: ./scripts}\n      - {name: d, run: ./scripts/plain.txt}\n      - agent: {}\n",
		"spec.md":           "---\npipeline:\n  agent: {command: [../elsewhere/agent]}\n---\n",
		"scripts/here.sh":   "#!/bin/sh\n",
		"scripts/plain.txt": "not a program\n",
	})
	if err := os.Chmod(filepath.Join(dir, "scripts", "here.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan, err := loadIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range plan.Warnings {
		got = append(got, fmt.Sprintf("%s:%d:%d %s", filepath.Base(w.File), w.Line, w.Column, w.Message))
	}
	want := []string{
		"phases.yaml:3:34 agent.command: ./bin/my-agent does not exist",
		"phases.yaml:5:11 on.paused: ./scripts/page-me.sh does not exist",
		"phases.yaml:10:25 phases[0].steps[0].run: ./scripts/check.sh does not exist",
		"phases.yaml:12:24 phases[0].steps[2].run: ./scripts is a folder, not a program",
		"phases.yaml:13:24 phases[0].steps[3].run: ./scripts/plain.txt cannot be run: it is not executable",
		"spec.md:3:21 pipeline.agent.command: ../elsewhere/agent does not exist",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d: %s\nwant %s…", i, got[i], want[i])
		}
	}
}
