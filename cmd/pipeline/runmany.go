package main

import (
	"context"
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// specList is run's --spec: given once it is the one spec as before;
// given several times, or as a glob, it names the specs run runs side
// by side. Its String is the last one given, as the single-spec code
// (and completion) read the flag.
type specList struct {
	last   *string
	values []string
}

func (s *specList) String() string { return *s.last }
func (s *specList) Type() string   { return "string" }
func (s *specList) Set(v string) error {
	s.values = append(s.values, v)
	*s.last = v
	return nil
}

// refuseForMany refuses what run takes for one session but not for
// several: the fleet, a session name, --watch, --junit and JSON output.
func (o *runOptions) refuseForMany(cmd *cobra.Command, count int) error {
	fl, err := o.bf.resolve(o.flags.file, nil)
	if err != nil {
		return err
	}
	if fl != nil {
		return usagef("%d specs at once run here, with the local backend: the temporal backend takes one spec per run (run each --spec on its own)", count)
	}
	for _, name := range []string{"name", "watch", "junit", "output"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usagef("--%s takes one spec; %d specs were given", name, count)
		}
	}
	return nil
}

// manyOutcome is how one spec's session ended.
type manyOutcome struct {
	spec    string
	session string
	status  engine.Status
	line    string
}

// runMany runs one session per spec, at most --max-parallel at a time,
// each its own pipeline and spec (so its own lock), and exits 0 when all
// completed, 1 when any failed (or could not start), 3 when any paused
// (or, the run stopped, did not start) and none failed.
func (o *runOptions) runMany(cmd *cobra.Command, specs []string) error {
	if err := o.refuseForMany(cmd, len(specs)); err != nil {
		return err
	}
	views := termview.NewMany(cmd.OutOrStdout(), specs, o.cf.quiet)
	outcomes := make([]manyOutcome, len(specs))
	parallel := o.wf.maxParallel
	if parallel == 0 {
		parallel = runtime.NumCPU()
	}
	slots := make(chan struct{}, parallel)
	stopped, stopWatching := stopOnSignal()
	var wg sync.WaitGroup
	for i, s := range specs {
		// Slots are taken here, in the order of the specs, so that the
		// others wait in order.
		if !takeSlot(slots, stopped) {
			outcomes[i] = manyOutcome{spec: s, line: "not started: the run was stopped"}
			views.Finish(i, string(outcomes[i].status))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			outcomes[i] = o.runOne(cmd, s, views.View(i))
			views.Finish(i, string(outcomes[i].status))
		}()
	}
	wg.Wait()
	stopWatching()
	views.Close()
	return manyExit(cmd, outcomes, o.cf.failOnPause)
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

// runOne runs the session of one spec to its end, as run does for one
// (app.RunPlan, app.OpenRun, app.Drive), with view.
func (o *runOptions) runOne(cmd *cobra.Command, specPath string, view local.View) manyOutcome {
	out := manyOutcome{spec: specPath, status: engine.StatusFailed}
	req := o.request(specPath, func(format string, args ...any) { view.Say(format, args...) })
	plan, err := app.RunPlan(req)
	if err == nil {
		var opened *app.Opened
		if opened, err = app.OpenRun(cmd.Context(), req, plan); err == nil {
			return o.drive(opened, view, out)
		}
	}
	out.line = "cannot start: " + err.Error()
	view.Say("%s", out.line)
	return out
}

// drive runs an opened session with view and closes it.
func (o *runOptions) drive(opened *app.Opened, view local.View, out manyOutcome) manyOutcome {
	sess := opened.Session
	out.session = sess.ID()
	if opened.Resumed != "" {
		view.Say("resuming session %s (%s)", sess.ID(), opened.Resumed)
	}
	view = termview.WithRedactor(view, sess.Redactor())
	state, err := app.Drive(context.Background(), sess, opened.Events,
		app.DriveOptions{View: view, Grace: o.grace, Signals: true, Verbose: o.cf.verbose})
	closeErr := sess.Close()
	out.status, out.line = state.Status, render.Outcome(sess.Plan, state)
	if err == nil {
		err = closeErr
	}
	if err != nil {
		out.status, out.line = engine.StatusFailed, "failed: "+err.Error()
		view.Say("%s", out.line)
	}
	return out
}

// manyExit says how each session ended and what to do with the paused
// ones, and is the exit status of them all (a pause is 1 with
// --fail-on-pause, as for one session).
func manyExit(cmd *cobra.Command, outcomes []manyOutcome, failOnPause bool) error {
	stderr := cmd.ErrOrStderr()
	counts := map[engine.Status]int{}
	for _, oc := range outcomes {
		counts[oc.status]++
		id := oc.session
		if id == "" {
			id = "(no session)"
		}
		printError(stderr, fmt.Sprintf("%s: %s %s\n", oc.spec, id, oc.line))
		if oc.status == engine.StatusPaused {
			printError(stderr, fmt.Sprintf("%s: continue it with: %s\n", oc.spec, resumeLine(cmd, oc.session)))
		}
	}
	completed, paused, notStarted := counts[engine.StatusCompleted], counts[engine.StatusPaused], counts[""]
	failed := len(outcomes) - completed - paused - notStarted
	summary := fmt.Sprintf("%d specs: %d completed, %d paused, %d failed", len(outcomes), completed, paused, failed)
	if notStarted > 0 {
		summary += fmt.Sprintf(", %d not started", notStarted)
	}
	printError(stderr, summary+"\n")
	switch {
	case failed > 0:
		return &exitStatus{code: exitFailed, printed: true}
	case failOnPause && completed < len(outcomes):
		printError(stderr, "exit 1: --fail-on-pause\n")
		return &exitStatus{code: exitFailed, printed: true}
	case completed < len(outcomes):
		return &exitStatus{code: exitPaused, printed: true}
	}
	return nil
}
