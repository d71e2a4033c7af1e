package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// HEAD read from the ref files is what git says it is, in each state a
// work tree's HEAD can be in: no commit yet, a branch as a loose ref, a
// branch packed, detached, a second work tree, and a branch through a
// symbolic ref.
func TestHeadReadFromTheRefFilesIsGitsHead(t *testing.T) {
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	check := func(state, dir, want string) {
		t.Helper()
		g := GitFor(dir)
		if g == nil {
			t.Fatalf("%s: %s has no Git", state, dir)
		}
		got, ok := g.readHead()
		if !ok {
			t.Fatalf("%s: HEAD was not read from the files", state)
		}
		if got != want {
			t.Errorf("%s: HEAD read %q, git says %q", state, got, want)
		}
		if head := g.Head(); head != want {
			t.Errorf("%s: Head() %q, git says %q", state, head, want)
		}
	}
	git(repo, "init", "-q", "-b", "main")
	check("no commit yet", repo, "")

	git(repo, "commit", "-q", "--allow-empty", "-m", "one")
	first := git(repo, "rev-parse", "HEAD")
	check("a loose branch", repo, first)

	git(repo, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(repo, ".git", "refs", "heads", "main")); !os.IsNotExist(err) {
		t.Fatalf("the branch is still a loose ref after pack-refs (%v)", err)
	}
	check("a packed branch", repo, first)

	git(repo, "commit", "-q", "--allow-empty", "-m", "two")
	second := git(repo, "rev-parse", "HEAD")
	check("a loose branch over a packed one", repo, second)

	git(repo, "checkout", "-q", "--detach", first)
	check("detached", repo, first)
	git(repo, "checkout", "-q", "main")

	other := filepath.Join(t.TempDir(), "other")
	git(repo, "worktree", "add", "-q", "-b", "side", other, first)
	check("a second work tree", other, first)
	check("the first work tree beside a second", repo, second)

	git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	git(repo, "symbolic-ref", "HEAD", "refs/heads/alias")
	check("through a symbolic ref", repo, second)
}

// A checkpoint records the commit HEAD is at as its parent, and a
// step's unchanged work tree counts no file changed (the snapshot is
// not diffed against itself).
func TestCheckpointParentIsHeadAndNoChangeListsNoFile(t *testing.T) {
	repo := t.TempDir()
	for _, kv := range [][2]string{{"HOME", t.TempDir()}, {"GIT_CONFIG_NOSYSTEM", "1"}} {
		t.Setenv(kv[0], kv[1])
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "a")
	head := git("rev-parse", "HEAD")
	g := GitFor(repo)
	// No identity configured (HOME is empty): pipeline's own is used.
	commit, err := g.Checkpoint(CheckpointRef("s", "01-one"), "one")
	if err != nil {
		t.Fatal(err)
	}
	if parent := git("rev-parse", commit+"^"); parent != head {
		t.Errorf("the checkpoint's parent is %s, HEAD is %s", parent, head)
	}
	if author := git("log", "-1", "--format=%an <%ae>", commit); author != "pipeline <pipeline@localhost>" {
		t.Errorf("the checkpoint's author is %q, want pipeline's own identity", author)
	}
	if ref := git("rev-parse", CheckpointRef("s", "01-one")); ref != commit {
		t.Errorf("the ref points at %s, the checkpoint is %s", ref, commit)
	}
	before, tree := g.Snapshot()
	if before != head || tree == "" {
		t.Fatalf("snapshot: head %q tree %q", before, tree)
	}
	if _, files, _ := g.Changed(before, tree, WorkTree{}); len(files) != 0 {
		t.Errorf("nothing changed, yet %v", files)
	}
	if err := os.WriteFile(filepath.Join(repo, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, files, _ := g.Changed(before, tree, WorkTree{}); len(files) != 1 || files[0] != "b.txt" {
		t.Errorf("b.txt added, yet the files changed are %v", files)
	}
}
