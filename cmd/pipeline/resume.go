package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

func resumeCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		grace  time.Duration
		phase  string
		notes  string
		cf     *ciFlags
		file   string
	)
	cmd := newCommand(&cobra.Command{
		Use:   "resume [SESSION]",
		Short: "Continue a paused or failed session",
		Long: `Continue SESSION, or the latest paused (or failed) session of the
pipeline and spec, at the step that paused; a failed session retries the
step that failed, as a new attempt, without running the phases before it
again. --phase starts at another phase; the phases it jumps over show as
skipped. The agent's native session is reused unless a restart policy
dropped it. The first agent prompt gets the resume context:
the phase, what was done, the files changed, the human notes and what
changed in the spec since the pause. A session whose runner died (killed,
crashed) is continued the same way.

In CI mode (--ci, or CI=true, 1 or yes) the run is shown as run shows
it, and leaves the same summary, outputs and --junit report behind.

Exit status as for run: 0 completed, 1 failed, 2 usage, spec or
environment error, 3 paused (1 with --fail-on-pause).`,
		Example: `  pipeline resume
  pipeline resume 20261125-093000123-a1b2c3 --notes "use the v2 endpoint"
  pipeline resume --phase implementation`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		if grace < 0 {
			return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", grace)
		}
		if err := output.check(); err != nil {
			return err
		}
		if file != "" {
			var err error
			if id, err = importSessionFile(cmd, flags, file, id); err != nil {
				return err
			}
		}
		st, err := flags.existing()
		if err != nil {
			return err
		}
		o, err := flags.options(id, engine.StatusPaused, engine.StatusRunning, engine.StatusFailed)
		if err != nil {
			return err
		}
		o.Say = sayTo(cmd)
		if o.Plan != nil {
			if err := checkAdapters(o.Plan); err != nil {
				return err
			}
		}
		sess, err := session.Open(cmd.Context(), st, o)
		if err != nil {
			return err
		}
		if err := checkAdapters(sess.Plan); err != nil {
			sess.Close()
			return err
		}
		events, err := sess.Resume(time.Now(), notes, phase)
		if err == nil && cf.noHumanGates {
			// Once the session is known to resume: recorded as a change
			// of plan, so that the session's digest names the plan it
			// decides with from now on, and the events carry it.
			if err = sess.SetPlan(time.Now(), sess.Plan.WithoutHumanGates()); err == nil {
				events, err = sess.Resume(time.Now(), notes, phase)
			}
		}
		if err != nil {
			sess.Close()
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "resuming session %s\n", sess.ID())
		l := cf.launch(&launch{cmd: cmd, grace: grace, json: output.json()})
		return l.run(sess, events...)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cmd.Flags().StringVar(&phase, "phase", "", "jump to this phase instead of continuing where the session paused")
	cmd.Flags().StringVar(&notes, "notes", "", "notes for the agent, shown in its resume context")
	cf = addCIFlags(cmd)
	cmd.Flags().StringVar(&file, "session-file", "", "import the session exported to this file (pipeline export) into the store first, then resume it")
	return cmd
}
