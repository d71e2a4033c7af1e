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
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/cireport"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// runOptions are run's flags.
type runOptions struct {
	flags  *storeFlags
	output *outputFlag
	grace  time.Duration
	fresh  bool
	name   string
	keepOn bool
	wf     *watchFlags
	cf     *ciFlags
	from   string
	only   string
	bf     *backendFlags
	// specs are the --spec flags as given; status picks among several
	// (see runmany.go), which run at most --max-parallel (of wf) at once.
	specs  *specList
	status string
}

func runCommand() *cobra.Command {
	o := &runOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "run [FILE]",
		Short:   "Run the phases of a pipeline (resuming its paused session, if any)",
		Long:    helpText("run"),
		Example: helpText("run.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cmd.Flags().BoolVar(&o.fresh, "new", false, "start a new session even when the latest one is paused")
	cmd.Flags().StringVar(&o.name, "name", "", "name the session: every command then takes NAME in place of its id; run --name NAME again continues it")
	cmd.Flags().StringVar(&o.from, "from", "", "start a new session at this phase; the phases before it are skipped")
	cmd.Flags().StringVar(&o.only, "only", "", "start a new session that runs this phase alone")
	cmd.Flags().BoolVar(&o.keepOn, "watch", false, "once the session pauses, keep watching: a change to its spec or phases.yaml resumes it (see pipeline watch)")
	o.wf = addWatchFlags(cmd)
	o.cf = addCIFlags(cmd)
	o.bf = addBackendFlags(cmd)
	o.specs = &specList{last: &o.flags.spec}
	specFlag := cmd.Flags().Lookup("spec")
	specFlag.Value = o.specs
	specFlag.Usage = "spec file whose frontmatter overrides phases.yaml (default: the spec phases.yaml names); a glob, or the flag given again, runs one session per spec side by side"
	cmd.Flags().StringVar(&o.status, "status", "", "with a glob or several specs, run only the specs whose frontmatter status is this (planned, for one)")
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	if !o.endsWithRun(cmd) {
		// main caught the signals ahead (runsAndEndsHere): --watch and
		// the prompt at a pause take them as they always have.
		local.LetSignalsAheadGo()
	}
	if err := o.bf.handOffChosenFleet(); err != nil {
		return err
	}
	if o.grace < 0 {
		return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", o.grace)
	}
	if len(args) == 1 {
		if cmd.Flags().Changed("file") {
			return usagef("the pipeline is given twice, as %s and as --file %s: give one", args[0], o.flags.file)
		}
		o.flags.file = args[0]
	}
	if o.keepOn {
		if err := o.cf.refuseWithWatch(); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("max-parallel") && o.wf.maxParallel < 1 {
		return usagef("--max-parallel %d: give how many sessions may run at once, 1 or more", o.wf.maxParallel)
	}
	if many, err := o.manySpecs(cmd); err != nil || many {
		return err
	}
	req := o.request(o.flags.spec, sayTo(cmd))
	plan, err := app.RunPlan(req)
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), plan.Warnings)
	fl, err := o.bf.resolve(o.flags.file, plan)
	if err != nil {
		return err
	}
	if fl != nil {
		// Followed on a fleet: Ctrl+C ends the following, as before.
		local.LetSignalsAheadGo()
	}
	if err := o.output.check(); err != nil {
		return err
	}
	be, err := fl.chosen(cmd, "watch", "junit", "no-human-gates", "state-dir", "name")
	if err != nil {
		return err
	}
	defer be.Close()
	req.Plan = plan
	return be.Start(cmd.Context(), req, &runView{o: o, cmd: cmd})
}

// endsWithRun: this process runs one session here and ends with it (no
// --watch, no prompt at a pause), so the signals main caught ahead are
// its run's.
func (o *runOptions) endsWithRun(cmd *cobra.Command) bool {
	p := o.flags.pipeline(func(string, ...any) {})
	return o.cf.launch(&launch{cmd: cmd, json: o.output.json(), watchNext: o.keepOn, pipeline: &p}).endsWithRun()
}

// request is the run of the pipeline with specPath ("": the spec
// phases.yaml names), as the flags ask.
func (o *runOptions) request(specPath string, say func(string, ...any)) app.RunRequest {
	p := o.flags.pipeline(say)
	p.Spec = specPath
	return app.RunRequest{Pipeline: p, New: o.fresh, From: o.from, Only: o.only, NoHumanGates: o.cf.noHumanGates, Name: o.name}
}

// manySpecs runs the specs of a glob, or of several --spec flags, that
// --status keeps, side by side (many: true). One spec, named or the one
// left, runs as run always has (many: false).
func (o *runOptions) manySpecs(cmd *cobra.Command) (many bool, err error) {
	globbed := false
	for _, v := range o.specs.values {
		globbed = globbed || strings.ContainsAny(v, "*?[")
	}
	if len(o.specs.values) <= 1 && !globbed && o.status == "" {
		return false, nil
	}
	specs, err := app.ExpandSpecs(o.specs.values)
	if err != nil {
		return true, err
	}
	if len(specs) == 0 {
		return true, usagef("--status %s picks among specs: give them with --spec (a glob such as 'specs/*/README.md', or the flag more than once)", o.status)
	}
	kept := app.SpecsWithStatus(specs, o.status)
	switch len(kept) {
	case 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "none of the %d specs has status %s: nothing to run\n", len(specs), o.status)
		return true, nil
	case 1:
		o.flags.spec = kept[0]
		return false, nil
	}
	// Many sessions, each with its own run: the process catches the
	// signals for them all (app.RunMany).
	local.LetSignalsAheadGo()
	return true, o.runMany(cmd, kept)
}

// runView is what run shows of the session its backend set going.
type runView struct {
	o   *runOptions
	cmd *cobra.Command
}

// Drive runs the session here with the view, the CI reports and the
// pause prompt; with --watch, a pause is watched.
func (v *runView) Drive(_ context.Context, opened *app.Opened) error {
	o, cmd := v.o, v.cmd
	sayOpened(cmd, opened)
	sess := opened.Session
	if o.keepOn {
		// Refused now rather than after the run.
		if _, err := o.wf.options(cmd); err != nil {
			sess.Close()
			return err
		}
	}
	p := o.flags.pipeline(sayTo(cmd))
	l := o.cf.launch(&launch{cmd: cmd, grace: o.grace, json: o.output.json(), watchNext: o.keepOn, pipeline: &p})
	err := l.run(sess, opened.Events...)
	var paused *exitStatus
	if o.keepOn && errors.As(err, &paused) && paused.code == exitPaused && sess.StoreFailed() == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "watching: a change to the spec or phases.yaml resumes session %s (Ctrl+C to stop)\n", sess.ID())
		return watchAfterRun(cmd, o.wf, sess.Store, o.flags.file, sess.Key, o.grace, o.output.json())
	}
	return err
}

// Follow says which session goes on the fleet, and follows it.
func (v *runView) Follow(ctx context.Context, s app.Started) error {
	if s.Resumed {
		how := "paused"
		if s.PauseReason != "" {
			how += ": " + s.PauseReason
		}
		printError(v.cmd.ErrOrStderr(), fmt.Sprintf("resuming session %s (%s); use run --new for a fresh session\n", s.ID, how))
	} else {
		printError(v.cmd.ErrOrStderr(), fmt.Sprintf("session %s started on the Temporal fleet (%s)\n", s.ID, s.On.Where()))
	}
	return followFleet(ctx, v.cmd, s, followOptions{json: v.o.output.json(), quiet: v.o.cf.quiet, failOnPause: v.o.cf.failOnPause})
}

// sayOpened says which session a run goes on with, when it is not a new
// one from the first phase, and that the one before failed.
func sayOpened(cmd *cobra.Command, opened *app.Opened) {
	if s := opened.FailedBefore; s != nil {
		printError(cmd.ErrOrStderr(), fmt.Sprintf("the latest session, %s, failed in phase %s: pipeline resume %s retries the step that failed (--phase PHASE to start at another); pipeline run --from %s starts a new session there. Starting a new session from the first phase.\n",
			s.ID, s.Phase, s.ID, s.Phase))
	}
	if opened.Resumed != "" {
		printError(cmd.ErrOrStderr(), fmt.Sprintf("resuming session %s (%s); use run --new for a fresh session\n", opened.Session.ID(), opened.Resumed))
	}
}

// sessionBackend reads what a command that acts on one session was
// given: the session (its id, or "" for the latest of the pipeline and
// spec) and the backend it is on, the local one or the fleet's (closed
// by the caller), with the output format checked and, on a fleet, the
// flags it does not take refused.
func sessionBackend(cmd *cobra.Command, args []string, output *outputFlag, bf *backendFlags, file string, notOnFleet ...string) (string, app.Backend, error) {
	if err := output.check(); err != nil {
		return "", nil, err
	}
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	fl, err := bf.resolve(file, nil)
	if err != nil || fl == nil {
		return id, app.Local{}, err
	}
	if err := refuseOnFleet(cmd, notOnFleet...); err != nil {
		return "", nil, err
	}
	b, err := fl.backend(cmd)
	return id, b, err
}

// refuseOnFleet refuses the flags of cmd that the temporal backend does
// not take.
func refuseOnFleet(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usagef("--%s is not taken with the temporal backend (see README, \"Beyond one machine: Temporal\")", name)
		}
	}
	return nil
}

// checkAdapters: see app.CheckAdapters.
var checkAdapters = app.CheckAdapters

// newView picks the live view on a terminal, and plain lines elsewhere, in
// CI mode, or on a terminal that cannot move its cursor (TERM=dumb), with
// the CI system's groups (termview.ForOutput).
func newView(out io.Writer, ci cireport.Settings) local.View {
	var marks termview.LogMarkers
	if ci.Enabled {
		marks = cireport.NewLogMarkers(ci, time.Now)
	}
	return termview.ForOutput(out, ci.Enabled, marks)
}
