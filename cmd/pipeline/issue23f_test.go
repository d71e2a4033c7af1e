package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 23, defect 22: the first line of make run was a warning about
// git: the quickstart is copied to bin/quickstart, which the project's
// git ignores, so its session kept no checkpoints and said so first.
// make run's quickstart (scripts/quickstart.sh) is a git repository of its
// own: no warning, and the session keeps checkpoints.
func TestIssue23MakeRunStartsWithoutAGitWarning(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	// A project whose git ignores bin/, as this one does.
	project := t.TempDir()
	write(t, project, ".gitignore", "bin/\n")
	git := exec.Command("git", "init", "-q")
	git.Dir, git.Env = project, env
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	dir := filepath.Join(project, "bin", "quickstart")
	os.MkdirAll(filepath.Dir(dir), 0o755)
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "quickstart.sh"))
	cmd := exec.Command(script, binary, dir)
	cmd.Dir, cmd.Env = project, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/quickstart.sh: %v\n%s", err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if strings.Contains(string(out), "git work tree") || strings.Contains(first, "git") {
		t.Errorf("make run warns about git; its first line: %q\n%s", first, out)
	}
	if !strings.Contains(string(out), "completed") {
		t.Errorf("the quickstart did not complete:\n%s", out)
	}
	if cps := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD"); cps.Run() != nil {
		t.Errorf("bin/quickstart is not a git repository with a commit")
	}
}
