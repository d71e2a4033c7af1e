package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
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

// runMany runs one session per spec side by side (app.RunMany), at most
// --max-parallel at a time, and exits 0 when all completed, 1 when any
// failed (or could not start), 3 when any paused (or, the run stopped,
// did not start) and none failed.
func (o *runOptions) runMany(cmd *cobra.Command, specs []string) error {
	if err := o.refuseForMany(cmd, len(specs)); err != nil {
		return err
	}
	reqs := make([]app.RunRequest, len(specs))
	for i, s := range specs {
		reqs[i] = o.request(s, nil)
	}
	views := termview.NewMany(cmd.OutOrStdout(), specs, o.cf.quiet)
	outcomes := app.RunMany(cmd.Context(), reqs, views,
		app.ManyOptions{MaxParallel: o.wf.maxParallel, Grace: o.grace, Verbose: o.cf.verbose, Outcome: render.Outcome})
	views.Close()
	return manyExit(cmd, outcomes, o.cf.failOnPause)
}

// manyExit says how each session ended and what to do with the paused
// ones, and is the exit status of them all (a pause is 1 with
// --fail-on-pause, as for one session).
func manyExit(cmd *cobra.Command, outcomes []app.ManyOutcome, failOnPause bool) error {
	stderr := cmd.ErrOrStderr()
	counts := map[engine.Status]int{}
	for _, oc := range outcomes {
		counts[oc.Status]++
		id := oc.Session
		if id == "" {
			id = "(no session)"
		}
		printError(stderr, fmt.Sprintf("%s: %s %s\n", oc.Spec, id, oc.Line))
		if oc.Status == engine.StatusPaused {
			printError(stderr, fmt.Sprintf("%s: continue it with: %s\n", oc.Spec, resumeLine(cmd, oc.Session)))
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
