package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// manyPhases: the build step fails on a spec whose body says BREAK; a
// spec pauses by its own frontmatter (auto_advance: false).
const manyPhases = `version: 1
defaults: {retry: {when: "false"}}
phases:
  - {name: build, steps: [{run: 'echo "built $PIPELINE_SPEC" && ! grep -q BREAK "$PIPELINE_SPEC"'}]}
  - {name: check, steps: [{run: "true"}]}
`

const (
	plannedSpec  = "---\nstatus: planned\n---\n# %s\n"
	draftSpec    = "---\nstatus: draft\n---\n# %s\n"
	breakingSpec = "---\nstatus: planned\n---\n# %s BREAK\n"
	pausingSpec  = "---\nstatus: planned\npipeline: {phases: [{name: build, auto_advance: false}]}\n---\n# %s\n"
)

// writeSpecs writes specs/NAME/README.md for each name, from its
// template.
func writeSpecs(t *testing.T, dir string, specs map[string]string) {
	t.Helper()
	for name, tmpl := range specs {
		write(t, dir, filepath.Join("specs", name, "README.md"), fmt.Sprintf(tmpl, name))
	}
}

// statusBySpec is each session's status, by the folder of its spec,
// from sessions -o json.
func statusBySpec(t *testing.T, dir string) map[string][]string {
	t.Helper()
	r := pipeline(t, dir, "sessions")
	if r.code != 0 {
		t.Fatalf("sessions: exit %d: %s", r.code, r.stderr)
	}
	out := map[string][]string{}
	row := regexp.MustCompile(`^\S+\s+\S+\s+(\S+)/README\.md\s+(\S+)`)
	for _, line := range strings.Split(r.stdout, "\n")[1:] {
		if m := row.FindStringSubmatch(line); m != nil {
			out[m[1]] = append(out[m[1]], m[2])
		}
	}
	return out
}

// Issue 27's must-show: a glob over three specs with --max-parallel 2
// completes three sessions, exit 0. The build step is a barrier: each
// waits (polling a condition, bounded) until two have started, and
// records how many ran at that moment, so the test sees that two ran
// side by side and never three.
func TestRunManySpecsCompletesEachAndRunsTwoAtOnce(t *testing.T) {
	dir := t.TempDir()
	barrier := `version: 1
defaults: {retry: {when: "false"}}
phases:
  - name: build
    steps:
      - run: |
          me=$(basename "$(dirname "$PIPELINE_SPEC")")
          mkdir -p running started
          touch running/$me started/$me
          ls running | wc -l >> seen
          i=0
          until [ "$(ls started | wc -l)" -ge 2 ]; do
            i=$((i+1)); [ $i -gt 6000 ] && exit 1
            sleep 0.01
          done
          rm running/$me
  - {name: check, steps: [{run: "true"}]}
`
	write(t, dir, "phases.yaml", barrier)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": plannedSpec, "c": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/*/README.md", "--max-parallel", "2")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := statusBySpec(t, dir)
	for _, name := range []string{"a", "b", "c"} {
		if s := got[name]; len(s) != 1 || s[0] != "completed" {
			t.Errorf("spec %s: sessions %v, want one completed", name, s)
		}
	}
	if !strings.Contains(r.stderr, "3 specs: 3 completed, 0 paused, 0 failed") {
		t.Errorf("run does not sum up the three: %s", r.stderr)
	}
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, f := range strings.Fields(string(seen)) {
		var n int
		fmt.Sscan(f, &n)
		most = max(most, n)
	}
	if most > 2 {
		t.Errorf("%d steps ran at once with --max-parallel 2 (seen: %q)", most, seen)
	}
}

// One spec failing among three: exit 1, and the other two complete.
func TestRunManySpecsOneFailingExits1(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": breakingSpec, "c": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/*/README.md")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := statusBySpec(t, dir)
	want := map[string]string{"a": "completed", "b": "failed", "c": "completed"}
	for name, status := range want {
		if s := got[name]; len(s) != 1 || s[0] != status {
			t.Errorf("spec %s: sessions %v, want one %s", name, s, status)
		}
	}
}

// One pausing, none failing: exit 3, and resume is named for it.
func TestRunManySpecsOnePausingExits3(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": pausingSpec, "c": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/a/README.md", "--spec", "specs/b/README.md", "--spec", "specs/c/README.md")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := statusBySpec(t, dir)
	if s := got["b"]; len(s) != 1 || !strings.HasPrefix(s[0], "paused") {
		t.Errorf("spec b: sessions %v, want one paused", s)
	}
	if !strings.Contains(r.stderr, "specs/b/README.md: continue it with: pipeline resume ") {
		t.Errorf("run does not say how to resume the paused one: %s", r.stderr)
	}
	// --fail-on-pause makes a pause exit 1, as for one session.
	r = pipeline(t, dir, "run", "--spec", "specs/b/README.md", "--spec", "specs/a/README.md", "--new", "--fail-on-pause")
	if r.code != 1 || !strings.Contains(r.stderr, "exit 1: --fail-on-pause") {
		t.Errorf("run --fail-on-pause: exit %d, want 1\n%s", r.code, r.stderr)
	}
}

// A spec whose frontmatter is malformed cannot start: it is reported and
// counts as failed, and the others run to their end.
func TestRunManySpecsMalformedSpecFailsAlone(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": "---\nstatus: [planned\n---\n# %s\n", "c": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/*/README.md")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "[specs/b/README.md] ") || !strings.Contains(r.stderr, "specs/b/README.md: (no session) cannot start: ") {
		t.Errorf("the malformed spec is not reported:\n%s\n%s", r.stdout, r.stderr)
	}
	got := statusBySpec(t, dir)
	if len(got["a"]) != 1 || got["a"][0] != "completed" || len(got["c"]) != 1 || got["c"][0] != "completed" || len(got["b"]) != 0 {
		t.Errorf("sessions %v, want a and c completed and none of b", got)
	}
}

// --status planned runs only the planned specs.
func TestRunManySpecsStatusPicks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": draftSpec, "c": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/*/README.md", "--status", "planned")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := statusBySpec(t, dir)
	if len(got["a"]) != 1 || len(got["c"]) != 1 || len(got["b"]) != 0 {
		t.Errorf("sessions %v, want one of a and c and none of the draft b", got)
	}
}

// Bad input is exit 2, with nothing run: a glob that matches nothing,
// --max-parallel below 1, several specs on the fleet.
func TestRunManySpecsBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": plannedSpec})
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--spec", "nowhere/*/README.md"}, "matches no file"},
		{[]string{"--spec", "specs/*/README.md", "--max-parallel", "0"}, "--max-parallel 0"},
		{[]string{"--spec", "specs/*/README.md", "--backend", "temporal"}, "the temporal backend takes one spec"},
		{[]string{"--spec", "specs/*/README.md", "--name", "x"}, "--name takes one spec"},
	} {
		r := pipeline(t, dir, append([]string{"run"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("run %v: exit %d, want 2 saying %q: %s", tc.args, r.code, tc.says, r.stderr)
		}
	}
	if got := statusBySpec(t, dir); len(got) != 0 {
		t.Errorf("bad input ran sessions: %v", got)
	}
}

// Plain output (not a terminal): every line is prefixed by its spec, and
// each spec's lines are whole.
func TestRunManySpecsPlainLinesArePrefixed(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", manyPhases)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": plannedSpec})
	r := pipeline(t, dir, "run", "--spec", "specs/*/README.md")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	prefixed := regexp.MustCompile(`^\[specs/(a|b)/README\.md\] \d\d:\d\d:\d\d `)
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if !prefixed.MatchString(line) {
			t.Errorf("line not prefixed with its spec: %q", line)
		}
	}
	for _, name := range []string{"a", "b"} {
		own := regexp.MustCompile(`(?m)^\[specs/` + name + `/README\.md\] \d\d:\d\d:\d\d \| built \S*specs/` + name + `/README\.md$`)
		if !own.MatchString(r.stdout) {
			t.Errorf("spec %s's output is not under its prefix:\n%s", name, r.stdout)
		}
	}
}

// Ctrl+C pauses the session running and starts none of those waiting
// for a slot: exit 3, nothing lost.
func TestRunManySpecsInterruptedStartsNoMore(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps: [{run: 'echo "started $PIPELINE_SPEC"; while :; do sleep 0.05; done'}]
`)
	writeSpecs(t, dir, map[string]string{"a": plannedSpec, "b": plannedSpec, "c": plannedSpec})
	cmd := exec.Command(binary, "run", "--spec", "specs/*/README.md", "--max-parallel", "1")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.Contains(lines.Text(), "| started ") {
	}
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, out)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(failsafe):
		t.Fatal("the run did not end")
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitPaused {
		t.Fatalf("run: %v, want exit %d; stderr: %s", err, exitPaused, stderr.String())
	}
	if !strings.Contains(stderr.String(), "3 specs: 0 completed, 1 paused, 0 failed, 2 not started") {
		t.Errorf("stderr: %s", stderr.String())
	}
	got := statusBySpec(t, dir)
	if len(got) != 1 {
		t.Errorf("sessions %v, want the one that ran, paused", got)
	}
	for _, s := range got {
		if len(s) != 1 || !strings.HasPrefix(s[0], "paused") {
			t.Errorf("sessions %v, want the one that ran, paused", got)
		}
	}
}
