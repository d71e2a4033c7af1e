package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scopeRepo makes a git repository whose pipeline lives in its folder
// proj (so that names from the repository's root and from phases.yaml's
// folder differ), with phases.yaml, committed files, and one file left
// changed outside any scope before the run.
func scopeRepo(t *testing.T, phases string) (repo, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	repo = t.TempDir()
	dir = filepath.Join(repo, "proj")
	write(t, dir, "phases.yaml", phases)
	write(t, dir, "README.md", "readme\n")
	write(t, dir, "src/main.go", "package main\n")
	write(t, dir, "dirty.txt", "one\n")
	write(t, dir, "staged.txt", "one\n")
	write(t, repo, "outside.txt", "one\n")
	gitIn(t, repo, "init", "-q")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "start")
	write(t, dir, "dirty.txt", "one\nleft over\n")
	write(t, dir, "staged.txt", "one\nstaged\n")
	gitIn(t, dir, "add", "staged.txt")
	return repo, dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A step that changes files outside its phase's writes globs pauses the
// session (out-of-scope), naming those files and only those: not the
// files in scope, not a file already changed before the step, not one
// outside the folder of phases.yaml. The files are left as the step left
// them, for a human to look at.
func TestOutOfScopeWritePausesTheSession(t *testing.T) {
	repo, dir := scopeRepo(t, `version: 1
phases:
  - name: docs
    writes: [docs/**, README.md]
    steps:
      - name: write
        run: |
          mkdir -p docs/api && echo new > docs/api/a.md
          echo more >> README.md
          echo 'package main // changed' > src/main.go
          echo new > notes.txt
          echo changed > ../outside.txt
  - name: never
    steps: [{run: "true"}]
`)
	r := pipeline(t, dir, "run")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3 (paused): %s%s", r.code, r.stdout, r.stderr)
	}
	s := status(t, dir)
	if s.Status != "paused" || s.PauseReason != "out-of-scope" || s.Phase != "docs" {
		t.Fatalf("status %s, reason %s, phase %s; want paused, out-of-scope, docs", s.Status, s.PauseReason, s.Phase)
	}
	want := `step "write" changed 2 file(s) outside writes [docs/**, README.md]: notes.txt, src/main.go;`
	if !strings.Contains(s.PauseNote, want) {
		t.Errorf("pause note %q, want it to contain %q", s.PauseNote, want)
	}
	_, listed, _ := strings.Cut(s.PauseNote, "]: ")
	listed, _, _ = strings.Cut(listed, ";")
	for _, f := range []string{"docs/api/a.md", "README.md", "dirty.txt", "staged.txt", "outside.txt"} {
		if strings.Contains(listed, f) {
			t.Errorf("pause note %q names %s, which is in scope or was not changed by the step", s.PauseNote, f)
		}
	}
	if !strings.Contains(r.stdout+r.stderr, "paused: out-of-scope") {
		t.Errorf("the run does not say it paused for out-of-scope:\n%s%s", r.stdout, r.stderr)
	}
	if got := read(t, filepath.Join(dir, "src/main.go")); got != "package main // changed\n" {
		t.Errorf("src/main.go is %q: a pause leaves the step's files as they are", got)
	}
	if got := read(t, filepath.Join(repo, "outside.txt")); got != "changed\n" {
		t.Errorf("outside.txt is %q: the step's change outside the folder stays", got)
	}
}

// on_out_of_scope: revert puts the files a step changed outside writes
// back as they were before the step (content and mode; a new file and its
// new folder removed, a deleted one restored, a staged change kept as it
// was staged, the index untouched), records it in the phase, and goes on:
// the next step already sees the files put back. files_out_of_scope counts
// them for expressions.
func TestOutOfScopeRevertPutsTheFilesBack(t *testing.T) {
	repo, dir := scopeRepo(t, `version: 1
phases:
  - name: docs
    writes: [docs/**]
    on_out_of_scope: revert
    steps:
      - name: write
        run: |
          mkdir -p docs && echo new > docs/guide.md
          echo 'package main // changed' > src/main.go
          chmod +x src/main.go
          echo again >> staged.txt
          rm README.md
          mkdir -p gen/deep && echo x > gen/deep/out.txt
      - name: check
        run: |
          test "$(cat src/main.go)" = "package main" && test ! -x src/main.go &&
          test -f README.md && test ! -e gen && test -f docs/guide.md
    done_when: steps.check.exit_code == 0
  - name: design
    writes: []
    on_out_of_scope: revert
    pause_when: {stray: files_out_of_scope == 1}
    steps:
      - name: sketch
        run: echo idea > design.md
`)
	r := pipeline(t, dir, "run")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3 (paused by stray): %s%s", r.code, r.stdout, r.stderr)
	}
	s := status(t, dir)
	if s.PauseReason != "stray" || s.Phase != "design" {
		t.Fatalf("paused with %q in %s, want stray in design (files_out_of_scope == 1)", s.PauseReason, s.Phase)
	}
	var reasons []string
	for _, f := range s.Phases[0].Fired {
		reasons = append(reasons, f.Reason)
	}
	if s.Phases[0].Status != "completed" || !slices.Equal(reasons, []string{"out-of-scope-reverted"}) {
		t.Errorf("phase docs %s, fired %q; want completed with out-of-scope-reverted", s.Phases[0].Status, reasons)
	}
	if want := "pipeline: step write changed 4 file(s) outside writes; put back as they were before the step (on_out_of_scope: revert): README.md, gen/deep/out.txt, src/main.go, staged.txt"; !strings.Contains(r.stdout+r.stderr, want) {
		t.Errorf("the run does not say %q:\n%s%s", want, r.stdout, r.stderr)
	}
	if got := read(t, filepath.Join(dir, "staged.txt")); got != "one\nstaged\n" {
		t.Errorf("staged.txt is %q, want its content before the step", got)
	}
	if got := gitOut(t, repo, nil, "diff", "--cached", "--name-only"); got != "proj/staged.txt" {
		t.Errorf("staged files %q, want proj/staged.txt alone: the index is not touched", got)
	}
	if got := read(t, filepath.Join(dir, "dirty.txt")); got != "one\nleft over\n" {
		t.Errorf("dirty.txt is %q: a file the step did not touch stays as it was", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "design.md")); !os.IsNotExist(err) {
		t.Errorf("design.md, written by a read-only phase, is still there (%v)", err)
	}
	if got := read(t, filepath.Join(dir, "docs/guide.md")); got != "new\n" {
		t.Errorf("docs/guide.md is %q: a file in scope is kept", got)
	}
}

// Outside a git work tree the scope cannot be checked: the run says so
// once, and goes on.
func TestWriteScopeOutsideGitSaysSoOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: design
    writes: []
    steps: [{run: "echo idea > design.md"}]
  - name: docs
    writes: [docs/**]
    steps: [{run: "echo x > other.txt"}]
`)
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0: %s%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	if n := strings.Count(out, "is not in a git work tree (or git ignores it): the write scope is not checked"); n != 1 {
		t.Errorf("the run says %d times that the scope is not checked, want once:\n%s", n, out)
	}
}
