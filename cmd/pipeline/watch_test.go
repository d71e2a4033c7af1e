package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchEvent is a line of pipeline watch -o json.
type watchEvent struct {
	Event   string `json:"event"`
	File    string `json:"file"`
	Change  string `json:"change"`
	Session string `json:"session"`
	Reason  string `json:"reason"`
	Status  string `json:"status"`
}

// watching is a pipeline watch -o json running in the background.
type watching struct {
	*started
	seen []watchEvent
}

// watchStart starts pipeline watch -o json in dir and waits until it is
// ready.
func watchStart(t *testing.T, dir string, args ...string) *watching {
	t.Helper()
	w := &watching{started: pipelineStart(t, dir, append([]string{"watch", "-o", "json"}, args...)...)}
	w.awaitEvent(t, "ready", "")
	return w
}

// awaitEvent waits for the next event of kind (about session, when given)
// and returns it.
func (w *watching) awaitEvent(t *testing.T, kind, session string) watchEvent {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line := <-w.lines:
			var ev watchEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not a JSON event: %q (%v)", line, err)
			}
			w.seen = append(w.seen, ev)
			if ev.Event == kind && (session == "" || ev.Session == session) {
				return ev
			}
		case code := <-w.done:
			t.Fatalf("watch ended (exit %d) before a %q event; events %+v; stderr: %s", code, kind, w.seen, w.stderr.String())
		case <-deadline:
			t.Fatalf("no %q event; events %+v; stderr: %s", kind, w.seen, w.stderr.String())
		}
	}
}

// stop interrupts the watcher, checks it exits 3, and returns every event
// it printed.
func (w *watching) stop(t *testing.T) []watchEvent {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := w.exit(t)
	for {
		select {
		case line := <-w.lines:
			var ev watchEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not a JSON event: %q (%v)", line, err)
			}
			w.seen = append(w.seen, ev)
			continue
		default:
		}
		break
	}
	if code != exitPaused {
		t.Fatalf("watch exit %d after SIGINT, want %d; stderr: %s", code, exitPaused, w.stderr.String())
	}
	return w.seen
}

func count(events []watchEvent, kind string) int {
	n := 0
	for _, ev := range events {
		if ev.Event == kind {
			n++
		}
	}
	return n
}

// watchedPipeline writes a pipeline of three phases that pause between
// them, whose agent writes each prompt it gets to prompt-PHASE.txt, and
// runs it to its first pause; it returns the session.
func watchedPipeline(t *testing.T, dir, extra string) string {
	t.Helper()
	write(t, dir, "phases.yaml", `version: 1
spec: spec.md
agent: {kind: command, command: [sh, -c, 'cat > prompt-$PIPELINE_PHASE.txt']}
`+extra+`phases:
  - {name: one, prompt: do one, auto_advance: false}
  - {name: two, prompt: do two, auto_advance: false}
  - {name: three, prompt: do three}
`)
	if _, err := os.Stat(filepath.Join(dir, "spec.md")); err != nil {
		write(t, dir, "spec.md", "# The spec\n\nBuild it.\n")
	}
	r := pipeline(t, dir, "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	return status(t, dir).ID
}

// The ways editors save a file all resume the paused session once, with
// the spec's diff in the agent's resume context.
func TestWatchResumesOnEverySaveOfTheSpec(t *testing.T) {
	saves := map[string]func(t *testing.T, path, content string){
		"write in place": func(t *testing.T, path, content string) {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"rename over": func(t *testing.T, path, content string) {
			// vim's backupcopy=no, VS Code, JetBrains: a temporary file
			// beside it, renamed over it.
			tmp := filepath.Join(filepath.Dir(path), ".spec.md.tmp.1234")
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
		"delete then create": func(t *testing.T, path, content string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"swap file then write": func(t *testing.T, path, content string) {
			swap := filepath.Join(filepath.Dir(path), ".spec.md.swp")
			if err := os.WriteFile(swap, []byte("swap"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(swap)
		},
	}
	for name, save := range saves {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			id := watchedPipeline(t, dir, "")
			w := watchStart(t, dir)
			save(t, filepath.Join(dir, "spec.md"), "# The spec\n\nBuild it.\nUse the v2 endpoint.\n")
			resumed := w.awaitEvent(t, "resumed", id)
			if resumed.File != "spec.md" || resumed.Change != "spec" || resumed.Reason != "phase-complete" {
				t.Errorf("resumed event %+v, want file spec.md, change spec, reason phase-complete", resumed)
			}
			w.awaitEvent(t, "paused", id)
			events := w.stop(t)
			if n := count(events, "resumed"); n != 1 {
				t.Errorf("%d resumes, want 1: %+v", n, events)
			}
			prompt, err := os.ReadFile(filepath.Join(dir, "prompt-two.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(prompt), "+Use the v2 endpoint.") {
				t.Errorf("the resume context has no diff of the spec:\n%s", prompt)
			}
			if s := status(t, dir); s.Phase != "two" || s.Status != "paused" {
				t.Errorf("after one resume the session is %s at %s, want paused at two", s.Status, s.Phase)
			}
		})
	}
}

// A burst of 100 writes is one change: one resume, not 100.
func TestWatchBurstOfWritesResumesOnce(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir, "--debounce", "300ms")
	path := filepath.Join(dir, "spec.md")
	for i := range 100 {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("# The spec\n\nrevision %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	events := w.stop(t)
	if n := count(events, "resumed"); n != 1 {
		t.Errorf("%d resumes after a burst of 100 writes, want 1: %+v", n, events)
	}
	if s := status(t, dir); s.Phase != "two" {
		t.Errorf("the session went on to phase %s: resumed more than once", s.Phase)
	}
}

// A spec in a folder made after the watcher started, matched by a watch:
// glob, resumes the pipeline's paused session.
func TestWatchSeesAFileInANewFolder(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "watch: [\"specs/**/*.md\"]\n")
	if err := os.Mkdir(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := watchStart(t, dir)
	deep := filepath.Join(dir, "specs", "045-dashboard", "api")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, deep, "README.md", "# the API\n")
	resumed := w.awaitEvent(t, "resumed", id)
	if want := filepath.Join("specs", "045-dashboard", "api", "README.md"); !strings.HasSuffix(resumed.File, want) || resumed.Change != "watched" {
		t.Errorf("resumed event %+v, want file %s, change watched", resumed, want)
	}
	w.awaitEvent(t, "paused", id)
	// A file no glob matches does not count.
	write(t, deep, "notes.txt", "not a spec\n")
	write(t, deep, "README.md~", "a backup\n")
	events := w.stop(t)
	if n := count(events, "resumed"); n != 1 {
		t.Errorf("%d resumes, want 1: %+v", n, events)
	}
}

// An invalid phases.yaml is reported with its line and column and the old
// plan is kept: the session resumes with it on the next spec change.
func TestWatchKeepsTheOldPlanWhenPhasesYAMLIsInvalid(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	good, err := os.ReadFile(filepath.Join(dir, "phases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", strings.Replace(string(good), "auto_advance: false}", "auto_advance: maybe}", 1))
	invalid := w.awaitEvent(t, "invalid", "")
	if !strings.Contains(invalid.Reason, "phases.yaml:5:") || !strings.Contains(invalid.Reason, "keep") {
		t.Errorf("invalid event %+v: want the file:line:col and that the old plan is kept", invalid)
	}
	write(t, dir, "spec.md", "# The spec\n\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	events := w.stop(t)
	for _, ev := range events {
		if ev.Event == "resumed" && ev.Change == "phases.yaml" {
			t.Errorf("an invalid phases.yaml resumed the session: %+v", ev)
		}
	}
	if s := status(t, dir, "--file", "phases.yaml"); s.Phase != "two" || s.Status != "paused" {
		t.Errorf("session %s at %s, want paused at two (the old plan)", s.Status, s.Phase)
	}
}

// A spec changed while no watcher ran is caught up when one starts: the
// spec's hash was kept at the pause.
func TestWatchResumesWhatChangedWhileItWasDown(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	write(t, dir, "spec.md", "# The spec\n\nchanged while nothing watched\n")
	w := watchStart(t, dir)
	resumed := w.awaitEvent(t, "resumed", id)
	if !strings.Contains(resumed.Change, "while no watcher ran") {
		t.Errorf("resumed event %+v, want the change made while down", resumed)
	}
	w.awaitEvent(t, "paused", id)
	w.stop(t)
	// Unchanged since: a second watcher resumes nothing.
	w = watchStart(t, dir)
	events := w.stop(t)
	if n := count(events, "resumed"); n != 0 {
		t.Errorf("%d resumes with nothing changed, want 0: %+v", n, events)
	}
}

// Two specs changed at once with --max-parallel 1: one runs, the other is
// queued (pipeline sessions says so) and runs after it.
func TestWatchMaxParallelQueuesTheRest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - name: two
    auto_advance: false
    steps: [{run: 'echo "$PIPELINE_SPEC" >> order.txt; while [ ! -e go ]; do sleep 0.01; done'}]
`)
	write(t, dir, "a.md", "# A\n")
	write(t, dir, "b.md", "# B\n")
	var ids []string
	for _, spec := range []string{"a.md", "b.md"} {
		if r := pipeline(t, dir, "run", "--spec", spec); r.code != exitPaused {
			t.Fatalf("run --spec %s: exit %d, %s", spec, r.code, r.stderr)
		}
		ids = append(ids, status(t, dir, "--spec", spec).ID)
	}
	w := watchStart(t, dir, "--max-parallel", "1")
	write(t, dir, "a.md", "# A\nchanged\n")
	write(t, dir, "b.md", "# B\nchanged\n")
	first := w.awaitEvent(t, "resumed", "")
	queued := w.awaitEvent(t, "queued", "")
	if first.Session == queued.Session || queued.Session == "" {
		t.Fatalf("resumed %s and queued %s, want the two sessions", first.Session, queued.Session)
	}
	list := pipeline(t, dir, "sessions")
	if !strings.Contains(list.stdout, "queued") {
		t.Errorf("pipeline sessions does not show the queued session:\n%s", list.stdout)
	}
	write(t, dir, "go", "")
	w.awaitEvent(t, "paused", first.Session)
	second := w.awaitEvent(t, "resumed", queued.Session)
	if second.File == "" {
		t.Errorf("the queued session's resume does not say what woke it: %+v", second)
	}
	w.awaitEvent(t, "paused", queued.Session)
	events := w.stop(t)
	// One at a time: the second resumed after the first paused.
	var order []string
	for _, ev := range events {
		if ev.Event == "resumed" || ev.Event == "paused" {
			order = append(order, ev.Event+" "+ev.Session)
		}
	}
	want := []string{"resumed " + first.Session, "paused " + first.Session, "resumed " + queued.Session, "paused " + queued.Session}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("order %v, want %v", order, want)
	}
}

// One watcher per folder of sessions: a second is refused, exit 2, and
// names the first.
func TestWatchSecondWatcherIsRefused(t *testing.T) {
	dir := t.TempDir()
	watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	r := pipeline(t, dir, "watch")
	if r.code != exitUsage || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", w.cmd.Process.Pid)) || !strings.Contains(r.stderr, "already watches") {
		t.Errorf("second watcher: exit %d, %q; want 2 naming pid %d", r.code, r.stderr, w.cmd.Process.Pid)
	}
	w.stop(t)
}

// SIGTERM pauses the sessions running and ends the watch with exit 3;
// pipeline pause SESSION pauses that session only and the watch goes on.
func TestWatchPauseOneSessionThenStop(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: 'echo "step $$"; exec sleep 600'}]}
`)
	write(t, dir, "spec.md", "# spec\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	w := watchStart(t, dir, "--grace", "100ms")
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	if r := pipeline(t, dir, "pause", id, "--notes", "wait for the API"); r.code != 0 {
		t.Fatalf("pause: exit %d, %s", r.code, r.stderr)
	}
	paused := w.awaitEvent(t, "paused", id)
	if !strings.Contains(paused.Reason, "human") {
		t.Errorf("paused event %+v, want reason human", paused)
	}
	// The watch went on: the next change resumes the session again.
	write(t, dir, "spec.md", "# spec\nchanged again\n")
	w.awaitEvent(t, "resumed", id)
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.awaitEvent(t, "paused", id)
	if code := w.exit(t); code != exitPaused {
		t.Errorf("watch exit %d after SIGTERM, want 3", code)
	}
	if s := status(t, dir); s.Status != "paused" || s.Phase != "two" {
		t.Errorf("session %s at %s, want paused at two", s.Status, s.Phase)
	}
}
