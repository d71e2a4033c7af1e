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

	"github.com/pipeline-dev/pipeline/internal/proctest"
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
	// next is the first event of seen not yet awaited.
	next int
}

// watchStart starts pipeline watch -o json in dir and waits until it is
// ready.
func watchStart(t *testing.T, dir string, args ...string) *watching {
	t.Helper()
	w := &watching{started: pipelineStart(t, dir, append([]string{"watch", "-o", "json"}, args...)...)}
	w.awaitEvent(t, "ready", "")
	// What the watcher did before it was ready (a catch up) is awaited
	// like the rest.
	w.next = 0
	return w
}

// awaitEvent waits for the next event of kind (about session, when given)
// and returns it.
func (w *watching) awaitEvent(t *testing.T, kind, session string) watchEvent {
	t.Helper()
	deadline := time.After(failsafe)
	for {
		for ; w.next < len(w.seen); w.next++ {
			if ev := w.seen[w.next]; ev.Event == kind && (session == "" || ev.Session == session) {
				w.next++
				return ev
			}
		}
		select {
		case line := <-w.lines:
			var ev watchEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not a JSON event: %q (%v)", line, err)
			}
			w.seen = append(w.seen, ev)
		case code := <-w.done:
			t.Fatalf("watch ended (exit %d) before a %q event; events %+v; stderr: %s", code, kind, w.seen, w.stderr.String())
		case <-deadline:
			// Its standard error is read once it has ended.
			w.cmd.Process.Kill()
			<-w.done
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
	return runToFirstPause(t, dir, "")
}

// runToFirstPause writes phases (unless ""), and spec.md when there is
// none, runs the pipeline to its first pause and returns the session.
func runToFirstPause(t *testing.T, dir, phases string) string {
	t.Helper()
	if phases != "" {
		write(t, dir, "phases.yaml", phases)
	}
	if _, err := os.Stat(filepath.Join(dir, "spec.md")); err != nil {
		write(t, dir, "spec.md", "# spec\n")
	}
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
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
			// Paused after phase two: the next is three.
			if s := status(t, dir); s.Phase != "three" || s.Status != "paused" {
				t.Errorf("after one resume the session is %s before %s, want paused before three", s.Status, s.Phase)
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
	if s := status(t, dir); s.Phase != "three" {
		t.Errorf("the session is before phase %s, want three: resumed more than once?", s.Phase)
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
	// The old plan had phase one pause too: the session ran phase two
	// and paused before three.
	write(t, dir, "phases.yaml", string(good))
	if s := status(t, dir); s.Phase != "three" || s.Status != "paused" {
		t.Errorf("session %s before %s, want paused before three (the old plan)", s.Status, s.Phase)
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
	// In order: the older session first.
	if first.Session != ids[0] || queued.Session != ids[1] {
		t.Fatalf("resumed %s and queued %s, want %s then %s", first.Session, queued.Session, ids[0], ids[1])
	}
	list := pipeline(t, dir, "sessions")
	if !strings.Contains(list.stdout, "queued") {
		t.Errorf("pipeline sessions does not show the queued session:\n%s", list.stdout)
	}
	write(t, dir, "go", "")
	w.awaitEvent(t, "completed", first.Session)
	second := w.awaitEvent(t, "resumed", queued.Session)
	if second.File == "" {
		t.Errorf("the queued session's resume does not say what woke it: %+v", second)
	}
	w.awaitEvent(t, "completed", queued.Session)
	events := w.stop(t)
	// One at a time: the second resumed after the first paused.
	var order []string
	for _, ev := range events {
		if ev.Event == "resumed" || ev.Event == "completed" {
			order = append(order, ev.Event+" "+ev.Session)
		}
	}
	want := []string{"resumed " + first.Session, "completed " + first.Session, "resumed " + queued.Session, "completed " + queued.Session}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("order %v, want %v", order, want)
	}
	ran, err := os.ReadFile(filepath.Join(dir, "order.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(ran), filepath.Join(dir, "a.md")+"\n"+filepath.Join(dir, "b.md")+"\n"; got != want {
		t.Errorf("the steps ran for %q, want %q", got, want)
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

// A valid phases.yaml saved while a session runs applies from its next
// step; one that renames its phases is refused for that session, with the
// reason, and a paused session it would break is skipped, with the reason.
func TestWatchNewPlanAppliesFromTheNextStep(t *testing.T) {
	dir := t.TempDir()
	const plan = `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - name: two
    steps:
      - {name: wait, run: 'while [ ! -e go ]; do sleep 0.01; done'}
      - {name: next, run: 'echo FIRST > next.txt'}
`
	id := runToFirstPause(t, dir, plan)
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	// Renamed phases: refused for the running session.
	write(t, dir, "phases.yaml", strings.Replace(plan, "name: two", "name: deux", 1))
	refused := w.awaitEvent(t, "skipped", id)
	if !strings.Contains(refused.Reason, "running") {
		t.Errorf("skipped %+v, want the running session", refused)
	}
	// The step of the new plan: applied from the next step.
	write(t, dir, "phases.yaml", strings.Replace(plan, "FIRST", "SECOND", 1))
	w.awaitEvent(t, "reloaded", "")
	applied := w.awaitEvent(t, "skipped", id)
	if !strings.Contains(applied.Reason, "next step") {
		t.Errorf("skipped %+v, want the new plan applied from the next step", applied)
	}
	write(t, dir, "go", "")
	w.awaitEvent(t, "completed", id)
	w.stop(t)
	if got, _ := os.ReadFile(filepath.Join(dir, "next.txt")); string(got) != "SECOND\n" {
		t.Errorf("the next step ran %q, want the new plan's SECOND", got)
	}
	if !strings.Contains(w.stderr.String(), "keeps the plan it had") {
		t.Errorf("the run does not say the renamed phases were refused:\n%s", w.stderr.String())
	}
}

// A paused session whose phases phases.yaml renamed is skipped, with the
// reason, and the others resume.
func TestWatchRenamedPhasesSkipThePausedSession(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	good, err := os.ReadFile(filepath.Join(dir, "phases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", strings.Replace(string(good), "name: two", "name: deux", 1))
	skipped := w.awaitEvent(t, "skipped", id)
	if !strings.Contains(skipped.Reason, "phases") || !strings.Contains(skipped.Reason, "--new") {
		t.Errorf("skipped %+v, want the renamed phases and the way out", skipped)
	}
	events := w.stop(t)
	if n := count(events, "resumed"); n != 0 {
		t.Errorf("%d resumes of a session whose phases were renamed: %+v", n, events)
	}
}

// --reasons narrows the pauses a change resumes.
func TestWatchReasonsNarrowTheResumes(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir, "--reasons", "checkpoint,needs-human")
	write(t, dir, "spec.md", "# The spec\n\nchanged\n")
	skipped := w.awaitEvent(t, "skipped", id)
	if !strings.Contains(skipped.Reason, "phase-complete") || !strings.Contains(skipped.Reason, "--reasons") {
		t.Errorf("skipped %+v, want the pause reason --reasons leaves out", skipped)
	}
	events := w.stop(t)
	if n := count(events, "resumed"); n != 0 {
		t.Errorf("%d resumes, want none: %+v", n, events)
	}
}

// A session started after the watcher, with a spec of its own, is watched
// once it pauses.
func TestWatchFollowsSessionsMadeAfterItStarted(t *testing.T) {
	dir := t.TempDir()
	watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	write(t, dir, "other.md", "# other\n")
	if r := pipeline(t, dir, "run", "--spec", "other.md"); r.code != exitPaused {
		t.Fatalf("run --spec other.md: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir, "--spec", "other.md").ID
	// The watcher reads the index when it changes.
	if followed := w.awaitEvent(t, "followed", id); followed.File != "other.md" {
		t.Errorf("followed %+v, want the spec other.md", followed)
	}
	write(t, dir, "other.md", "# other\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	w.stop(t)
}

// run --watch runs, then watches its session after it pauses, until it
// completes: exit 0.
func TestRunWatchContinuesUntilTheSessionCompletes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: "echo done > done.txt"}]}
`)
	write(t, dir, "spec.md", "# spec\n")
	r := pipelineStart(t, dir, "run", "--watch", "-o", "json")
	w := &watching{started: r}
	w.awaitEvent(t, "ready", "")
	write(t, dir, "spec.md", "# spec\nanswered\n")
	w.awaitEvent(t, "resumed", "")
	w.awaitEvent(t, "completed", "")
	if code := w.exit(t); code != 0 {
		t.Errorf("run --watch: exit %d after the session completed, want 0; stderr: %s", code, r.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "done.txt")); err != nil {
		t.Error("phase two did not run")
	}
}

// A change of the spec's frontmatter reaches the agent: the resume
// context has the diff and the new frontmatter, and the plan it makes
// applies from the step resumed.
func TestWatchFrontmatterChangeReachesTheAgent(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "spec.md", "---\nowner: ana\n---\n# The spec\n")
	id := watchedPipeline(t, dir, "")
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "---\nowner: bob\npipeline:\n  agent: {kind: command, command: [sh, -c, 'cat > prompt-$PIPELINE_PHASE.txt; echo new > agent.txt']}\n---\n# The spec\n")
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	w.stop(t)
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-two.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-owner: ana", "+owner: bob", "frontmatter now", "owner: bob\npipeline:"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the resume context lacks %q:\n%s", want, prompt)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.txt")); err != nil {
		t.Errorf("the agent of the new frontmatter did not run the resumed step: %v", err)
	}
}

// A session whose own step writes a file a watch: glob matches is not
// resumed by that write once it pauses (the debounce brings it after the
// pause): it would resume itself for ever.
func TestWatchDoesNotResumeASessionForItsOwnWrites(t *testing.T) {
	dir := t.TempDir()
	id := runToFirstPause(t, dir, `version: 1
spec: spec.md
watch: ["notes/**/*.md", ".pipeline/**"]
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, auto_advance: false, steps: [{run: "mkdir -p notes && echo two > notes/log.md"}]}
  - {name: three, steps: [{run: "true"}]}
`)
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	skipped := w.awaitEvent(t, "skipped", "")
	if skipped.File != filepath.Join("notes", "log.md") || !strings.Contains(skipped.Reason, "own runs wrote it") {
		t.Errorf("skipped %+v, want the session's own write", skipped)
	}
	// A human's write after the pause counts.
	write(t, dir, filepath.Join("notes", "answer.md"), "go on\n")
	resumed := w.awaitEvent(t, "resumed", id)
	if resumed.Change != "watched" {
		t.Errorf("resumed %+v, want the watched file", resumed)
	}
	w.awaitEvent(t, "completed", id)
	events := w.stop(t)
	if n := count(events, "resumed"); n != 2 {
		t.Errorf("%d resumes, want 2: %+v", n, events)
	}
}

// A watcher killed while a session runs leaves it to the next one, which
// sees it as paused (its runner died) and resumes it on the next change;
// the killed run's step does not outlive it.
func TestWatchKilledWatcherLeavesTheSessionToTheNext(t *testing.T) {
	dir := t.TempDir()
	id := runToFirstPause(t, dir, `version: 1
spec: spec.md
phases:
  - {name: one, auto_advance: false, steps: [{run: "true"}]}
  - {name: two, steps: [{run: 'if [ -e answered ]; then exit 0; fi; echo "step $$"; exec sleep 600'}]}
`)
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# spec\nchanged\n")
	w.awaitEvent(t, "resumed", id)
	// The step's pid is in its transcript once it runs.
	var pid int
	awaitWritten(t, filepath.Join(dir, ".pipeline"), "the step's pid in its transcript", func() bool {
		r := pipeline(t, dir, "logs", id)
		if i := strings.Index(r.stdout, "step "); i >= 0 {
			fmt.Sscanf(r.stdout[i:], "step %d", &pid)
		}
		return pid != 0
	})
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w.exit(t)
	w = watchStart(t, dir)
	write(t, dir, "answered", "")
	write(t, dir, "spec.md", "# spec\nanswered\n")
	resumed := w.awaitEvent(t, "resumed", id)
	if resumed.Reason != "runner-died" {
		t.Errorf("resumed %+v, want reason runner-died", resumed)
	}
	w.awaitEvent(t, "completed", id)
	w.stop(t)
	proctest.AwaitExit(t, pid)
}
