package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Issue 12: files_changed counted every uncommitted file since the last
// commit, so a phase that wrote nothing showed the work tree's old
// changes. It counts what changed since the phase started, committed or
// not, and a file already dirty then counts only when the phase changed
// it again. A phase after one that wrote starts from 0.
func TestFilesChangedCountsSinceThePhaseStarted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: files
phases:
  - name: read
    steps: [{name: look, run: "cat tracked.txt"}]
    pause_when: {wrote: files_changed > 0}
  - name: write
    steps:
      - {name: edit, run: "sh -c 'echo again >> dirty.txt; echo new > new.txt; rm gone.txt'"}
      - {name: commit, run: "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false commit -qam step"}
  - name: check
    steps: [{name: look, run: "cat new.txt"}]
    pause_when: {wrote: files_changed > 0}
`)
	write(t, dir, "tracked.txt", "one\n")
	write(t, dir, "dirty.txt", "one\n")
	write(t, dir, "gone.txt", "one\n")
	write(t, dir, "staged.txt", "one\n")
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "start")
	// Work left uncommitted before the run: five changed files.
	write(t, dir, "dirty.txt", "one\ntwo\n")
	write(t, dir, "tracked.txt", "one\nchanged\n")
	write(t, dir, "staged.txt", "one\nstaged\n")
	gitIn(t, dir, "add", "staged.txt")
	write(t, dir, "untracked.txt", "left over\n")
	if err := os.MkdirAll(dir+"/notes", 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "notes/todo.md", "- later\n")

	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "status", "-o", "json")
	var s struct {
		Phases []struct {
			Files []string `json:"files_changed"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status: %v: %s", err, r.stdout)
	}
	var files [][]string
	for _, p := range s.Phases {
		files = append(files, p.Files)
	}
	if want := [][]string{{}, {"dirty.txt", "gone.txt", "new.txt"}, {}}; !reflect.DeepEqual(files, want) {
		t.Errorf("files changed per phase %q, want %q", files, want)
	}
}
