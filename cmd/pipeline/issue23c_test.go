package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
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

// Issue 23, item 19: watch printed an invalid phases.yaml on one line,
// its caret block flattened with literal \n, and said nothing when the
// file was valid again.
func TestIssue23WatchShowsInvalidPhasesYAMLAsValidateDoes(t *testing.T) {
	dir := t.TempDir()
	watchedPipeline(t, dir, "")
	good := readFile(t, dir, "phases.yaml")
	w := pipelineStart(t, dir, "watch")
	w.await(t, "watching:")
	write(t, dir, "phases.yaml", strings.Replace(good, "auto_advance: false}", "auto_advance: maybe}", 1))
	var block []string
	for !strings.Contains(strings.Join(block, "\n"), "the sessions keep the plan they had") {
		if line := w.next(t); len(block) > 0 || strings.Contains(line, "invalid, not applied") {
			block = append(block, line)
		}
	}
	text := strings.Join(block, "\n")
	if strings.Contains(text, `\n`) || !strings.Contains(text, "  5 |") || !strings.Contains(text, "^") {
		t.Errorf("the invalid phases.yaml is shown as:\n%s\nwant its numbered line and caret, as validate shows them", text)
	}
	write(t, dir, "phases.yaml", good)
	w.await(t, "valid again: applied")
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	w.exit(t)
}

// Issue 23, item 19: watch -o json glued an error and what follows from
// it: "no such file or directorythe session stays paused".
func TestIssue23WatchEventMessagesAreNotGlued(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	if err := os.Remove(filepath.Join(dir, "spec.md")); err != nil {
		t.Fatal(err)
	}
	invalid := w.awaitEvent(t, "invalid", id)
	if !strings.HasSuffix(invalid.Reason, "; the session stays paused") || strings.Contains(invalid.Reason, "directorythe") {
		t.Errorf("invalid event's reason %q: want the error, then \"; the session stays paused\"", invalid.Reason)
	}
	w.stop(t)
}

// next waits for the next line of the command's output.
func (s *started) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-s.lines:
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("no more lines; stderr: %s", s.stderr.String())
	}
	return ""
}

// Issue 23, item 20: status said a checkpoint's note three times (on the
// status, cause and summary lines). It says it once.
func TestIssue23StatusSaysTheNoteOnce(t *testing.T) {
	dir := t.TempDir()
	const note = "design drafted; review it before implementation"
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, -c, 'cat >/dev/null; echo "[CHECKPOINT] `+note+`"']}
defaults: {pause_when: {checkpoint: checkpoint}}
phases: [{name: design, prompt: Design it.}, {name: build, prompt: Build it.}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "status")
	if n := strings.Count(r.stdout, note); r.code != 0 || n != 1 || !strings.Contains(r.stdout, "paused: checkpoint — "+note) {
		t.Errorf("status says the note %d times, want once, on its status line:\n%s", n, r.stdout)
	}
}

// Issue 23, item 20: a resume context larger than the history it
// replaced was shown as "-44.2% saved". No saving is negative: it says
// how many tokens more than the history it was.
func TestIssue23StatusHasNoNegativeSaving(t *testing.T) {
	got := render.ContextAccount(engine.ContextAccount{Sent: 1, SentTokens: 240, ReplacedTokens: 111})
	if want := "1 resume context, 240 tokens in place of 111 of history (129 tokens more than the history it replaced)"; got != want {
		t.Errorf("context account %q, want %q", got, want)
	}
}

// Issue 23, item 22: watch stopped with Ctrl+C said "the sessions that
// ran are paused" though the only session it ran had completed. It says
// what is true: none was running; or which session it paused.
func TestIssue23WatchStopSaysWhatItPaused(t *testing.T) {
	dir := t.TempDir()
	id := runToFirstPause(t, dir, `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: 'if [ -e long ]; then echo waiting; exec sleep 600; fi'}]}
`)
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "completed", id)
	w.stop(t)
	if got := w.stderr.String(); !strings.Contains(got, "no session was running") || strings.Contains(got, "are paused") {
		t.Errorf("watch stopped with only a completed session says:\n%s", got)
	}

	dir = t.TempDir()
	id = runToFirstPause(t, dir, `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: 'echo waiting; exec sleep 600'}]}
`)
	w = watchStart(t, dir, "--grace", "100ms")
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	w.stop(t)
	if got := w.stderr.String(); !strings.Contains(got, "paused session "+id+", which was running") {
		t.Errorf("watch stopped with a session running says:\n%s", got)
	}
}
