package session

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Git reads the git work tree holding a session's folder: HEAD, a
// snapshot of the work tree, and the files changed since a snapshot.
type Git struct {
	dir string // absolute
}

// GitFor returns the Git of a work folder, or nil when the folder is not
// in a git work tree (found by looking for .git upwards, without starting
// git).
func GitFor(dir string) *Git {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return &Git{dir: abs}
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

func (g *Git) run(env []string, args ...string) (string, bool) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.Output()
	return string(out), err == nil
}

// line runs git for one line of output.
func (g *Git) line(env []string, args ...string) (string, bool) {
	out, ok := g.run(env, args...)
	return strings.TrimSpace(out), ok
}

// Head is the commit checked out, "" when there is none.
func (g *Git) Head() string {
	head, ok := g.line(nil, "rev-parse", "--verify", "-q", "HEAD")
	if !ok {
		return ""
	}
	return head
}

// Snapshot returns HEAD and a tree object of the work tree as it is now
// under the folder: the files committed, staged, changed and untracked
// (not ignored), as `git stash create` would keep them, but without
// touching the index, HEAD or any ref. It is written with a temporary
// index (a copy of the real one, so that unchanged files are not hashed
// again); the tree is "" when git could not write it.
func (g *Git) Snapshot() (head, tree string) {
	head = g.Head()
	tmp, err := os.CreateTemp("", "pipeline-index-")
	if err != nil {
		return head, ""
	}
	name := tmp.Name()
	defer os.Remove(name)
	if index, ok := g.line(nil, "rev-parse", "--git-path", "index"); ok {
		if !filepath.IsAbs(index) {
			index = filepath.Join(g.dir, index)
		}
		if src, err := os.Open(index); err == nil {
			_, err = io.Copy(tmp, src)
			src.Close()
			if err != nil {
				tmp.Truncate(0)
			}
		}
	}
	tmp.Close()
	env := []string{"GIT_INDEX_FILE=" + name}
	if info, err := os.Stat(name); err == nil && info.Size() == 0 {
		os.Remove(name) // git reads an empty file as a broken index
		if head != "" {
			if _, ok := g.run(env, "read-tree", head); !ok {
				return head, ""
			}
		}
	}
	if _, ok := g.run(env, "add", "-A", "--", "."); !ok {
		return head, ""
	}
	tree, ok := g.line(env, "write-tree")
	if !ok {
		return head, ""
	}
	return head, tree
}

// Changed returns HEAD and the files under the folder (named from the
// repository's root) that differ between the snapshot tree and the work
// tree now: what was changed, added or deleted since the snapshot,
// committed or not. A file that was already changed before the snapshot
// and was not touched since is not listed. Without a tree (a session
// recorded before snapshots were kept, or git could not write one) the
// files are those changed since the commit base and every uncommitted
// one.
func (g *Git) Changed(base, tree string) (string, []string) {
	if tree == "" {
		return g.changedSinceCommit(base)
	}
	head, now := g.Snapshot()
	if now == "" {
		return g.changedSinceCommit(base)
	}
	out, ok := g.run(nil, "diff", "--name-only", "--no-renames", "-z", tree, now, "--", ".")
	if !ok {
		// The snapshot is gone (git gc pruned it): what git still knows.
		return g.changedSinceCommit(base)
	}
	return head, splitNames(out)
}

func (g *Git) changedSinceCommit(base string) (string, []string) {
	head := g.Head()
	if base == "" {
		return head, nil
	}
	files := map[string]bool{}
	// Only the pipeline's folder: a pipeline in a corner of a big
	// repository reports its own changes.
	if committed, ok := g.run(nil, "diff", "--name-only", "--no-renames", "-z", base, "--", "."); ok {
		for _, f := range splitNames(committed) {
			files[f] = true
		}
	}
	if status, ok := g.run(nil, "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--", "."); ok {
		for _, entry := range strings.Split(status, "\x00") {
			if len(entry) > 3 {
				files[entry[3:]] = true
			}
		}
	}
	out := make([]string, 0, len(files))
	for f := range files {
		out = append(out, f)
	}
	sort.Strings(out)
	return head, out
}

func splitNames(z string) []string {
	var out []string
	for _, f := range strings.Split(z, "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}
