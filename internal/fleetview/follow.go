//go:build temporal

// Package fleetview shows a session that runs on a Temporal fleet until
// it stops, as run's live view shows a local one: its phase, step and
// attempt as they change, its steps' output as the workers report it,
// and the line it stopped with. Ctrl+C pauses it. pipeline run and
// resume --backend temporal follow their session with it.
package fleetview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	fleetapp "github.com/pipeline-dev/pipeline/app/fleet"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// Options are how a session is followed.
type Options struct {
	// Out gets the status lines and the steps' output; Err, the messages
	// (a query that keeps failing, Ctrl+C).
	Out, Err io.Writer
	// Quiet shows no status line and no output, only the end.
	Quiet bool
	// Since is the session's human interventions when it was resumed (-1
	// for a new session): a stop counts once the resume is taken.
	Since int
	// Say writes text made safe for a terminal (redacted, escapes
	// removed).
	Say func(w io.Writer, text string)
}

// ErrStoppedWaiting is Follow's error after a second Ctrl+C: the session
// is pausing on the fleet, and no longer waited for.
var ErrStoppedWaiting = errors.New("no longer waiting for the session to pause")

// Follow follows session id on the fleet on until it stops, and returns
// where it stopped (its last line printed).
func Follow(ctx context.Context, on app.Remote, id string, o Options) (engine.StatusReport, error) {
	return (&follower{Options: o, on: on, id: id}).run(ctx)
}

// follower shows a fleet session's progress (its phase, step and attempt
// as they change, and its steps' output as the workers report it) until
// it stops, and ends as run does: 0 completed, 1 failed, 3 paused. since
// is the session's human interventions when it was resumed (-1 for a new
// session): a stop counts once the resume is taken. Ctrl+C (SIGINT,
// SIGTERM) signals pause and waits for it; a second one stops waiting.
type follower struct {
	Options
	on      app.Remote
	id      string
	out     io.Writer
	last    string
	failing time.Time
	pausing bool
}

func (f *follower) run(ctx context.Context) (engine.StatusReport, error) {
	// The steps' output and the status lines share it.
	f.out = &syncWriter{w: f.Out}
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	closed := f.awaitClose(ctx)
	workflowEnded := closed
	stopOutput := f.followOutput(ctx)
	defer stopOutput()
	wait := fleetapp.Poll
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		r, err := f.on.Report(ctx, f.id)
		if err == nil && fleetapp.Stopped(r) && fleetapp.Interventions(r) > f.Since {
			stopOutput() // its last lines before the end's
			f.awaitHooks(ctx, r, workflowEnded)
			f.ended(r)
			return r, nil
		}
		wait = f.show(r, err, wait)
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-closed:
			closed = nil // asked once more now, then never ready again
		case sig := <-interrupts:
			if err := f.interrupted(ctx, sig); err != nil {
				return r, err
			}
		}
	}
}

// followOutput prints what the session's running steps print, as the
// workers report it, until stop (which waits for it to end) is called.
func (f *follower) followOutput(ctx context.Context) (stop func()) {
	if f.Quiet {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.on.Output(ctx, f.id, f.out)
	}()
	return func() {
		cancel()
		<-done
	}
}

// awaitClose is closed when the workflow closes, long-polled from the
// server (no worker asked).
func (f *follower) awaitClose(ctx context.Context) <-chan struct{} {
	closed := make(chan struct{})
	go func() {
		// Failed or completed: the status says which.
		if _ = f.on.AwaitEnd(ctx, f.id); ctx.Err() == nil {
			close(closed)
		}
	}()
	return closed
}

// hookWait bounds the wait for a fleet session's on: hooks and
// notifications, which a worker runs as the workflow ends.
const hookWait = 2 * time.Minute

// awaitHooks waits for the on: hooks (and notifications) of a session
// that stopped, which a worker runs as it stops, as a local run waits for
// its own: a session that completed or failed until its workflow ends,
// a paused one until its workflow runs nothing more.
func (f *follower) awaitHooks(ctx context.Context, r engine.StatusReport, workflowEnded <-chan struct{}) {
	if r.Status == string(engine.StatusPaused) {
		ctx, cancel := context.WithTimeout(ctx, hookWait)
		defer cancel()
		_ = f.on.AwaitIdle(ctx, f.id)
		return
	}
	select {
	case <-workflowEnded:
	case <-time.After(hookWait):
	}
}

// show prints where the session stands when it changed, and says how
// long to wait before asking again.
func (f *follower) show(r engine.StatusReport, err error, wait time.Duration) time.Duration {
	if err != nil {
		// A worker may be starting, or busy: the query is asked again;
		// after a while, the error is shown.
		if f.failing.IsZero() {
			f.failing = time.Now()
		} else if time.Since(f.failing) > 10*time.Second {
			f.Say(f.Err, fmt.Sprintf("pipeline: %v (still trying; Ctrl+C pauses the session)\n", err))
			f.failing = time.Now()
		}
		return wait
	}
	f.failing = time.Time{}
	line := fmt.Sprintf("phase %s, step %s, attempt %d: %s", r.Phase, render.OrDash(r.Step), r.Attempt, r.Status)
	if line == f.last {
		return min(wait*3/2, fleetapp.PollMax)
	}
	if !f.Quiet {
		f.Say(f.out, time.Now().Format("15:04:05")+" "+termview.NewScreenText().Line(line)+"\n")
	}
	f.last = line
	return fleetapp.Poll
}

// interrupted pauses the session on the first signal; on the second it
// stops waiting.
func (f *follower) interrupted(ctx context.Context, sig os.Signal) error {
	if f.pausing {
		fmt.Fprintf(f.Err, "pipeline: %s again: no longer waiting; session %s is pausing on the fleet (pipeline status%s %s)\n", sig, f.id, f.on.FlagsLine(), f.id)
		return ErrStoppedWaiting
	}
	f.pausing = true
	fmt.Fprintf(f.Err, "pipeline: %s: pausing session %s (its running step is stopped on its worker; again to stop waiting)\n", sig, f.id)
	return f.on.Interrupt(ctx, f.id)
}

// ended prints how the session stopped.
func (f *follower) ended(r engine.StatusReport) {
	var line string
	switch r.Status {
	case string(engine.StatusPaused):
		line = "paused: " + r.PauseReason
		if r.PauseNote != "" {
			line += " — " + r.PauseNote
		}
	case string(engine.StatusCompleted):
		line = r.CompletedLine()
	default:
		line = "failed: " + r.FailReason
	}
	f.Say(f.out, time.Now().Format("15:04:05")+" "+termview.NewScreenText().Line(line)+"\n")
}

// syncWriter lets goroutines write whole writes to one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
