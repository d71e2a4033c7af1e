// Package filetree is for tests that check a command wrote nothing: it
// maps every file and folder under a root to its size, mode and time.
package filetree

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"
)

// Of maps every file and folder under root to its size, mode and
// modification time; two maps are equal when nothing under root was
// written, made or removed.
func Of(t testing.TB, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		tree[path] = fmt.Sprintf("%d %v %s", info.Size(), info.Mode(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
