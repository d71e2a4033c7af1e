package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
)

// Git reads the git work tree holding a session's folder: HEAD, a
// snapshot of the work tree, and the files changed since a snapshot.
//
// Each git process costs a millisecond or two, and a run of one phase
// used to start twenty-one of them: what does not change during a run
// (where the index, the top of the work tree and the git folders are) is
// asked of git once, HEAD is read from the ref files when they are plain
// files, and a diff of a tree against itself is not asked for.
type Git struct {
	dir   string // absolute
	paths func() gitPaths
}

// gitPaths are where git keeps a work tree's index and refs: they do not
// change during a run.
type gitPaths struct {
	index  string // the index file
	root   string // the top of the work tree
	gitDir string // the work tree's own git folder (HEAD)
	common string // the folder of refs and objects shared by work trees
}

// where finds the index, the top of the work tree and the git folders,
// once, with one git process.
func (g *Git) where() gitPaths {
	out, ok := g.run(nil, "rev-parse", "--git-path", "index", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if !ok {
		return gitPaths{}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		return gitPaths{}
	}
	abs := func(p string) string {
		p = strings.TrimSpace(p)
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(g.dir, p)
		}
		return p
	}
	return gitPaths{index: abs(lines[0]), root: strings.TrimSpace(lines[1]), gitDir: abs(lines[2]), common: abs(lines[3])}
}

// GitFor returns the Git of a work folder, or nil when the folder is not
// in a git work tree (found by looking for .git upwards) or git ignores it
// (a folder under an ignored build folder: git keeps nothing of it, so
// there is nothing to snapshot, check or checkpoint).
func GitFor(dir string) *Git {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			g := &Git{dir: abs}
			g.paths = sync.OnceValue(g.where)
			// The top of a work tree is never ignored: git is asked only
			// about a folder below it.
			if d != abs {
				ignored, fingerprint := ignoredBefore(d, abs)
				if ignored {
					return nil
				}
				if _, ignored := g.run(nil, "check-ignore", "-q", "--", "."); ignored {
					rememberIgnored(abs, fingerprint)
					return nil
				}
			}
			// Asked now, while the session opens: the first snapshot
			// needs it.
			go g.paths()
			return g
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
	if head, ok := g.readHead(); ok {
		return head
	}
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
	// HEAD is read beside the snapshot, not before it: one git process
	// less on the way to the step.
	heads := make(chan string, 1)
	go func() { heads <- g.Head() }()
	headOf := sync.OnceValue(func() string { return <-heads })
	tree = g.snapshotTree(headOf)
	return headOf(), tree
}

// snapshotTree writes the tree of Snapshot; head is asked for only when
// the index must be read from HEAD.
func (g *Git) snapshotTree(head func() string) string {
	tmp, err := os.CreateTemp("", "pipeline-index-")
	if err != nil {
		return ""
	}
	name := tmp.Name()
	defer os.Remove(name)
	var written time.Time
	if index := g.paths().index; index != "" {
		if src, err := os.Open(index); err == nil {
			_, err = io.Copy(tmp, src)
			info, statErr := src.Stat()
			src.Close()
			if err != nil {
				tmp.Truncate(0)
			} else if statErr == nil {
				// git trusts an entry's stat data only when the file
				// changed before the index was written: it reads that
				// from the index file's mtime (racy git). A copy made
				// now would vouch for a file rewritten in the same
				// second with the same size (seen: spec.md v1 → v2
				// missed by a phase's first snapshot), so it keeps the
				// original's time.
				written = info.ModTime()
			}
		}
	}
	tmp.Close()
	if !written.IsZero() {
		os.Chtimes(name, written, written)
	}
	env := []string{"GIT_INDEX_FILE=" + name}
	if info, err := os.Stat(name); err == nil && info.Size() == 0 {
		os.Remove(name) // git reads an empty file as a broken index
		if h := head(); h != "" {
			if _, ok := g.run(env, "read-tree", h); !ok {
				return ""
			}
		}
	}
	if _, ok := g.run(env, "add", "-A", "--", "."); !ok {
		return ""
	}
	tree, ok := g.line(env, "write-tree")
	if !ok {
		return ""
	}
	return tree
}

// WorkTree is a snapshot of the work tree (see Snapshot): HEAD and the
// tree object written; the zero WorkTree is none.
//
// A snapshot costs two git processes (add -A, write-tree; 2 ms each
// here), and the phase's checkpoint used to write again the tree its
// step's last look (files_changed's, or the write scope's) had just
// written. The local driver hands that look on to the checkpoints that
// follow the step (engine/local), unless the session wrote the work tree
// in between (its spec's status): a phase's checkpoint is the work tree
// as its step left it. Nothing is handed the other way, to a step: what
// a step is judged against is looked at as it starts, so that a file
// written by someone else after the checkpoint is not taken for the
// step's.
type WorkTree struct{ Head, Tree string }

// snapshotOr is known when it is a snapshot, else a new snapshot.
func (g *Git) snapshotOr(known WorkTree) WorkTree {
	if known.Tree != "" {
		return known
	}
	head, tree := g.Snapshot()
	return WorkTree{Head: head, Tree: tree}
}

// Changed returns HEAD and the files under the folder (named from the
// repository's root) that differ between the snapshot tree and the work
// tree now: what was changed, added or deleted since the snapshot,
// committed or not. A file that was already changed before the snapshot
// and was not touched since is not listed. Without a tree (a session
// recorded before snapshots were kept, or git could not write one) the
// files are those changed since the commit base and every uncommitted
// one.
//
// now, when not zero, is the work tree as it is, already snapshot (the
// write scope's look); the snapshot compared with is returned (zero when
// none was taken).
func (g *Git) Changed(base, tree string, now WorkTree) (string, []string, WorkTree) {
	if tree == "" {
		head, files := g.changedSinceCommit(base)
		return head, files, WorkTree{}
	}
	now = g.snapshotOr(now)
	if now.Tree == "" {
		head, files := g.changedSinceCommit(base)
		return head, files, WorkTree{}
	}
	if now.Tree == tree {
		return now.Head, nil, now
	}
	out, ok := g.run(nil, "diff", "--name-only", "--no-renames", "-z", tree, now.Tree, "--", ".")
	if !ok {
		// The snapshot is gone (git gc pruned it): what git still knows.
		head, files := g.changedSinceCommit(base)
		return head, files, now
	}
	return now.Head, splitNames(out), now
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

// CheckpointRef is the ref under which a session's checkpoint named name
// is kept: refs/pipeline/<session>/<name>.
func CheckpointRef(session, name string) string {
	return "refs/pipeline/" + session + "/" + name
}

// CheckpointName names the checkpoint of phase i (from 0): 01-design
// (see engine.CheckpointName, which Decide names checkpoints with).
func CheckpointName(i int, phase string) string { return engine.CheckpointName(i, phase) }

// Checkpoint snapshots the work tree (see Snapshot) into a commit whose
// parent is HEAD, and points ref at it: HEAD, the branch, the user's
// index and the stash stay as they were. It returns the commit.
func (g *Git) Checkpoint(ref, message string) (string, error) {
	commit, _, err := g.CheckpointOf(ref, message, WorkTree{})
	return commit, err
}

// CheckpointOf is Checkpoint of now, the work tree as it is, when now is
// not zero: a snapshot just taken. It returns the commit and the
// snapshot it kept.
func (g *Git) CheckpointOf(ref, message string, now WorkTree) (string, WorkTree, error) {
	now = g.snapshotOr(now)
	if now.Tree == "" {
		return "", WorkTree{}, fmt.Errorf("git could not snapshot the work tree of %s", g.dir)
	}
	args := []string{"commit-tree", now.Tree, "-m", message}
	if now.Head != "" {
		args = append(args, "-p", now.Head)
	}
	commit, err := g.mustAsSomeone(args...)
	if err != nil {
		return "", now, err
	}
	if _, err := g.must(nil, "update-ref", "-m", "pipeline checkpoint", ref, commit); err != nil {
		return "", now, err
	}
	return commit, now, nil
}

// Commit commits the work tree under the folder on the current branch
// (checkpoint: commit): every change, untracked files that are not
// ignored included, even when there is none (one commit per phase).
func (g *Git) Commit(message string) (string, error) {
	if _, err := g.must(nil, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	if _, err := g.mustAsSomeone("commit", "-q", "--no-verify", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	return g.Head(), nil
}

// mustAsSomeone runs a git command that makes a commit, as the committer
// the repository names, or as pipeline when it names none: a checkpoint
// is never refused for want of user.email. The repository's identity is
// tried first, and asked for (git var) only when the command failed:
// it is there nearly always, and that is one git process less per
// checkpoint.
func (g *Git) mustAsSomeone(args ...string) (string, error) {
	out, err := g.must(nil, args...)
	if err == nil {
		return out, nil
	}
	if _, named := g.run(nil, "var", "GIT_COMMITTER_IDENT"); named {
		return "", err
	}
	return g.must([]string{"GIT_AUTHOR_NAME=pipeline", "GIT_AUTHOR_EMAIL=pipeline@localhost",
		"GIT_COMMITTER_NAME=pipeline", "GIT_COMMITTER_EMAIL=pipeline@localhost"}, args...)
}

// must runs git for one line of output, and returns git's own words
// when it fails.
func (g *Git) must(env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Refs lists the refs under prefix, by name, with their commits.
func (g *Git) Refs(prefix string) map[string]string {
	out, ok := g.run(nil, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
	refs := map[string]string{}
	if !ok {
		return refs
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if commit, name, ok := strings.Cut(line, " "); ok {
			refs[name] = commit
		}
	}
	return refs
}

// DeleteRefs deletes the refs under prefix (a session's checkpoints).
func (g *Git) DeleteRefs(prefix string) error {
	var b strings.Builder
	for name := range g.Refs(prefix) {
		fmt.Fprintf(&b, "delete %s\n", name)
	}
	if b.Len() == 0 {
		return nil
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir = g.dir
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git update-ref: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Tree is the tree of a commit, "" when git does not have it.
func (g *Git) Tree(commit string) string {
	tree, ok := g.line(nil, "rev-parse", "--verify", "-q", commit+"^{tree}")
	if !ok {
		return ""
	}
	return tree
}

// ChangedSince returns the files under the folder (named from the
// repository's root) that differ between a checkpoint and the work tree
// now, and the snapshot of now.
func (g *Git) ChangedSince(checkpoint string) (files []string, head, now string, err error) {
	head, now = g.Snapshot()
	if now == "" {
		return nil, head, "", fmt.Errorf("git could not snapshot the work tree of %s", g.dir)
	}
	out, err := g.must(nil, "diff", "--name-only", "--no-renames", "-z", checkpoint, now, "--", ".")
	if err != nil {
		return nil, head, now, err
	}
	return splitNames(out), head, now, nil
}

// Root is the top of the work tree.
func (g *Git) Root() string {
	return g.paths().root
}

// Conflicted returns those of files (named from the repository's root)
// that hold a conflict marker: a line that begins with <<<<<<< .
func (g *Git) Conflicted(files []string) []string {
	root := g.Root()
	var out []string
	for _, f := range files {
		content, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(content, []byte("<<<<<<< ")) || bytes.Contains(content, []byte("\n<<<<<<< ")) {
			out = append(out, f)
		}
	}
	return out
}

// Restore makes the work tree under the folder what it was at a
// checkpoint: the files changed since are written back, the files added
// since are removed. HEAD, the branch and the user's index stay as they
// are (the restored files then show as changes, as a checkout of a
// stash's files would).
func (g *Git) Restore(checkpoint string) error {
	_, now := g.Snapshot()
	if now == "" {
		return fmt.Errorf("git could not snapshot the work tree of %s", g.dir)
	}
	added, err := g.must(nil, "diff", "--name-only", "--no-renames", "-z", "--diff-filter=A", checkpoint, now, "--", ".")
	if err != nil {
		return err
	}
	root := g.Root()
	for _, f := range splitNames(added) {
		if err := os.Remove(filepath.Join(root, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	back, err := g.must(nil, "diff", "--name-only", "--no-renames", "-z", "--diff-filter=DMT", checkpoint, now, "--", ".")
	if err != nil {
		return err
	}
	names := splitNames(back)
	if len(names) == 0 {
		return nil
	}
	tmp, err := os.CreateTemp("", "pipeline-index-")
	if err != nil {
		return err
	}
	tmp.Close()
	os.Remove(tmp.Name())
	defer os.Remove(tmp.Name())
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := g.must(env, "read-tree", checkpoint); err != nil {
		return err
	}
	cmd := exec.Command("git", "checkout-index", "-f", "-z", "--stdin")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(strings.Join(names, "\x00"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git checkout-index: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// AddWorktree makes a git worktree at dir whose HEAD is commit, detached:
// a fork's own folder, sharing the repository's objects and refs but no
// file of the work tree.
func (g *Git) AddWorktree(dir, commit string) error {
	// Two git worktree add at once in one repository can fail (one reads
	// the other's half-made .git/worktrees/<name>: "failed to read
	// .../commondir"): forks made at once take turns, under a lock in
	// the repository's common folder.
	if common, ok := g.line(nil, "rev-parse", "--git-common-dir"); ok {
		if !filepath.IsAbs(common) {
			common = filepath.Join(g.dir, common)
		}
		if f, err := os.OpenFile(filepath.Join(common, "pipeline-worktree.lock"), os.O_CREATE|os.O_RDWR, 0o600); err == nil {
			defer f.Close()
			if unix.Flock(int(f.Fd()), unix.LOCK_EX) == nil {
				defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
			}
		}
	}
	_, err := g.must(nil, "worktree", "add", "--detach", "-q", dir, commit)
	return err
}

// Worktrees lists the folders of the repository's work trees, this one
// included.
func (g *Git) Worktrees() []string {
	out, ok := g.run(nil, "worktree", "list", "--porcelain")
	if !ok {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(out, "\n") {
		if dir, ok := strings.CutPrefix(line, "worktree "); ok {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// Diff is the unified diff of paths (relative to the folder) between a
// checkpoint and the work tree now.
func (g *Git) Diff(checkpoint string, paths ...string) (string, error) {
	return g.must(nil, append([]string{"diff", "--no-color", "--no-ext-diff", checkpoint, "--"}, paths...)...)
}
