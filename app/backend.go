package app

import (
	"context"
	"io"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// Backend is where sessions run: this machine (Local), or a Temporal
// fleet (app/fleet, in the build with the Temporal backend only, so that
// the local binary links nothing of the Temporal SDK). The session
// commands act on a session through the Backend the command line chose;
// what a backend cannot do it refuses with a usage error that names the
// reason.
type Backend interface {
	// Start runs req (pipeline run): the latest paused session of the
	// pipeline and spec resumed, or a new one; once it is set going, view
	// is given it, and Start returns what view returns.
	Start(ctx context.Context, req RunRequest, view RunView) error
	// Resume continues a paused or failed session (pipeline resume), and
	// gives it to view as Start does.
	Resume(ctx context.Context, req ResumeRequest, view RunView) error
	// Status is where a session stands (StatusRequest: by id, or the
	// latest of the pipeline and spec).
	Status(ctx context.Context, req StatusRequest) (*StatusResponse, error)
	// Sessions lists the sessions.
	Sessions(ctx context.Context, req SessionsRequest) (*SessionsResponse, error)
	// Pause pauses a running session, or leaves notes on a paused one.
	Pause(ctx context.Context, req PauseRequest) (*Result, error)
	// Complete marks a paused or failed session completed by hand.
	Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error)
	// WorkingSet is a session's working set (pipeline memory).
	WorkingSet(ctx context.Context, req MemoryRequest) (*WorkingSetResponse, error)
	// Remember applies a human's change to a session's working set
	// (pipeline memory pin, unpin, task add, task done).
	Remember(ctx context.Context, req RememberRequest) (*RememberResponse, error)
	// Logs passes a session's transcripts to emit; with req.Follow, then
	// what its running steps print, until it stops running.
	Logs(ctx context.Context, req LogsRequest, emit func(LogChunk) error) error
	// Follow writes to w what a session's running steps print from now
	// on, until it stops running or ctx ends.
	Follow(ctx context.Context, req FollowRequest, w io.Writer) error
	// Watch is what pipeline watch asks of the backend: nil for the
	// local stores, which the watcher reads and locks itself.
	Watch() watch.Backend
	// Close lets go of what the backend holds (a connection).
	Close()
}

// RunView is what the caller of Start and Resume shows of the session a
// backend set going, and how the caller ends: a person sees the caller's
// view, not the backend's. A backend calls one of its methods, once.
//
// It is a call back rather than an outcome returned, because the two
// sides end differently: a local session is driven in this process, and
// what the caller does once it stops (its CI reports and JUnit from the
// open session, the pause prompt that resumes it where it paused, run
// --watch) needs the session open; a fleet session runs on the workers,
// and the caller follows it until it stops.
type RunView interface {
	// Drive drives a session opened in this process (the local backend),
	// with Drive and the caller's local.View, and closes it.
	Drive(ctx context.Context, opened *Opened) error
	// Follow shows a session set going elsewhere (a fleet) until it
	// stops.
	Follow(ctx context.Context, started Started) error
}

// Started is a session a backend set going elsewhere (a fleet's), for
// its caller to follow.
type Started struct {
	ID string
	// Resumed: a paused session was resumed rather than a new one
	// started; PauseReason is why it was paused.
	Resumed     bool
	PauseReason string
	// Since is the session's human interventions before (-1 for a new
	// session): it has stopped again once a report counts more and says
	// it stopped.
	Since int
	// On is where it runs.
	On Remote
}

// Remote is where a Started session runs, as its follower asks it.
type Remote interface {
	// Report is where session id stands now.
	Report(ctx context.Context, id string) (engine.StatusReport, error)
	// Output writes to w what session id's running steps print, from now
	// on, until ctx ends.
	Output(ctx context.Context, id string, w io.Writer) error
	// AwaitEnd returns once session id's run has ended (its on: hooks
	// run), or ctx ends.
	AwaitEnd(ctx context.Context, id string) error
	// AwaitIdle returns once session id's run does nothing more for now
	// (a paused session's on: hooks run), or ctx ends.
	AwaitIdle(ctx context.Context, id string) error
	// Interrupt pauses session id as Ctrl+C pauses a local run.
	Interrupt(ctx context.Context, id string) error
	// Where names where it runs in messages; FlagsLine, on a command line
	// a message suggests.
	Where() string
	FlagsLine() string
}

// Local is the backend of the sessions kept in the store beside
// phases.yaml and run by processes of this machine.
type Local struct{}

var _ Backend = Local{}

// Start opens the session with OpenRun (with req.Plan, or the plan
// RunPlan loads) and gives it to view to drive.
func (Local) Start(ctx context.Context, req RunRequest, view RunView) error {
	plan := req.Plan
	if plan == nil {
		var err error
		if plan, err = RunPlan(req); err != nil {
			return err
		}
	}
	opened, err := OpenRun(ctx, req, plan)
	if err != nil {
		return err
	}
	return view.Drive(ctx, opened)
}

// Resume opens the session with OpenResume and gives it to view to
// drive.
func (Local) Resume(ctx context.Context, req ResumeRequest, view RunView) error {
	opened, err := OpenResume(ctx, req)
	if err != nil {
		return err
	}
	return view.Drive(ctx, opened)
}

// Status is Status.
func (Local) Status(ctx context.Context, req StatusRequest) (*StatusResponse, error) {
	return Status(ctx, req)
}

// Sessions is Sessions.
func (Local) Sessions(ctx context.Context, req SessionsRequest) (*SessionsResponse, error) {
	return Sessions(ctx, req)
}

// Pause is Pause.
func (Local) Pause(ctx context.Context, req PauseRequest) (*Result, error) { return Pause(ctx, req) }

// Complete is Complete.
func (Local) Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error) {
	return Complete(ctx, req)
}

// Logs is Logs.
func (Local) Logs(ctx context.Context, req LogsRequest, emit func(LogChunk) error) error {
	return Logs(ctx, req, emit)
}

// Follow is Follow.
func (Local) Follow(ctx context.Context, req FollowRequest, w io.Writer) error {
	return Follow(ctx, req, w)
}

// Watch is nil: the watcher reads the local stores itself.
func (Local) Watch() watch.Backend { return nil }

// WorkingSet is WorkingSet.
func (Local) WorkingSet(ctx context.Context, req MemoryRequest) (*WorkingSetResponse, error) {
	return WorkingSet(ctx, req)
}

// Remember is Remember.
func (Local) Remember(ctx context.Context, req RememberRequest) (*RememberResponse, error) {
	return Remember(ctx, req)
}

// Close does nothing: the local backend holds nothing open.
func (Local) Close() {}
