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

// Follow (the local backend's) writes what a running step prints from
// the moment it starts following, not what it printed before, and ends
// when the session stops running.
func TestFollowPrintsTheRunningStepFromNowOn(t *testing.T) {
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
	defer st.Close()
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
	var out syncbuf.Buffer
	following := make(chan struct{})
	followed := make(chan error, 1)
	go func() {
		followed <- app.Local{}.Follow(ctx, app.FollowRequest{Pipeline: p.pipeline(), Session: id, Following: func() { close(following) }}, &out)
	}()
	<-following
	if err := os.WriteFile(filepath.Join(p.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
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
	if got := out.String(); !strings.Contains(got, "after") || strings.Contains(got, "before") {
		t.Fatalf("followed %q, want the line printed after it began (after) and not the one before", got)
	}
}
