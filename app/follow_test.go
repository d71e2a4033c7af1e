package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/syncbuf"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// waitingStep starts a session whose one step prints "before", waits
// for a file named go in the project, then prints "after"; it returns
// the project, the session's id and the run's end, once "before" is in
// the step's transcript.
func waitingStep(t *testing.T) (*project, string, <-chan error) {
	t.Helper()
	p := newProject(t, `version: 1
phases:
  - name: build
    steps: [{name: wait, run: "echo before; while [ ! -f go ]; do sleep 0.02; done; echo after"}]
`)
	plan, err := spec.Load(p.file, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.pipeline().Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	sess, err := session.Open(ctx, st, session.Options{File: p.file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	ran := make(chan error, 1)
	go func() {
		driver := &local.Driver{View: local.Discard, Clock: clock.Real{}, Grace: time.Second}
		_, err := driver.Run(ctx, sess, sess.Start(time.Now()))
		ran <- errors.Join(err, sess.Close())
	}()
	// The step has printed its first line (transcripts/ comes with it:
	// its session's folder is watched).
	transcripts := filepath.Join(p.dir, ".pipeline", "sessions", id, "transcripts")
	testwait.Written(t, filepath.Dir(transcripts), "the step's first line", func() bool {
		paths, _ := filepath.Glob(filepath.Join(transcripts, "build", "*.log"))
		if len(paths) != 1 {
			return false
		}
		text, _ := os.ReadFile(paths[0])
		return strings.Contains(string(text), "before")
	})
	return p, id, ran
}

// letGo writes the file the waiting step waits for.
func letGo(t *testing.T, p *project) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, "go"), nil, 0o600); err != nil {
		t.Error(err)
	}
}

// wantAfterOnly checks that Follow wrote the line printed after it began.
func wantAfterOnly(t *testing.T, out *syncbuf.Buffer) {
	t.Helper()
	if got := out.String(); !strings.Contains(got, "after") || strings.Contains(got, "before") {
		t.Fatalf("followed %q, want the line printed after it began (after) and not the one before", got)
	}
}

// Follow (the local backend's) writes what a running step prints from
// the moment it starts following, not what it printed before, and ends
// when the session stops running.
func TestFollowPrintsTheRunningStepFromNowOn(t *testing.T) {
	p, id, ran := waitingStep(t)
	var out syncbuf.Buffer
	following := make(chan struct{})
	followed := make(chan error, 1)
	go func() {
		followed <- app.Local{}.Follow(context.Background(), app.FollowRequest{Pipeline: p.pipeline(), Session: id, Following: func() { close(following) }}, &out)
	}()
	<-following
	letGo(t, p)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-followed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testwait.Failsafe):
		t.Fatal("Follow did not end when the session stopped running")
	}
	wantAfterOnly(t, &out)
}

// A session that stops in the instant Follow begins (here: the step is
// let go, and ends, before Follow looks at whether it runs) still gives
// what its step printed from that instant on: Follow caught up with the
// transcripts' ends, then found the session stopped, and wrote nothing.
func TestFollowOfASessionThatStopsAsItBeginsPrintsWhatCame(t *testing.T) {
	p, id, ran := waitingStep(t)
	var out syncbuf.Buffer
	err := app.Local{}.Follow(context.Background(), app.FollowRequest{Pipeline: p.pipeline(), Session: id, Following: func() {
		letGo(t, p)
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	wantAfterOnly(t, &out)
}
