package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A folder git ignores (a pipeline under an ignored build folder) has no
// Git: nothing of it can be snapshot or checkpointed, and a run says so
// once rather than fail at each checkpoint.
func TestGitForAFolderGitIgnores(t *testing.T) {
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("build/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ignored := filepath.Join(repo, "build", "quickstart")
	if err := os.MkdirAll(ignored, 0o755); err != nil {
		t.Fatal(err)
	}
	if GitFor(repo) == nil {
		t.Error("the work tree itself has no Git")
	}
	if g := GitFor(ignored); g != nil {
		t.Errorf("an ignored folder has a Git (%s)", g.dir)
	}
	if GitFor(t.TempDir()) != nil {
		t.Error("a folder outside any work tree has a Git")
	}
}
