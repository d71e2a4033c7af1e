package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
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
	)
	cmd := newCommand(&cobra.Command{
		Use:   "run [FILE]",
		Short: "Run the phases of a pipeline (resuming its paused session, if any)",
		Long: `Run the phases of FILE (default ./phases.yaml) in order: each phase's
steps, with its pause_when triggers evaluated live and its retry, restart
and done_when policies applied after every step.

When the latest session of this pipeline and spec is paused (or its runner
died), run resumes it and says so; --new starts a fresh session instead.
One run per pipeline and spec at a time: a second is refused, naming the
first.

On a terminal a live view shows the phase, the step, the time and tokens
against their limits, and the last lines of output; otherwise (or with
CI=true) every line is printed with a timestamp. Ctrl+C (or SIGTERM, a
closed terminal, a closed output as in pipeline run | head) stops the
running step gracefully and pauses; a second Ctrl+C, or SIGQUIT (Ctrl+\),
kills it at once.

Steps run without a terminal: standard input is empty (or the agent's
prompt), and a program that asks on /dev/tty (a git, ssh or sudo prompt)
fails at once. Nothing a step starts outlives it: when its own process
exits, what it left running is killed, daemons included (they are known
by PIPELINE_SESSION in their environment).

Exit status: 0 completed, 1 failed, 2 usage, spec or environment error
(nothing ran), 3 paused (a store that cannot be written pauses too).`,
		Example: `  pipeline run
  pipeline run examples/quickstart/phases.yaml
  pipeline run --new --spec specs/045-dashboard/README.md
  CI=true pipeline run phases.yaml`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if grace < 0 {
			return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", grace)
		}
		if len(args) == 1 {
			flags.file = args[0]
		}
		plan, err := spec.Load(flags.file, flags.spec)
		if err != nil {
			return err
		}
		if err := checkAdapters(plan); err != nil {
			return err
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
		if fresh {
			o.Create = session.Always
		}
		sess, err := session.Open(cmd.Context(), st, o)
		if err != nil {
			return err
		}
		now := time.Now()
		first := sess.Start(now)
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
		l := &launch{cmd: cmd, grace: grace, json: output.json(), watchNext: keepOn}
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
	cmd.Flags().BoolVar(&keepOn, "watch", false, "once the session pauses, keep watching: a change to its spec or phases.yaml resumes it (see pipeline watch)")
	wf = addWatchFlags(cmd)
	return cmd
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

// newView picks the live view on a terminal and plain lines elsewhere or
// when CI=true.
func newView(out io.Writer) local.View {
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("CI") != "true" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		return newQueuedView(NewLiveView(f, width))
	}
	return newQueuedView(NewPlainView(out, time.Now))
}
