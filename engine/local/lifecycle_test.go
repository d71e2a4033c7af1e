package local_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/filetree"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// lifecyclePipeline waits in its first phase until the file go-on exists
// (Ctrl+C ends the wait cleanly), then runs a second phase.
const lifecyclePipeline = `version: 1
phases:
  - name: wait
    steps: [{run: 'trap "echo interrupted; exit 130" INT; echo ready; while [ ! -e go-on ]; do sleep 0.05; done; echo went on'}]
  - name: finish
    steps: [{run: echo finished}]
`

// The session service and the local driver, driven from Go as any new
// driver would: run, pause by cancelling the context, resume with notes,
// run to the end; then a second session completed by hand. Nothing here
// builds or runs the pipeline binary.
func TestSessionServiceAndLocalDriver(t *testing.T) {
	dir := t.TempDir()
	file, plan := pipelineIn(t, dir, lifecyclePipeline)
	st := storeIn(t, dir)
	view := newTestView()
	driver := &local.Driver{View: view, Clock: clock.Real{}, Grace: 5 * time.Second}
	background := context.Background()

	// Run, and pause it by cancelling the context while its step waits.
	sess, err := session.Open(background, st, session.Options{File: file, Plan: plan, Create: session.IfNone,
		Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	if !sess.Created {
		t.Fatal("the first Open did not create a session")
	}
	id := sess.ID()
	ctx, cancel := context.WithCancel(background)
	done := make(chan engine.State, 1)
	go func() {
		s, err := driver.Run(ctx, sess, sess.Start(time.Now()))
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- s
	}()
	view.awaitLine(t, "ready")
	cancel()
	s := awaitState(t, done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonInterrupted || s.Phase != 0 {
		t.Fatalf("after the cancel: %+v, pause %+v", s, s.Pause)
	}
	if s.PlanDigest == "" || s.PlanDigest != plan.Digest {
		t.Errorf("the session recorded plan %q, want %q", s.PlanDigest, plan.Digest)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(view.lineList(), "interrupted") {
		t.Errorf("the step was not interrupted gracefully; output %q", view.lineList())
	}

	// A second runner of the same pipeline and spec is kept out while the
	// first holds the session; reading it takes no lock and writes nothing.
	before := filetree.Of(t, st.Root)
	ref, err := session.Find(st, session.Options{File: file, Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if got, crashed, err := ref.State(); err != nil || crashed || got.Status != engine.StatusPaused {
		t.Fatalf("Find: %+v crashed=%v err=%v", got, crashed, err)
	}
	ref.Close()
	if after := filetree.Of(t, st.Root); !maps.Equal(before, after) {
		t.Errorf("reading the session wrote to the store:\nbefore %v\nafter  %v", before, after)
	}

	// Resume it with notes: the step finds go-on and the session completes.
	if err := os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sess, err = session.Open(background, st, session.Options{File: file, Plan: plan, Create: session.Never,
		Statuses: []engine.Status{engine.StatusPaused}})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Created || sess.ID() != id {
		t.Fatalf("resume opened %s (created %v), want %s", sess.ID(), sess.Created, id)
	}
	if _, err := session.Open(background, st, session.Options{File: file, Plan: plan, Create: session.Always}); err == nil {
		t.Fatal("a second Open of a held pipeline and spec was let in")
	}
	events, err := sess.Resume(time.Now(), "the file is there now", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err = driver.Run(background, sess, events...)
	if err != nil {
		t.Fatal(err)
	}
	// Two interventions: the interrupt, and the resume.
	if s.Status != engine.StatusCompleted || s.Phases[0].Human != 2 ||
		!slices.Contains(s.Phases[0].Notes, "the file is there now") || s.Phases[1].Status != engine.StatusCompleted {
		t.Fatalf("after the resume: %+v", s)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Resume(time.Now(), "", ""); err == nil {
		t.Error("a completed session was resumed")
	}

	// A new session, paused, then completed by hand.
	if err := os.Remove(filepath.Join(dir, "go-on")); err != nil {
		t.Fatal(err)
	}
	sess, err = session.Open(background, st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	second := sess.ID()
	ctx, cancel = context.WithCancel(background)
	go func() {
		s, _ := driver.Run(ctx, sess, sess.Start(time.Now()))
		done <- s
	}()
	view.awaitLine(t, "ready")
	cancel()
	if s := awaitState(t, done); s.Status != engine.StatusPaused {
		t.Fatalf("second session: %+v", s)
	}
	sess.Close()
	sess, err = session.Open(background, st, session.Options{ID: second})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Complete(time.Now()); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	ref, err = session.Find(st, session.Options{ID: second})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if got, _, _ := ref.State(); got.Status != engine.StatusCompleted {
		t.Errorf("completed by hand: %+v", got)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Status != "completed" || list[1].Status != "completed" {
		t.Errorf("index: %+v", list)
	}
}

func awaitState(t *testing.T, done <-chan engine.State) engine.State {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(testwait.Failsafe):
		t.Fatal("the run did not end")
	}
	return engine.State{}
}

// Regression: with phases.yaml named by a relative path, the agent was
// told the spec's path relative to the command's folder, not to its own
// (Spec: ../x/spec.md where spec.md was right beside it), and
// PIPELINE_SPEC held that relative path too.
func TestTheAgentGetsTheSpecBesideIt(t *testing.T) {
	dir := t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relDir, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.md"), []byte("# Spec\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(`version: 1
spec: spec.md
agent: {kind: command, command: [sh, -c, 'printf "%s\n%s\n" "$0" "$PIPELINE_SPEC" > got.txt', "{prompt}"]}
phases: [{name: one}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(relDir, "phases.yaml")
	plan, err := spec.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.Open(context.Background(), storeIn(t, dir), session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	driver := &local.Driver{View: newTestView(), Clock: clock.Real{}, Grace: time.Second}
	if s, err := driver.Run(context.Background(), sess, sess.Start(time.Now())); err != nil || s.Status != engine.StatusCompleted {
		t.Fatalf("run: %+v, %v", s, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "got.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "Spec: spec.md\n") || !strings.Contains(string(got), "\n"+filepath.Join(dir, "spec.md")+"\n") {
		t.Errorf("the agent got:\n%s", got)
	}
}

// A resume_context.template that fails with the data (an index past the
// end of a list, which loading cannot see) gives way to the built-in
// resume context, and the person running the pipeline is told.
func TestAFailingResumeTemplateFallsBackAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	file, plan := pipelineIn(t, dir, `version: 1
resume_context: {template: '{{index .NextSteps 99}}'}
agent: {kind: command, command: [sh, -c, 'printf "%s" "$0" > prompt.txt; echo ready; while [ ! -e go-on ]; do sleep 0.05; done', "{prompt}"]}
phases: [{name: one}]
`)
	st := storeIn(t, dir)
	view := newTestView()
	driver := &local.Driver{View: view, Clock: clock.Real{}, Grace: 5 * time.Second}
	sess, err := session.Open(context.Background(), st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan engine.State, 1)
	go func() {
		s, _ := driver.Run(ctx, sess, sess.Start(time.Now()))
		done <- s
	}()
	view.awaitLine(t, "ready")
	cancel()
	if s := awaitState(t, done); s.Status != engine.StatusPaused {
		t.Fatalf("state %+v", s)
	}
	sess.Close()
	if err := os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sess, err = session.Open(context.Background(), st, session.Options{ID: sess.ID()})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	events, err := sess.Resume(time.Now(), "the note", "")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := driver.Run(context.Background(), sess, events...); err != nil || s.Status != engine.StatusCompleted {
		t.Fatalf("resume: %+v, %v", s, err)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "[Resume context]") || !strings.Contains(string(prompt), "the note") {
		t.Errorf("the agent did not get the built-in resume context:\n%s", prompt)
	}
	if said := view.saidText(); !strings.Contains(said, "resume_context.template failed") {
		t.Errorf("nobody was told; said:\n%s", said)
	}
}
