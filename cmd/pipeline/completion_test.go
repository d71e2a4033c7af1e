package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The shell completion offers session ids, phase names and the values of
// -o and --status (cobra's __complete is what the shell scripts call).
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", twoPhases)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{id + "\tpaused, "}},
		{[]string{"resume", "--phase", ""}, []string{"one\n", "two\n"}},
		{[]string{"status", "-o", ""}, []string{"text\n", "json\n", "markdown\n"}},
		{[]string{"sessions", "--status", ""}, []string{"running\n", "paused\n", "completed\n", "failed\n"}},
	} {
		r := pipeline(t, dir, append([]string{"__complete"}, tc.args...)...)
		for _, want := range tc.want {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("completing %q: no %q in %q", tc.args, want, r.stdout)
			}
		}
	}
}

// make man writes a man page for pipeline and each command, from a build
// with the man tag; the binary without it has no man command.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	gen := exec.Command("go", "run", "-tags", "man", ".", "man", dir)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("go run -tags man . man: %v\n%s", err, out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "pipeline-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".SH NAME", "pipeline-run", "quiet"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("no %q in pipeline-run.1", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pipeline.1")); err != nil {
		t.Error(err)
	}
	if r := pipeline(t, dir, "man", dir); r.code != exitUsage {
		t.Errorf("pipeline man without the tag: exit %d", r.code)
	}
}
