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

// git's "ignored" for a folder is kept with a fingerprint of what git
// read to say it: a later GitFor takes it without a git process (here git
// is not even on PATH), and asks git again once a .gitignore, the index
// or a config changed, or the environment names files it does not follow.
func TestGitForKeepsGitsIgnoredAnswer(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@localhost", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(repo, ".gitignore"), "build/\n")
	ignored := filepath.Join(repo, "build", "quickstart")
	if err := os.MkdirAll(ignored, 0o755); err != nil {
		t.Fatal(err)
	}
	path := os.Getenv("PATH")
	noGit := func() { t.Setenv("PATH", t.TempDir()) }
	withGit := func() { t.Setenv("PATH", path) }

	if GitFor(ignored) != nil {
		t.Fatal("an ignored folder has a Git")
	}
	noGit()
	if GitFor(ignored) != nil {
		t.Fatal("without git on PATH, git's kept answer was not taken")
	}
	t.Setenv("GIT_INDEX_FILE", filepath.Join(repo, "other-index"))
	if GitFor(ignored) == nil {
		t.Error("with GIT_INDEX_FILE set, the kept answer was taken (git reads an index the fingerprint does not follow)")
	}
	os.Unsetenv("GIT_INDEX_FILE")

	write(filepath.Join(repo, ".gitignore"), "other/\n")
	if GitFor(ignored) == nil {
		t.Fatal("the .gitignore changed, and the kept answer was taken")
	}
	withGit()
	if GitFor(ignored) == nil {
		t.Fatal("git ignores a folder no pattern names")
	}

	write(filepath.Join(repo, ".gitignore"), "build/\n")
	if GitFor(ignored) != nil {
		t.Fatal("an ignored folder has a Git")
	}
	write(filepath.Join(ignored, "kept"), "x\n")
	gitIn("add", "-f", "build/quickstart/kept")
	if GitFor(ignored) == nil {
		t.Fatal("a folder holding a tracked file is not ignored, but the kept answer said so")
	}

	gitIn("rm", "-q", "--cached", "build/quickstart/kept")
	gitIn("config", "core.excludesFile", filepath.Join(repo, "excludes"))
	if GitFor(ignored) != nil {
		t.Fatal("an ignored folder has a Git")
	}
	noGit()
	if GitFor(ignored) == nil {
		t.Error("with core.excludesFile in the config, the kept answer was taken (the fingerprint does not follow that file)")
	}
}
