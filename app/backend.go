package app

import (
	"context"
	"io"

	"github.com/pipeline-dev/pipeline/engine/watch"
)

// Backend is where sessions run: this machine (Local), or a Temporal
// fleet (app/fleet, in the build with the Temporal backend only, so that
// the local binary links nothing of the Temporal SDK). The session
// commands act on a session through the Backend the command line chose;
// what a backend cannot do it refuses with a usage error that names the
// reason.
//
// Starting and resuming are not here yet: the local backend runs the
// session in this process (OpenRun, OpenResume, then Drive with the live
// view), the fleet starts its workflow and follows it (fleet.Backend's
// Start, Resume and the follow of the workflow).
type Backend interface {
	// Status is where a session stands (StatusRequest: by id, or the
	// latest of the pipeline and spec).
	Status(ctx context.Context, req StatusRequest) (*StatusResponse, error)
	// Sessions lists the sessions.
	Sessions(ctx context.Context, req SessionsRequest) (*SessionsResponse, error)
	// Pause pauses a running session, or leaves notes on a paused one.
	Pause(ctx context.Context, req PauseRequest) (*Result, error)
	// Complete marks a paused or failed session completed by hand.
	Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error)
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

// Local is the backend of the sessions kept in the store beside
// phases.yaml and run by processes of this machine.
type Local struct{}

var _ Backend = Local{}

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

// Close does nothing: the local backend holds nothing open.
func (Local) Close() {}
