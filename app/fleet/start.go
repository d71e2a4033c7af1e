//go:build temporal

package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// Start starts a session's workflow, or resumes the paused session of
// the pipeline and spec, and gives it to view to follow. A running
// session of them is refused, and so is a second run in the same moment:
// see temporal.TakeRunLease. req.New starts another session even when
// one is paused; it is not a duplicate, and takes no run lease.
func (b *Backend) Start(ctx context.Context, req app.RunRequest, view app.RunView) error {
	if req.Name != "" || req.NoHumanGates {
		return app.Usagef("the temporal backend does not name its sessions, nor turn their human gates off (run --name, --no-human-gates): see README, \"Beyond one machine: Temporal\"")
	}
	st, err := b.start(ctx, req)
	if err != nil {
		return err
	}
	return view.Follow(ctx, *st)
}

func (b *Backend) start(ctx context.Context, req app.RunRequest) (*app.Started, error) {
	src, key, err := Plan(req.Pipeline)
	if err != nil {
		return nil, err
	}
	live, err := busyRetry(ctx, func() ([]temporal.Summary, error) { return b.Client.Live(ctx, key) })
	if err != nil {
		return nil, fmt.Errorf("the open sessions of %s on the Temporal fleet (%s) cannot be listed: %w", req.File, b.Where(), err)
	}
	for _, s := range live {
		if st, err := b.takeOver(ctx, req, &src, s.ID); st != nil || err != nil {
			return st, err
		}
	}
	id := session.NewSessionID(time.Now())
	if req.New {
		return b.startNew(ctx, req, src, key, id)
	}
	lease, st, err := b.lease(ctx, req, &src, key, id)
	if st != nil || err != nil {
		return st, err
	}
	st, err = b.startNew(ctx, req, src, key, id)
	if err != nil {
		// Not held for a session that does not exist.
		_ = b.Client.ReleaseRunLease(context.WithoutCancel(ctx), key, lease)
	}
	return st, err
}

// busyWait bounds how long a run waits for a busy server to answer the
// list of open sessions: a hundred runs started at once on a dev server
// have seen it take over the client's ten seconds.
const busyWait = 2 * time.Minute

// busyRetry calls call again while the server is only busy (its answer
// past the client's deadline, unavailable, exhausted), for up to
// busyWait, a second more between tries each time.
func busyRetry[T any](ctx context.Context, call func() (T, error)) (T, error) {
	deadline := time.Now().Add(busyWait)
	for wait := time.Second; ; wait += time.Second {
		v, err := call()
		if err == nil || !busy(ctx, err) || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
	}
}

// busy tells whether err is the server too busy to answer in time, and
// not ctx ending: a call cut at the client's deadline mid-answer ends
// as cancelled.
func busy(ctx context.Context, err error) bool {
	var canceled *serviceerror.Canceled
	return ctx.Err() == nil && (temporal.Transient(err) || errors.As(err, &canceled))
}

// takeRunLease takes the run lease of key for session id, asking a busy
// server again; a lease held for id itself is this run's (a try the
// server was slow to answer took it).
func (b *Backend) takeRunLease(ctx context.Context, key, id string) (taken, held *temporal.RunLease, err error) {
	_, err = busyRetry(ctx, func() (struct{}, error) {
		taken, held, err = b.Client.TakeRunLease(ctx, key, id)
		return struct{}{}, err
	})
	if held != nil && held.Session == id {
		return held, nil, err
	}
	return taken, held, err
}

// takeOver is what a run does about the open session id of its pipeline
// and spec: refuse if it runs, resume it if it is paused (unless a new
// session was asked for); nil, nil: neither, start a new one.
func (b *Backend) takeOver(ctx context.Context, req app.RunRequest, src *temporal.PlanSource, id string) (*app.Started, error) {
	r, err := b.Client.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Status == string(engine.StatusRunning):
		return nil, refused("session %s of %s is running on the Temporal fleet (%s); pause it with: pipeline pause%s %s",
			id, req.File, b.Where(), b.FlagsLine(), id)
	case r.Status == string(engine.StatusPaused) && !req.New && req.From == "" && req.Only == "":
		if err := b.signalResume(ctx, id, "", "", src, false); err != nil {
			return nil, err
		}
		return &app.Started{ID: id, Resumed: true, PauseReason: r.PauseReason, Since: Interventions(r), On: b}, nil
	}
	return nil, nil
}

// lease takes the run lease of key for id. Held by a session that is
// starting or running, the run is refused; by one that is paused, it is
// taken over as a listed one would be; by one that stopped, the lease is
// ended and taken again (once: a run that took it meanwhile wins).
func (b *Backend) lease(ctx context.Context, req app.RunRequest, src *temporal.PlanSource, key, id string) (*temporal.RunLease, *app.Started, error) {
	for tries := 0; ; tries++ {
		taken, held, err := b.takeRunLease(ctx, key, id)
		if err != nil {
			return nil, nil, fmt.Errorf("the run lease of %s on the Temporal fleet (%s) cannot be taken: %w", req.File, b.Where(), err)
		}
		if taken != nil {
			return taken, nil, nil
		}
		r, err := b.Client.Status(ctx, held.Session)
		if err != nil || (tries == 1 && !Stopped(r)) || r.Status == string(engine.StatusRunning) {
			return nil, nil, refused("session %s of %s was started on the Temporal fleet (%s) a moment ago by another run, and is starting or running: one run of a pipeline and spec at a time; see it with: pipeline status%s %s",
				held.Session, req.File, b.Where(), b.FlagsLine(), held.Session)
		}
		if st, err := b.takeOver(ctx, req, src, held.Session); st != nil || err != nil {
			return nil, st, err
		}
		if tries == 1 {
			return nil, nil, refused("the run lease of %s on the Temporal fleet (%s) is held by another run; try again", req.File, b.Where())
		}
		if err := b.Client.ReleaseRunLease(ctx, key, held); err != nil {
			return nil, nil, err
		}
	}
}

// startNew starts the workflow of new session id, having marked its copy
// in the local store as a fleet session.
func (b *Backend) startNew(ctx context.Context, req app.RunRequest, src temporal.PlanSource, key, id string) (*app.Started, error) {
	plan, err := src.Load()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	unmark, err := b.markLocal(req.Pipeline, src, plan.Name.Value, id, now)
	if err != nil {
		return nil, err
	}
	in := temporal.SessionInput{SessionID: id, Plan: src,
		Events:  []temporal.EventRecord{temporal.MustRecord(engine.Started{At: now.UTC(), Plan: plan.Digest, From: req.From + req.Only, Only: req.Only != ""})},
		Options: temporal.Options{HeartbeatTimeout: b.Heartbeat}, Changes: temporal.SessionChanges}
	memo := temporal.Memo{Pipeline: plan.Name.Value, File: src.File, Spec: src.Spec, Key: key}
	tries := 0
	_, err = busyRetry(ctx, func() (struct{}, error) {
		tries++
		err := b.Client.Start(ctx, in, memo)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if tries > 1 && errors.As(err, &started) {
			err = nil // the id is this run's own: the try the server was slow to answer started it
		}
		return struct{}{}, err
	})
	if err != nil {
		unmark()
		return nil, fmt.Errorf("session %s cannot start on the Temporal fleet (%s): %w", id, b.Where(), err)
	}
	return &app.Started{ID: id, Since: -1, On: b}, nil
}

// markLocal makes the session's copy in the local store, marked as a
// fleet session with where it runs, so that the local commands know it
// for one (status and sessions say where it runs; resume, pause, rewind
// and complete refuse, naming the command to use). A worker on this
// machine writes its steps' transcripts into that copy. undo removes it.
func (b *Backend) markLocal(p app.Pipeline, src temporal.PlanSource, name, id string, now time.Time) (undo func(), err error) {
	p.File = src.File
	st, err := p.Open()
	if err != nil {
		return nil, err
	}
	t := b.Client.Target
	x, err := st.Create(store.Meta{ID: id, Pipeline: name, File: src.File, Spec: src.Spec, Key: store.FleetKey(id), Created: now,
		Fleet: &store.Fleet{Address: t.Address, Namespace: t.Namespace, TaskQueue: t.TaskQueue}})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("session %s: its copy in %s: %w", id, st.Root, err)
	}
	x.Close()
	st.Close()
	return func() {
		if st, err := p.Open(); err == nil {
			_ = st.Remove(id)
			st.Close()
		}
	}, nil
}

// signalResume signals a paused session to resume; with src, when its
// plan differs from the session's (always: whenever it is given), the
// session goes on with it, once it is checked against the session.
func (b *Backend) signalResume(ctx context.Context, id, notes, phase string, src *temporal.PlanSource, always bool) error {
	sig := temporal.ResumeSignal{Notes: notes, Phase: phase}
	if src != nil {
		v, err := b.Client.C.QueryWorkflow(ctx, id, "", temporal.QueryState)
		if err != nil {
			return err
		}
		var s engine.State
		if err := v.Get(&s); err != nil {
			return err
		}
		if always || s.PlanDigest != src.Digest {
			plan, err := src.Load()
			if err != nil {
				return err
			}
			if err := session.CheckPlan(plan, s, id); err != nil {
				return &session.RefusedError{Message: err.Error()}
			}
			sig.Plan = src
		}
	}
	return b.Client.Resume(ctx, id, sig)
}

// The follow of a session a run or resume set going: app.Remote.
var _ app.Remote = (*Backend)(nil)

// Report is where session id stands, for its follower, who asks again
// and again: while the session runs, its headline as the history the
// server pushes says it (status, phase, step, attempt), with no worker
// asked; once it stopped, the whole report as its workflow answers
// (temporal.Client.Progress).
func (b *Backend) Report(ctx context.Context, id string) (engine.StatusReport, error) {
	b.Client.Watch(id)
	return b.Client.Progress(ctx, id)
}

// Output writes to w what session id's running steps print from now on,
// as their workers report it, until ctx ends.
func (b *Backend) Output(ctx context.Context, id string, w io.Writer) error {
	b.Client.Watch(id) // one read of the history for Report, Output and AwaitEnd
	return b.Client.FollowOutput(ctx, id, w)
}

// AwaitEnd returns once session id's workflow has closed (failed or
// completed, its on: hooks run on a worker), long-polled from the server
// with no worker asked, or ctx ends.
func (b *Backend) AwaitEnd(ctx context.Context, id string) error {
	b.Client.Watch(id)
	return b.Client.AwaitEnd(ctx, id)
}

// AwaitIdle returns once session id's workflow runs no activity (a
// paused session's on: hooks and notifications, which a worker runs as
// it pauses, are done), asked of the server every Poll, or ctx ends.
func (b *Backend) AwaitIdle(ctx context.Context, id string) error {
	for {
		desc, err := b.Client.C.DescribeWorkflow(ctx, id, "")
		if err != nil || len(desc.RawResponse.GetPendingActivities()) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Poll):
		}
	}
}

// Interrupt signals session id to pause as Ctrl+C pauses a local run:
// its running step is stopped on its worker.
func (b *Backend) Interrupt(ctx context.Context, id string) error {
	return b.Client.Pause(ctx, id, "", engine.ReasonInterrupted)
}
