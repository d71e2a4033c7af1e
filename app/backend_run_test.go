package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// drivingView is a RunView that drives the session it is given here, as
// the command line does (without its screen), and keeps what it saw.
type drivingView struct {
	t      *testing.T
	opened []*app.Opened
	states []engine.State
	// err is what Drive returns, once it has driven and closed the
	// session.
	err error
}

func (v *drivingView) Drive(ctx context.Context, opened *app.Opened) error {
	v.opened = append(v.opened, opened)
	state, err := app.Drive(ctx, opened.Session, opened.Events, app.DriveOptions{View: local.Discard, Grace: time.Second})
	if closeErr := opened.Session.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		v.t.Fatalf("driving session %s: %v", opened.Session.ID(), err)
	}
	v.states = append(v.states, state)
	return v.err
}

func (v *drivingView) Follow(_ context.Context, s app.Started) error {
	v.t.Fatalf("the local backend gave a session to follow, %+v: its sessions are driven here", s)
	return nil
}

// last is the session the view was given last, and how its drive ended.
func (v *drivingView) last() (*app.Opened, engine.State) {
	v.t.Helper()
	if len(v.opened) == 0 {
		v.t.Fatal("the view was given no session")
	}
	return v.opened[len(v.opened)-1], v.states[len(v.states)-1]
}

// The local backend's Start and Resume, called through app.Backend, open
// the session run and resume would (a new one, the paused one resumed,
// the named one resumed with its notes) and give it to the view to drive;
// what the view returns is what they return; what cannot start never
// reaches the view.
func TestLocalBackendStartsAndResumesThroughTheView(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    auto_advance: false\n    steps: [{run: \"true\"}]\n  - name: ship\n    steps: [{run: \"true\"}]\n")
	ctx := context.Background()
	var be app.Backend = app.Local{}
	defer be.Close()
	view := &drivingView{t: t}

	if err := be.Start(ctx, app.RunRequest{Pipeline: p.pipeline()}, view); err != nil {
		t.Fatalf("start: %v", err)
	}
	first, state := view.last()
	if !first.Session.Created || first.Resumed != "" || state.Status != engine.StatusPaused {
		t.Fatalf("start: created %v, resumed %q, status %s; want a new session paused after build", first.Session.Created, first.Resumed, state.Status)
	}
	id := first.Session.ID()

	if err := be.Resume(ctx, app.ResumeRequest{Pipeline: p.pipeline(), Session: id, Notes: "ship it"}, view); err != nil {
		t.Fatalf("resume: %v", err)
	}
	resumed, state := view.last()
	if resumed.Session.ID() != id || resumed.Resumed != "resumed" || state.Status != engine.StatusCompleted {
		t.Fatalf("resume: session %s (%q), status %s; want %s resumed and completed", resumed.Session.ID(), resumed.Resumed, state.Status, id)
	}
	var notes []string
	for _, phase := range state.Phases {
		notes = append(notes, phase.Notes...)
	}
	if !slices.Contains(notes, "ship it") {
		t.Errorf("the resumed session's notes: %q; want the resume's, %q", notes, "ship it")
	}

	// The latest completed: a new session, which pauses; the next start
	// resumes it, and the view's answer is Start's.
	if err := be.Start(ctx, app.RunRequest{Pipeline: p.pipeline()}, view); err != nil {
		t.Fatalf("second start: %v", err)
	}
	second, _ := view.last()
	if second.Session.ID() == id || !second.Session.Created {
		t.Fatalf("second start: session %s, created %v; want a new session after the completed %s", second.Session.ID(), second.Session.Created, id)
	}
	view.err = errors.New("the view's own end")
	if err := be.Start(ctx, app.RunRequest{Pipeline: p.pipeline()}, view); err != view.err {
		t.Fatalf("third start: %v; want what the view returned", err)
	}
	third, state := view.last()
	if third.Session.ID() != second.Session.ID() || !strings.HasPrefix(third.Resumed, "paused") || state.Status != engine.StatusCompleted {
		t.Fatalf("third start: session %s (%q), status %s; want %s, paused, resumed and completed", third.Session.ID(), third.Resumed, state.Status, second.Session.ID())
	}

	given := len(view.opened)
	if err := be.Start(ctx, app.RunRequest{Pipeline: p.pipeline(), From: "deploy"}, view); app.ExitCode(err) != app.ExitUsage {
		t.Errorf("start --from deploy: %v; want a usage error (no such phase)", err)
	}
	if err := be.Resume(ctx, app.ResumeRequest{Pipeline: p.pipeline(), Session: id}, view); err == nil {
		t.Errorf("resume of completed session %s: no error", id)
	}
	if len(view.opened) != given {
		t.Errorf("the view was given %d sessions that could not start", len(view.opened)-given)
	}
}
