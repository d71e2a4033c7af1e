package local_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// gitLogged puts a git first on PATH that writes its arguments, one
// call a line, to the file it returns, then runs the real git.
func gitLogged(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is needed for this test")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "git.log")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// gitIn runs git in dir and returns what it printed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepoWith makes a git work tree of one commit holding files, with
// phases.yaml among them, and returns its plan.
func gitRepoWith(t *testing.T, files map[string]string) (*harness, string) {
	t.Helper()
	h := newHarness(t, "version: 1\nphases: [{name: none, steps: [{run: \"true\"}]}]\n", clock.Real{})
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(h.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, h.dir, "init", "-q")
	gitIn(t, h.dir, "add", "-A")
	gitIn(t, h.dir, "commit", "-qm", "init")
	plan, err := spec.Load(h.file, "")
	if err != nil {
		t.Fatal(err)
	}
	h.plan = plan
	return h, gitIn(t, h.dir, "rev-parse", "HEAD")
}

// countCalls counts the lines of a gitLogged log that start with verb.
func countCalls(t *testing.T, log, verb string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, verb+" ") || line == verb {
			n++
		}
	}
	return n
}

// filesOf lists the files of a commit's tree, and the text of one.
func filesOf(t *testing.T, dir, commit string) []string {
	t.Helper()
	return strings.Fields(gitIn(t, dir, "ls-tree", "-r", "--name-only", commit))
}

// TestEachWorkTreeIsWrittenOnce: a snapshot of the work tree is handed
// on to what would write the same tree again at once (the phase's
// checkpoint takes the tree its step was last looked at with, a phase's
// first step the checkpoint's), so a run of two phases writes three
// trees where it wrote seven; the checkpoints and files_changed are
// what a fresh snapshot would give.
func TestEachWorkTreeIsWrittenOnce(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{"phases.yaml": `version: 1
phases:
  - name: first
    steps: [{run: 'echo one > a.txt'}]
  - name: second
    steps: [{run: 'echo two > b.txt'}]
`})
	log := gitLogged(t)
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, h.view.saidText())
	}
	// The start; then each step's end, which its phase's checkpoint and
	// the next phase's start take as they are.
	if n := countCalls(t, log, "write-tree"); n != 3 {
		b, _ := os.ReadFile(log)
		t.Fatalf("%d trees written, want 3:\n%s", n, b)
	}
	if got := [][]string{s.Phases[0].Files, s.Phases[1].Files}; !slices.Equal(got[0], []string{"a.txt"}) || !slices.Equal(got[1], []string{"b.txt"}) {
		t.Fatalf("files changed per phase %q, want [a.txt] [b.txt]", got)
	}
	id := h.sess.ID()
	for ref, want := range map[string][]string{
		"00-start":  {"phases.yaml"},
		"01-first":  {"a.txt", "phases.yaml"},
		"02-second": {"a.txt", "b.txt", "phases.yaml"},
	} {
		if got := filesOf(t, h.dir, "refs/pipeline/"+id+"/"+ref); !slices.Equal(got, want) {
			t.Errorf("checkpoint %s holds %q, want %q", ref, got, want)
		}
	}
	if s.Phases[1].TreeBefore != gitIn(t, h.dir, "rev-parse", "refs/pipeline/"+id+"/01-first^{tree}") {
		t.Errorf("the second phase starts from tree %s, not the first's checkpoint", s.Phases[1].TreeBefore)
	}
}

// TestTheLastCheckpointHoldsTheSpecsStatus: the session writes its
// spec's status as it completes, after the step's last look at the work
// tree: the phase's checkpoint is the work tree with that write, not the
// tree the step left.
func TestTheLastCheckpointHoldsTheSpecsStatus(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{
		"spec.md":     "---\nstatus: planned\n---\n# Greeting\n",
		"phases.yaml": "version: 1\nspec: spec.md\nphases: [{name: build, steps: [{run: 'echo hi > out.txt'}]}]\n",
	})
	log := gitLogged(t)
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, h.view.saidText())
	}
	id := h.sess.ID()
	for ref, want := range map[string]string{"00-start": "status: in-progress", "01-build": "status: complete"} {
		text := gitIn(t, h.dir, "show", "refs/pipeline/"+id+"/"+ref+":spec.md")
		if !strings.Contains(text, want+"\n") {
			t.Errorf("checkpoint %s keeps the spec\n%s\nwant %q in it", ref, text, want)
		}
	}
	// The start's tree is handed to the step; the step's end is not the
	// checkpoint's, which the spec's write made anew.
	if n := countCalls(t, log, "write-tree"); n != 3 {
		b, _ := os.ReadFile(log)
		t.Fatalf("%d trees written, want 3:\n%s", n, b)
	}
}

// TestACheckpointAfterARevertKeepsTheFilesPutBack: a step's change
// outside its phase's writes, put back (on_out_of_scope: revert), is in
// neither the phase's files_changed nor its checkpoint.
func TestACheckpointAfterARevertKeepsTheFilesPutBack(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{
		"keep.txt": "as committed\n",
		"phases.yaml": `version: 1
phases:
  - name: docs
    writes: [docs]
    on_out_of_scope: revert
    steps: [{run: 'mkdir -p docs && echo new > docs/a.md && echo changed > keep.txt'}]
`,
	})
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, h.view.saidText())
	}
	if got := s.Phases[0].Files; !slices.Equal(got, []string{"docs/a.md"}) {
		t.Errorf("files changed %q, want [docs/a.md]", got)
	}
	ref := "refs/pipeline/" + h.sess.ID() + "/01-docs"
	if text := gitIn(t, h.dir, "show", ref+":keep.txt"); text != "as committed" {
		t.Errorf("the checkpoint keeps keep.txt as %q, want it put back", text)
	}
	if got := filesOf(t, h.dir, ref); !slices.Contains(got, "docs/a.md") {
		t.Errorf("the checkpoint lacks the step's own change: %q", got)
	}
}
