package filewatch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 23, item 19: at the inotify limit (fs.inotify.max_user_watches)
// watch repeated its message for every folder it could not watch, 35
// times. It is said once, with the setting to raise.
func TestIssue23WatchLimitIsSaidOnce(t *testing.T) {
	root := t.TempDir()
	for i := range 35 {
		if err := os.MkdirAll(filepath.Join(root, "specs", "s"+strings.Repeat("x", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The first folder is watched, then the limit is reached.
	added := 0
	atLimit := func(string) error {
		if added++; added > 1 {
			return syscall.ENOSPC
		}
		return nil
	}
	_, err := newWatcher(Targets{Root: root, Globs: []string{"specs/**/*.md"}}, 0, nil, atLimit)
	var limit *WatchLimitError
	if !errors.As(err, &limit) {
		t.Fatalf("error %v: want a WatchLimitError", err)
	}
	msg := err.Error()
	if n := strings.Count(msg, "max_user_watches"); n != 2 || strings.Count(msg, "\n") != 0 ||
		!strings.Contains(msg, "cannot watch 35 folders") || !strings.Contains(msg, "raise it (sudo sysctl fs.inotify.max_user_watches=") {
		t.Errorf("error:\n%s\nwant one line saying how many folders and the setting to raise", msg)
	}
}
