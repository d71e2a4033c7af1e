package app_test

import (
	"fmt"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/filewatch"
)

// Issue 23, item 19: watch at the inotify limit exited 1, as if the
// pipeline had failed. The limit is the machine's to raise: exit 2, with
// no hint about --state-dir (the message says what to raise).
func TestIssue23WatchLimitExits2(t *testing.T) {
	err := fmt.Errorf("watching: %w", &filewatch.WatchLimitError{Setting: "fs.inotify.max_user_watches", Folders: []string{"/p/specs/a"}})
	if code := app.ExitCode(err); code != app.ExitUsage {
		t.Errorf("exit code %d, want %d", code, app.ExitUsage)
	}
	if hint := app.Hint(err); hint != "" {
		t.Errorf("hint %q, want none", hint)
	}
}
