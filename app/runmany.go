package app

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// ManyViews are the views of sessions run side by side
// (termview.Many): one per request, and the mark of its end.
type ManyViews interface {
	View(i int) local.View
	Finish(i int, status string)
}

// ManyOptions are how RunMany runs its sessions.
type ManyOptions struct {
	// MaxParallel is the most sessions running at once (0: the number
	// of cores).
	MaxParallel int
	// Grace and Verbose are each session's, as DriveOptions'.
	Grace   time.Duration
	Verbose bool
	// Outcome is the line that says how a session ended (render.Outcome).
	Outcome func(*spec.Plan, engine.State) string
}

// ManyOutcome is how the session of one request ended.
type ManyOutcome struct {
	Spec    string
	Session string // "": none was opened
	// Status is the session's; "" when it did not start (the run was
	// stopped first), failed when it could not start.
	Status engine.Status
	Line   string
}

// RunMany runs one session per request, at most o.MaxParallel at a time,
// each its own pipeline and spec (so its own lock), each run to its end
// as run runs one (RunPlan, OpenRun, Drive) with its view, and says how
// each ended. Ctrl+C, SIGTERM or a closed terminal or output pause the
// sessions running (their drivers see it) and start no more.
func RunMany(ctx context.Context, reqs []RunRequest, views ManyViews, o ManyOptions) []ManyOutcome {
	outcomes := make([]ManyOutcome, len(reqs))
	parallel := o.MaxParallel
	if parallel == 0 {
		parallel = runtime.NumCPU()
	}
	slots := make(chan struct{}, parallel)
	stopped, stopWatching := stopOnSignal()
	defer stopWatching()
	var wg sync.WaitGroup
	for i, req := range reqs {
		// Slots are taken here, in the order of the requests, so that the
		// others wait in order.
		if !takeSlot(slots, stopped) {
			outcomes[i] = ManyOutcome{Spec: req.Pipeline.Spec, Line: "not started: the run was stopped"}
			views.Finish(i, string(outcomes[i].Status))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			outcomes[i] = runOne(ctx, req, views.View(i), o)
			views.Finish(i, string(outcomes[i].Status))
		}()
	}
	wg.Wait()
	return outcomes
}

// stopOnSignal: the sessions running pause on Ctrl+C, SIGTERM, a closed
// terminal or output (their drivers see it); stopped is closed then, so
// that those waiting for a slot do not start, and the process is not
// killed by it while no driver listens.
func stopOnSignal() (stopped <-chan struct{}, stop func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done, closed := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-signals:
			close(closed)
		case <-done:
		}
	}()
	return closed, func() {
		signal.Stop(signals)
		close(done)
	}
}

// takeSlot waits for a slot to run in, false when the run was stopped
// first.
func takeSlot(slots chan struct{}, stopped <-chan struct{}) bool {
	select {
	case slots <- struct{}{}:
	case <-stopped:
		return false
	}
	select {
	case <-stopped:
		<-slots
		return false
	default:
		return true
	}
}

// runOne runs the session of one request to its end with view, whose
// remarks (Say) are the session service's too.
func runOne(ctx context.Context, req RunRequest, view local.View, o ManyOptions) ManyOutcome {
	out := ManyOutcome{Spec: req.Pipeline.Spec, Status: engine.StatusFailed}
	req.Pipeline.Say = view.Say
	plan, err := RunPlan(req)
	if err == nil {
		var opened *Opened
		if opened, err = OpenRun(ctx, req, plan); err == nil {
			return driveOne(opened, view, o, out)
		}
	}
	out.Line = "cannot start: " + err.Error()
	view.Say("%s", out.Line)
	return out
}

// driveOne runs an opened session with view and closes it.
func driveOne(opened *Opened, view local.View, o ManyOptions, out ManyOutcome) ManyOutcome {
	sess := opened.Session
	out.Session = sess.ID()
	if opened.Resumed != "" {
		view.Say("resuming session %s (%s)", sess.ID(), opened.Resumed)
	}
	view = termview.WithRedactor(view, sess.Redactor())
	state, err := Drive(context.Background(), sess, opened.Events,
		DriveOptions{View: view, Grace: o.Grace, Signals: true, Verbose: o.Verbose})
	closeErr := sess.Close()
	out.Status, out.Line = state.Status, o.Outcome(sess.Plan, state)
	if err == nil {
		err = closeErr
	}
	if err != nil {
		out.Status, out.Line = engine.StatusFailed, "failed: "+err.Error()
		view.Say("%s", out.Line)
	}
	return out
}
