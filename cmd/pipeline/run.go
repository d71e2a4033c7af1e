package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/termview"
	"github.com/pipeline-dev/pipeline/steps"
)

func runCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		grace  time.Duration
		fresh  bool
		keepOn bool
		wf     *watchFlags
		cf     *ciFlags
		from   string
		only   string
		bf     *backendFlags
	)
	cmd := newCommand(&cobra.Command{
		Use:   "run [FILE]",
		Short: "Run the phases of a pipeline (resuming its paused session, if any)",
		Long: `Run the phases of FILE (default ./phases.yaml) in order: each phase's
steps, with its pause_when triggers evaluated live and its retry, restart
and done_when policies applied after every step.

When the latest session of this pipeline and spec is paused (or its runner
died), run resumes it and says so; --new starts a fresh session instead.
--from PHASE starts a fresh session at PHASE (the phases before it are
skipped), --only PHASE one that runs PHASE alone. When the latest session
failed, run starts a fresh one and says how to resume the failed one
(pipeline resume retries the step that failed).
One run per pipeline and spec at a time: a second is refused, naming the
first.

On a terminal a live view shows the phase, the step, the time and tokens
against their limits, and the last lines of output (a failed step's last
10 stay on screen; NO_COLOR drops its colours, TERM=dumb gets plain
lines); --quiet prints only how the run ended, --verbose adds each
trigger that fired with its values; otherwise, or in CI
mode (--ci, or CI=true, 1 or yes), every line is printed with a
timestamp. In CI mode on GitHub Actions and GitLab CI each step is a
collapsible group, and the reason a run stopped is an annotation at the
trigger's line in phases.yaml; $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT,
when set, get a table of the phases and the session's id and status;
--junit writes a JUnit XML report. Ctrl+C (or SIGTERM, a
closed terminal, a closed output as in pipeline run | head) stops the
running step gracefully and pauses; a second Ctrl+C, or SIGQUIT (Ctrl+\),
kills it at once.

Steps run without a terminal: standard input is empty (or the agent's
prompt), and a program that asks on /dev/tty (a git, ssh or sudo prompt)
fails at once. Nothing a step starts outlives it: when its own process
exits, what it left running is killed, daemons included (they are known
by PIPELINE_SESSION in their environment).

Exit status: 0 completed, 1 failed, 2 usage, spec or environment error
(nothing ran), 3 paused (a store that cannot be written pauses too; 1
with --fail-on-pause).`,
		Example: `  pipeline run
  pipeline run examples/quickstart/phases.yaml
  pipeline run --new --spec specs/045-dashboard/README.md
  pipeline run --from testing
  pipeline run --only documentation
  CI=true pipeline run phases.yaml
  pipeline run --ci --junit pipeline-junit.xml --no-human-gates --fail-on-pause`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if grace < 0 {
			return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", grace)
		}
		if len(args) == 1 {
			if cmd.Flags().Changed("file") {
				return usagef("the pipeline is given twice, as %s and as --file %s: give one", args[0], flags.file)
			}
			flags.file = args[0]
		}
		if keepOn {
			if err := cf.refuseWithWatch(); err != nil {
				return err
			}
		}
		if from != "" && only != "" {
			return usagef("--from and --only cannot go together: --from %s runs from that phase on, --only %s that phase alone", from, only)
		}
		plan, err := loadPlan(flags.file, flags.spec)
		if err != nil {
			return err
		}
		printWarnings(cmd.ErrOrStderr(), plan.Warnings)
		if cf.noHumanGates {
			plan = plan.WithoutHumanGates()
		}
		if err := checkAdapters(plan); err != nil {
			return err
		}
		if err := session.CheckPhase(plan, from+only); err != nil {
			return err
		}
		fl, err := bf.resolve(flags.file, plan)
		if err != nil {
			return err
		}
		if fl != nil {
			if err := output.check(); err != nil {
				return err
			}
			if err := refuseOnFleet(cmd, "watch", "junit", "no-human-gates", "state-dir"); err != nil {
				return err
			}
			return fleetRun(cmd, fl, fleetRunOptions{flags: flags, plan: plan, fresh: fresh, from: from, only: only,
				json: output.json(), quiet: cf.quiet, failOnPause: cf.failOnPause})
		}
		st, err := flags.open()
		if err != nil {
			return err
		}
		if err := output.check(); err != nil {
			return err
		}
		o := session.Options{File: flags.file, Plan: plan, Create: session.IfNone,
			Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning}, Say: sayTo(cmd)}
		if fresh || from != "" || only != "" {
			o.Create = session.Always
		}
		sess, err := session.Open(cmd.Context(), st, o)
		if err != nil {
			return err
		}
		now := time.Now()
		first, err := sess.StartAt(now, from+only, only != "")
		if err != nil {
			sess.Close()
			return err
		}
		if sess.Created && !fresh && from == "" && only == "" {
			sayFailedBefore(cmd, st, sess)
		}
		if !sess.Created {
			how := "paused"
			if pause := sess.State().Pause; pause != nil {
				how += ": " + pause.Reason
			}
			events, err := sess.Resume(now, "", "")
			if err != nil {
				sess.Close()
				return err
			}
			first = events[len(events)-1]
			if sess.Crashed {
				how = "its runner stopped without pausing it"
			}
			printError(cmd.ErrOrStderr(), fmt.Sprintf("resuming session %s (%s); use run --new for a fresh session\n", sess.ID(), how))
		}
		if keepOn {
			// Refused now rather than after the run.
			if _, err := wf.options(cmd); err != nil {
				sess.Close()
				return err
			}
		}
		l := cf.launch(&launch{cmd: cmd, grace: grace, json: output.json(), watchNext: keepOn})
		err = l.run(sess, first)
		var paused *exitStatus
		if keepOn && errors.As(err, &paused) && paused.code == exitPaused && sess.StoreFailed() == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "watching: a change to the spec or phases.yaml resumes session %s (Ctrl+C to stop)\n", sess.ID())
			return watchAfterRun(cmd, wf, st, flags.file, sess.Key, grace, output.json())
		}
		return err
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new session even when the latest one is paused")
	cmd.Flags().StringVar(&from, "from", "", "start a new session at this phase; the phases before it are skipped")
	cmd.Flags().StringVar(&only, "only", "", "start a new session that runs this phase alone")
	cmd.Flags().BoolVar(&keepOn, "watch", false, "once the session pauses, keep watching: a change to its spec or phases.yaml resumes it (see pipeline watch)")
	wf = addWatchFlags(cmd)
	cf = addCIFlags(cmd)
	bf = addBackendFlags(cmd)
	return cmd
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

// sayFailedBefore tells, as a new session starts, that the one before it
// failed, and how to go on with it instead: a long run that failed late
// need not start from its first phase again.
func sayFailedBefore(cmd *cobra.Command, st *store.Store, sess *session.Session) {
	list, err := st.List()
	if err != nil {
		return
	}
	for _, s := range list {
		if s.Key != sess.Key || s.ID == sess.ID() {
			continue
		}
		if s.Status == string(engine.StatusFailed) {
			printError(cmd.ErrOrStderr(), fmt.Sprintf("the latest session, %s, failed in phase %s: pipeline resume %s retries the step that failed (--phase PHASE to start at another); pipeline run --from %s starts a new session there. Starting a new session from the first phase.\n",
				s.ID, s.Phase, s.ID, s.Phase))
		}
		return
	}
}

// checkAdapters refuses, before anything runs, a plan with an agent kind
// whose adapter is not available.
func checkAdapters(plan *spec.Plan) error {
	var problems []spec.Problem
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent == nil {
				continue
			}
			if _, err := steps.AdapterFor(step.Agent.Value.Kind); err != nil {
				problems = append(problems, spec.Problem{Position: step.Agent.From.Position,
					Message: fmt.Sprintf("phase %q, step %q: %v", phase.Name, step.Name, err)})
			}
		}
	}
	if problems != nil {
		return &spec.Error{Problems: problems}
	}
	return nil
}

// newView picks the live view on a terminal, and plain lines elsewhere, in
// CI mode, or on a terminal that cannot move its cursor (TERM=dumb), with
// the CI system's groups.
func newView(out io.Writer, ci ciSettings) local.View {
	if f, ok := out.(*os.File); ok && !ci.enabled && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		live := termview.NewLive(f, width, colourWanted())
		live.StopResize = followResize(f, live)
		return termview.NewQueued(live)
	}
	var marks termview.LogMarkers
	if ci.enabled {
		marks = newLogMarkers(ci, time.Now)
	}
	return termview.NewQueued(termview.NewPlain(out, time.Now).WithMarks(marks))
}

// colourWanted: no colour under NO_COLOR (set to anything but "", see
// no-color.org) or on a dumb terminal.
func colourWanted() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// followResize redraws the live view at the terminal's new width on
// SIGWINCH, until the returned function is called.
func followResize(f *os.File, live *termview.Live) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if width, _, err := term.GetSize(int(f.Fd())); err == nil {
					live.Resize(width)
				}
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
