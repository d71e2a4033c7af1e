package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

func pid() int { return os.Getpid() }

func resumeCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		grace  time.Duration
		phase  string
		notes  string
	)
	cmd := newCommand(&cobra.Command{
		Use:   "resume [SESSION]",
		Short: "Continue a paused session",
		Long: `Continue SESSION, or the latest paused session of the pipeline and spec,
at the step that paused, reusing the agent's native session unless a
restart policy dropped it. The first agent prompt gets the resume context:
the phase, what was done, the files changed, the human notes and what
changed in the spec since the pause. A session whose runner died (killed,
crashed) is continued the same way.

Exit status as for run: 0 completed, 1 failed, 2 usage error, 3 paused.`,
		Example: `  pipeline resume
  pipeline resume 20261125-093000-a1b2c3 --notes "use the v2 endpoint"
  pipeline resume --phase implementation`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		f, err := findSession(flags, id, engine.StatusPaused, engine.StatusRunning)
		if err != nil {
			return err
		}
		defer f.x.Close()
		if err := checkAdapters(f.plan); err != nil {
			return err
		}
		s, crashed, err := f.state()
		if err != nil {
			return err
		}
		if phase != "" && !slices.ContainsFunc(f.plan.Phases, func(p spec.PhasePlan) bool { return p.Name == phase }) {
			return usagef("--phase %q is not a phase of %s (%s)", phase, f.x.Meta.File, phaseNames(f.plan))
		}
		var first []engine.Event
		now := time.Now()
		switch {
		case s.Status == engine.StatusPaused:
			first = append(first, engine.Resumed{At: now, Notes: notes, Phase: phase})
		case crashed:
			if notes != "" {
				first = append(first, engine.Noted{At: now, Notes: notes})
			}
			first = append(first, engine.Recovered{At: now})
			if phase != "" {
				return usagef("--phase needs a paused session; session %s was cut short while running: resume it first", f.x.Meta.ID)
			}
		case s.Status == engine.StatusRunning:
			holder, _ := f.st.Holder(f.key)
			return usagef("session %s is running (pid %d); pause it first with: pipeline pause %s", f.x.Meta.ID, holder.PID, f.x.Meta.ID)
		default:
			return usagef("session %s is %s: there is nothing to resume (pipeline run --new starts another)", f.x.Meta.ID, s.Status)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "resuming session %s\n", f.x.Meta.ID)
		if err := output.check(); err != nil {
			return err
		}
		l := &launch{cmd: cmd, file: f.x.Meta.File, plan: f.plan, st: f.st, grace: grace, json: output.json()}
		return l.run(f.x, first...)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cmd.Flags().StringVar(&phase, "phase", "", "jump to this phase instead of continuing where the session paused")
	cmd.Flags().StringVar(&notes, "notes", "", "notes for the agent, shown in its resume context")
	return cmd
}
