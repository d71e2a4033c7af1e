package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
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

// expandSpecs is the specs the --spec flags name, each glob expanded (in
// order, each once). A glob that matches nothing is a usage error.
func expandSpecs(given []string) ([]string, error) {
	var specs []string
	seen := map[string]bool{}
	for _, g := range given {
		matches := []string{g}
		if strings.ContainsAny(g, "*?[") {
			var err error
			if matches, err = filepath.Glob(g); err != nil {
				return nil, usagef("--spec %q is not a valid glob: %v", g, err)
			}
			if len(matches) == 0 {
				return nil, usagef("--spec %q matches no file: give a spec file, or a glob such as 'specs/*/README.md' that matches some", g)
			}
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				specs = append(specs, m)
			}
		}
	}
	return specs, nil
}

// withStatus keeps the specs whose frontmatter status is status (all
// when it is ""). A spec whose frontmatter cannot be read is kept: its
// run reports why it cannot start.
func withStatus(specs []string, status string) []string {
	if status == "" {
		return specs
	}
	var kept []string
	for _, s := range specs {
		fm, err := spec.LoadSpec(s)
		if err != nil || fmt.Sprint(fm.Values["status"]) == status {
			kept = append(kept, s)
		}
	}
	return kept
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
	views := newManyViews(cmd, specs, o.cf.quiet)
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
			views.finish(i, outcomes[i])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			outcomes[i] = o.runOne(cmd, s, views.view(i))
			views.finish(i, outcomes[i])
		}()
	}
	wg.Wait()
	stopWatching()
	views.close()
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
	out.status, out.line = state.Status, outcome(sess.Plan, state)
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

// manyViews are the views of the sessions run runs side by side: a
// table on a terminal, and elsewhere plain lines, each prefixed with its
// spec (as pipeline watch prefixes its sessions' lines).
type manyViews struct {
	table *termview.Table
	rows  []*termview.TableRow
	plain []local.View
	quiet bool
}

func newManyViews(cmd *cobra.Command, specs []string, quiet bool) *manyViews {
	v := &manyViews{quiet: quiet}
	out := cmd.OutOrStdout()
	if f, ok := out.(*os.File); ok && !v.quiet && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		v.table = termview.NewTable(f, width, time.Now)
		for _, s := range specs {
			v.rows = append(v.rows, v.table.Row(s))
		}
		v.table.Draw()
		return v
	}
	to := &termview.LockedWriter{W: out}
	for _, s := range specs {
		var view local.View = local.Discard
		if !v.quiet {
			view = termview.NewQueued(termview.NewPlain(&termview.PrefixWriter{To: to, Prefix: "[" + s + "] "}, time.Now))
		}
		v.plain = append(v.plain, view)
	}
	return v
}

func (v *manyViews) view(i int) local.View {
	if v.table != nil {
		return v.rows[i]
	}
	return v.plain[i]
}

// finish shows how session i ended.
func (v *manyViews) finish(i int, oc manyOutcome) {
	if v.table != nil {
		status := string(oc.status)
		if status == "" {
			status = "not started"
		}
		v.rows[i].Finish(status)
		return
	}
	v.plain[i].Close()
}

func (v *manyViews) close() {
	if v.table != nil {
		v.table.Draw()
	}
}
