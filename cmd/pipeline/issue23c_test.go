package main

import (
	"strings"
	"testing"
)

// Issue 23, item 17: pipeline pause from another terminal showed in the
// run's terminal (and in watch's) as "terminated (SIGTERM)", the signal
// that carried the request, not what happened.
func TestIssue23PauseCommandSaysPauseRequested(t *testing.T) {
	const want = "pause requested by pipeline pause"
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: long
    steps: [{run: 'echo waiting; exec sleep 600'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "waiting")
	if r := pipeline(t, dir, "pause", "--notes", "coffee break"); r.code != 0 {
		t.Fatalf("pause: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("the paused run exited %d: %s", code, run.stderr.String())
	}
	got := run.stderr.String()
	for len(run.lines) > 0 {
		got += <-run.lines + "\n"
	}
	if !strings.Contains(got, want) || strings.Contains(got, "SIGTERM") {
		t.Errorf("the run's terminal says:\n%s\nwant %q and no SIGTERM", got, want)
	}

	// The same under watch: the session resumed by the watcher.
	dir = t.TempDir()
	id := runToFirstPause(t, dir, `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: 'echo "step $$"; exec sleep 600'}]}
`)
	w := watchStart(t, dir, "--grace", "100ms")
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	if r := pipeline(t, dir, "pause", id, "--notes", "wait for the API"); r.code != 0 {
		t.Fatalf("pause: exit %d, %s", r.code, r.stderr)
	}
	w.awaitEvent(t, "paused", id)
	w.stop(t)
	if got = w.stderr.String(); !strings.Contains(got, want) || strings.Contains(got, "SIGTERM") {
		t.Errorf("the watch's terminal says:\n%s\nwant %q and no SIGTERM", got, want)
	}
}
