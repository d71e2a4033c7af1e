package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
)

func pauseCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		notes  string
		wait   time.Duration
	)
	cmd := newCommand(&cobra.Command{
		Use:   "pause [SESSION]",
		Short: "Pause a running session, or leave notes on a paused one",
		Long: `Pause SESSION, or the latest running session of the pipeline and spec: its
runner stops the running step gracefully at once and records the pause,
with your notes. On a paused session, the notes are added for the next
resume; the agent sees them in its resume context.`,
		Example: `  pipeline pause --notes "the API changed: read the new spec section 3"
  pipeline pause 20261125-093000-a1b2c3`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id := ""
		if err := output.check(); err != nil {
			return err
		}
		say := func(what string) error {
			if output.json() {
				return writeJSON(cmd.OutOrStdout(), map[string]string{"session": id, "result": what})
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "session %s %s\n", id, what)
			return err
		}
		if len(args) == 1 {
			id = args[0]
		}
		f, err := findSession(flags, id, engine.StatusRunning, engine.StatusPaused)
		if err != nil {
			return err
		}
		defer f.x.Close()
		id = f.x.Meta.ID
		if f.st.Held(f.key) {
			holder, err := f.st.Holder(f.key)
			if err != nil || holder.Session != f.x.Meta.ID {
				return usagef("session %s is not the one running for this pipeline and spec", f.x.Meta.ID)
			}
			// Nothing reaches .pipeline unredacted, notes included.
			if err := f.x.WriteFile(pauseRequestFile, []byte(newRedactor(f.plan).String(notes))); err != nil {
				return err
			}
			if err := syscall.Kill(holder.PID, syscall.SIGTERM); err != nil {
				return fmt.Errorf("signalling the runner (pid %d): %w", holder.PID, err)
			}
			if !f.st.WaitReleased(f.key, wait) {
				return fmt.Errorf("session %s was asked to pause but is still running after %s", f.x.Meta.ID, wait)
			}
			return say("paused")
		}
		s, crashed, err := f.state()
		if err != nil {
			return err
		}
		if s.Status != engine.StatusPaused && !crashed {
			return usagef("session %s is %s: there is nothing to pause", f.x.Meta.ID, s.Status)
		}
		if notes == "" {
			return say("already paused")
		}
		if _, err := f.apply(engine.Noted{At: time.Now(), Notes: notes}); err != nil {
			return err
		}
		return say("paused, notes added")
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&notes, "notes", "", "notes for the next resume")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for a running session to stop")
	return cmd
}

func completeCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
	)
	cmd := newCommand(&cobra.Command{
		Use:   "complete SESSION",
		Short: "Mark a paused or failed session as completed",
		Long: `Mark SESSION as completed by hand: the work is done (or abandoned) and
run starts a fresh session next time. A running session must be paused
first.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		f, err := findSession(flags, args[0])
		if err != nil {
			return err
		}
		defer f.x.Close()
		if f.st.Held(f.key) {
			return usagef("session %s is running; pause it first with: pipeline pause %s", f.x.Meta.ID, f.x.Meta.ID)
		}
		if _, err := f.apply(engine.Completed{At: time.Now()}); err != nil {
			return err
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), map[string]string{"session": f.x.Meta.ID, "result": "completed"})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "session %s completed\n", f.x.Meta.ID)
		return nil
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	return cmd
}
