//go:build temporal

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	fleetapp "github.com/pipeline-dev/pipeline/app/fleet"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// The session commands on a Temporal fleet (--backend temporal): they
// call the fleet's backend (app/fleet) and show what it says; run and
// resume follow the session it set going until it stops (followFleet). See README, "Beyond one
// machine: Temporal".

// withTemporal: this build has the Temporal backend.
const withTemporal = true

// A pipeline without the Temporal backend that handed its command line
// to this one marked the environment (handedOffEnv); the steps and
// hooks this process runs must not inherit the mark, or a pipeline
// command among them would take itself for a hand-off gone round.
func init() { os.Unsetenv(handedOffEnv) }

// handOffCompanion: this build has every command, and hands none over.
func handOffCompanion([]string) (code int, done bool) { return 0, false }

// dial connects to the fleet's server.
func (fl *fleet) dial(cmd *cobra.Command) (*fleetapp.Backend, error) {
	return fleetapp.Dial(cmd.Context(), fl.target, fl.heartbeat)
}

// backend is the fleet's app.Backend.
func (fl *fleet) backend(cmd *cobra.Command) (app.Backend, error) { return fl.dial(cmd) }

// followFleet follows a session set going on the fleet until it stops.
func followFleet(ctx context.Context, cmd *cobra.Command, s app.Started, o followOptions) error {
	return (&follower{cmd: cmd, on: s.On, id: s.ID, since: s.Since, asJSON: o.json, quiet: o.quiet, failOnPause: o.failOnPause}).run(ctx)
}

// follower shows a fleet session's progress (its phase, step and attempt
// as they change, and its steps' output as the workers report it) until
// it stops, and ends as run does: 0 completed, 1 failed, 3 paused. since
// is the session's human interventions when it was resumed (-1 for a new
// session): a stop counts once the resume is taken. Ctrl+C (SIGINT,
// SIGTERM) signals pause and waits for it; a second one stops waiting.
type follower struct {
	cmd                        *cobra.Command
	on                         app.Remote
	id                         string
	since                      int
	asJSON, quiet, failOnPause bool
	out                        io.Writer
	last                       string
	failing                    time.Time
	pausing                    bool
}

func (f *follower) run(ctx context.Context) error {
	out := f.cmd.OutOrStdout()
	if f.asJSON {
		out = f.cmd.ErrOrStderr()
	}
	// The steps' output and the status lines share it.
	f.out = &syncWriter{w: out}
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
		if err == nil && fleetapp.Stopped(r) && fleetapp.Interventions(r) > f.since {
			stopOutput() // its last lines before the end's
			f.awaitHooks(ctx, r, workflowEnded)
			return f.ended(r)
		}
		wait = f.show(r, err, wait)
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-closed:
			closed = nil // asked once more now, then never ready again
		case sig := <-interrupts:
			if err := f.interrupted(ctx, sig); err != nil {
				return err
			}
		}
	}
}

// followOutput prints what the session's running steps print, as the
// workers report it, until stop (which waits for it to end) is called.
func (f *follower) followOutput(ctx context.Context) (stop func()) {
	if f.quiet {
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
			printError(f.cmd.ErrOrStderr(), fmt.Sprintf("pipeline: %v (still trying; Ctrl+C pauses the session)\n", err))
			f.failing = time.Now()
		}
		return wait
	}
	f.failing = time.Time{}
	line := fmt.Sprintf("phase %s, step %s, attempt %d: %s", r.Phase, render.OrDash(r.Step), r.Attempt, r.Status)
	if line == f.last {
		return min(wait*3/2, fleetapp.PollMax)
	}
	if !f.quiet {
		printError(f.out, time.Now().Format("15:04:05")+" "+termview.NewScreenText().Line(line)+"\n")
	}
	f.last = line
	return fleetapp.Poll
}

// interrupted pauses the session on the first signal; on the second it
// stops waiting.
func (f *follower) interrupted(ctx context.Context, sig os.Signal) error {
	if f.pausing {
		fmt.Fprintf(f.cmd.ErrOrStderr(), "pipeline: %s again: no longer waiting; session %s is pausing on the fleet (pipeline status%s %s)\n", sig, f.id, f.on.FlagsLine(), f.id)
		return &exitStatus{code: exitPaused, printed: true}
	}
	f.pausing = true
	fmt.Fprintf(f.cmd.ErrOrStderr(), "pipeline: %s: pausing session %s (its running step is stopped on its worker; again to stop waiting)\n", sig, f.id)
	return f.on.Interrupt(ctx, f.id)
}

// ended prints how the session stopped and exits as run does.
func (f *follower) ended(r engine.StatusReport) error {
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
	printError(f.out, time.Now().Format("15:04:05")+" "+termview.NewScreenText().Line(line)+"\n")
	if f.asJSON {
		if err := writeJSON(f.cmd.OutOrStdout(), liveStatus{StatusReport: r}); err != nil {
			return err
		}
	}
	switch r.Status {
	case string(engine.StatusCompleted):
		return nil
	case string(engine.StatusPaused):
		fmt.Fprintf(f.cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume%s %s\n", r.ID, f.on.FlagsLine(), r.ID)
		if f.failOnPause {
			fmt.Fprintln(f.cmd.ErrOrStderr(), "exit 1: --fail-on-pause")
			return &exitStatus{code: exitFailed, printed: true}
		}
		return &exitStatus{code: exitPaused, printed: true}
	}
	return &exitStatus{code: exitFailed, printed: true}
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
