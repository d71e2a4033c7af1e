package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 9: the store deleted under a live run. The run went on appending
// to a log that was no longer anywhere, made the session's folders again
// for the next step's transcript, and exited 0. It now says so, stops,
// and exits non-zero, making nothing again.
func TestStoreDeletedUnderALiveRunStopsIt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo started; while [ ! -f go-on ]; do sleep 0.01; done'}]
  - name: two
    steps: [{run: 'echo two'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "started")
	// The runner may be writing a file of the session meanwhile (its
	// step's process group): rm -rf again, as a user would.
	for attempt := 0; ; attempt++ {
		err := os.RemoveAll(filepath.Join(dir, ".pipeline"))
		if err == nil {
			break
		}
		if attempt == 10 {
			t.Fatal(err)
		}
	}
	write(t, dir, "go-on", "")
	var shown []string
	code := -1
	for code < 0 {
		select {
		case line := <-run.lines:
			shown = append(shown, line)
		case code = <-run.done:
		case <-time.After(60 * time.Second):
			t.Fatal("the run did not end")
		}
	}
	for len(run.lines) > 0 {
		shown = append(shown, <-run.lines)
	}
	out := strings.Join(shown, "\n")
	if code != exitPaused || !strings.Contains(out, "store-error: the session's folder was deleted") ||
		!strings.Contains(run.stderr.String(), "was deleted while it ran") || strings.Contains(out, "completed") {
		t.Errorf("the run whose store was deleted: exit %d\n%s\n%s", code, out, run.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); !os.IsNotExist(err) {
		t.Errorf("the deleted store was made again: %v %v", err, treeOf(t, filepath.Join(dir, ".pipeline")))
	}
}
