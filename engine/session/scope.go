package session

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// OutOfScope returns the files under the folder that changed between the
// snapshot tree (taken when the step started) and the work tree now, and
// that no glob of writes matches: the step's own changes outside its
// phase's write scope. Names and globs are relative to the folder (the
// folder of phases.yaml). An empty writes (a read-only phase) matches
// nothing. ok is false when git could not tell.
//
// now is the snapshot of the work tree it compared with (zero when it
// took none).
func (g *Git) OutOfScope(tree string, writes []string) (files []string, ok bool, now WorkTree) {
	if tree == "" {
		return nil, false, WorkTree{}
	}
	head, snapshot := g.Snapshot()
	now = WorkTree{Head: head, Tree: snapshot}
	if now.Tree == "" {
		return nil, false, WorkTree{}
	}
	if now.Tree == tree {
		return nil, true, now
	}
	out, ok := g.run(nil, "diff", "--name-only", "--no-renames", "--relative", "-z", tree, now.Tree, "--", ".")
	if !ok {
		return nil, false, now
	}
	for _, name := range splitNames(out) {
		if !inScope(name, writes) {
			files = append(files, name)
		}
	}
	return files, true, now
}

func inScope(name string, writes []string) bool {
	for _, glob := range writes {
		glob = path.Clean(filepath.ToSlash(glob))
		if ok, _ := doublestar.Match(glob, name); ok {
			return true
		}
		// A folder names what it holds: docs is docs/**.
		if ok, _ := doublestar.Match(strings.TrimSuffix(glob, "/")+"/**", name); ok {
			return true
		}
	}
	return false
}

// Revert puts files (relative to the folder) back as they are in the
// snapshot tree: their content and mode from the tree, and a file the
// tree lacks is deleted. Neither the index nor HEAD is touched: the tree
// is read into a temporary index, and the files checked out from there.
func (g *Git) Revert(tree string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	tmp, err := os.CreateTemp("", "pipeline-index-")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	os.Remove(name) // git reads an empty file as a broken index
	defer os.Remove(name)
	env := []string{"GIT_INDEX_FILE=" + name}
	if _, ok := g.run(env, "read-tree", tree); !ok {
		return fmt.Errorf("git read-tree %s failed: the snapshot taken before the step is gone", tree)
	}
	listed, ok := g.run(env, "ls-files", "-z", "--", ".")
	if !ok {
		return fmt.Errorf("git ls-files on the snapshot failed")
	}
	had := map[string]bool{}
	for _, f := range strings.Split(listed, "\x00") {
		had[f] = true
	}
	var restore []string
	for _, f := range files {
		if had[f] {
			restore = append(restore, f)
			continue
		}
		full := filepath.Join(g.dir, filepath.FromSlash(f))
		if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
			return err
		}
		removeEmptyParents(g.dir, filepath.Dir(full))
	}
	if len(restore) > 0 {
		args := append([]string{"checkout-index", "-f", "-q", "--"}, restore...)
		if out, ok := g.run(env, args...); !ok {
			return fmt.Errorf("git checkout-index failed: %s", strings.TrimSpace(out))
		}
	}
	return nil
}

// removeEmptyParents removes the folders a deleted file leaves empty, up
// to (not including) top: a step's new folder goes with its files.
func removeEmptyParents(top, dir string) {
	for dir != top && strings.HasPrefix(dir, top+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
