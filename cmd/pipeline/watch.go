package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/watch"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// watchFlags are the flags of pipeline watch, shared with run --watch.
type watchFlags struct {
	debounce    time.Duration
	maxParallel int
	reasons     []string
}

func addWatchFlags(cmd *cobra.Command) *watchFlags {
	f := &watchFlags{}
	cmd.Flags().DurationVar(&f.debounce, "debounce", 0, "how long a burst of changes must be quiet before it counts (default: watch_debounce of phases.yaml, else 200ms)")
	cmd.Flags().IntVar(&f.maxParallel, "max-parallel", 0, "most sessions running at once; the others wait in order (default: the number of cores)")
	cmd.Flags().StringSliceVar(&f.reasons, "reasons", nil, "resume only sessions paused for these reasons (comma-separated: checkpoint,phase-complete,…)")
	return f
}

func (f *watchFlags) options(cmd *cobra.Command) (watch.Options, error) {
	var o watch.Options
	if cmd.Flags().Changed("debounce") {
		if f.debounce < 0 {
			return o, usagef("--debounce %s is negative: give how long changes must be quiet, 0 to act on each at once", f.debounce)
		}
		o.Debounce = &f.debounce
	}
	if f.maxParallel < 0 {
		return o, usagef("--max-parallel %d is negative: give how many sessions may run at once", f.maxParallel)
	}
	o.MaxParallel = f.maxParallel
	for _, r := range f.reasons {
		if r = strings.TrimSpace(r); r != "" {
			o.Reasons = append(o.Reasons, r)
		}
	}
	return o, nil
}

// watchCmdOptions are watch's flags.
type watchCmdOptions struct {
	flags  *storeFlags
	wf     *watchFlags
	output *outputFlag
	grace  time.Duration
	bf     *backendFlags
}

func watchCommand() *cobra.Command {
	o := &watchCmdOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "watch [FILE...]",
		Short:   "Resume paused sessions by themselves when their spec changes",
		Long:    helpText("watch"),
		Example: helpText("watch.example"),
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.wf = addWatchFlags(cmd)
	o.output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *watchCmdOptions) run(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		args = []string{o.flags.file}
	}
	wo, err := o.wf.options(cmd)
	if err != nil {
		return err
	}
	if o.grace < 0 {
		return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", o.grace)
	}
	if err := o.output.check(); err != nil {
		return err
	}
	be, fl, err := o.bf.backend(cmd, args[0])
	if err != nil {
		return err
	}
	defer be.Close()
	if fl != nil {
		if err := refuseOnFleet(cmd, "state-dir"); err != nil {
			return err
		}
	}
	if wo.Backend = be.Watch(); wo.Backend != nil {
		if wo.Pipelines, err = app.WatchedFiles(args); err != nil {
			return err
		}
		return runWatch(cmd, wo, o.output.json())
	}
	if wo.Pipelines, err = app.WatchedPipelines(args, o.flags.stateDir); err != nil {
		return err
	}
	wo.Grace = o.grace
	return runWatch(cmd, wo, o.output.json())
}

// runWatch runs the watch driver with the command's output: event lines
// (or JSON) on standard output, the sessions' runs as prefixed lines.
// Interrupted, it exits 3: what ran is paused.
func runWatch(cmd *cobra.Command, o watch.Options, asJSON bool) error {
	out := &termview.LockedWriter{W: cmd.OutOrStdout()}
	runsTo := cmd.OutOrStdout()
	if asJSON {
		runsTo = cmd.ErrOrStderr()
	}
	runs := out
	if asJSON {
		runs = &termview.LockedWriter{W: runsTo}
	}
	text := termview.NewScreenText()
	table := !asJSON && termsafe.IsTerminal(cmd.OutOrStdout())
	o.Report = func(e watch.Event) {
		if asJSON {
			e.Reason = app.Redactor().String(e.Reason)
			out.Do(func(w io.Writer) { render.JSONLine(w, e) })
			return
		}
		// A reason of several lines (an invalid phases.yaml's caret
		// blocks, as validate shows them) follows its event's line,
		// indented.
		head, rest, _ := strings.Cut(render.WatchEvent(e), "\n")
		line := text.Line(head)
		if rest != "" {
			line += "\n" + render.Indent(strings.TrimRight(text.Text(rest), "\n"), "  ")
		}
		out.Do(func(w io.Writer) { fmt.Fprintf(w, "%s %s\n", e.Time.Local().Format("15:04:05.000"), line) })
	}
	if table {
		o.Sessions = func(list []watch.Watched) {
			out.Do(func(w io.Writer) { render.WatchTable(w, list, text) })
		}
	}
	o.View = func(id string, r *redact.Redactor) local.View {
		return termview.WithRedactor(termview.NewQueued(termview.NewPlain(&termview.PrefixWriter{To: runs, Prefix: "[" + render.ShortID(id) + "] "}, time.Now)), r)
	}
	o.Clock = clock.Real{}
	o.Signals = true
	err := watch.Run(context.Background(), o)
	if errors.Is(err, watch.ErrInterrupted) && o.Backend != nil {
		printError(cmd.ErrOrStderr(), "pipeline watch: stopped; the sessions on the fleet go on as they were\n")
		return nil
	}
	if errors.Is(err, watch.ErrInterrupted) {
		var interrupted *watch.InterruptedError
		errors.As(err, &interrupted)
		printError(cmd.ErrOrStderr(), "pipeline watch: stopped; "+render.WatchStopped(interrupted)+"\n")
		return &exitStatus{code: exitPaused, printed: true}
	}
	return err
}

// watchAfterRun is run --watch once its session paused: the session is
// watched until it completes or fails, and the exit status is its.
func watchAfterRun(cmd *cobra.Command, wf *watchFlags, st *store.Store, file, key string, grace time.Duration, asJSON bool) error {
	o, err := wf.options(cmd)
	if err != nil {
		return err
	}
	o.Pipelines = []watch.Pipeline{{File: file, Store: st}}
	o.Keys = []string{key}
	o.Grace = grace
	var final engine.Status
	o.Ended = func(_ string, s engine.State) bool {
		final = s.Status
		return s.Status == engine.StatusCompleted || s.Status == engine.StatusFailed
	}
	err = runWatch(cmd, o, asJSON)
	var refused *session.RefusedError
	if errors.As(err, &refused) {
		// Another watcher has the folder: it resumes this session.
		printError(cmd.ErrOrStderr(), fmt.Sprintf("%v\nthe session stays paused; that watcher resumes it when its spec changes\n", err))
		return &exitStatus{code: exitPaused, printed: true}
	}
	if err != nil {
		return err
	}
	if final == engine.StatusFailed {
		return &exitStatus{code: exitFailed, printed: true}
	}
	return nil
}
