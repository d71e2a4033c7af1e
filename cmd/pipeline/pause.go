package main

import (
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

// pauseOptions are pause's flags.
type pauseOptions struct {
	flags  *storeFlags
	output *outputFlag
	notes  string
	wait   time.Duration
	bf     *backendFlags
}

func pauseCommand() *cobra.Command {
	o := &pauseOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "pause [SESSION]",
		Short:   "Pause a running session, or leave notes on a paused one",
		Long:    helpText("pause"),
		Example: helpText("pause.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.notes, "notes", "", "notes for the next resume")
	cmd.Flags().DurationVar(&o.wait, "wait", time.Minute, "how long to wait for a running session to stop")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *pauseOptions) run(cmd *cobra.Command, args []string) error {
	id, be, err := sessionBackend(cmd, args, o.output, o.bf, o.flags.file, "state-dir")
	if err != nil {
		return err
	}
	defer be.Close()
	say := func(what string) error {
		if o.output.json() {
			return render.JSON(cmd.OutOrStdout(), map[string]string{"session": id, "result": what})
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "session %s %s\n", id, what)
		return err
	}
	r, err := be.Pause(cmd.Context(), app.PauseRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: id, Notes: o.notes, Wait: o.wait})
	if err != nil {
		return err
	}
	id = r.Session
	return say(r.Result)
}

func completeCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		bf     *backendFlags
		force  bool
	)
	cmd := newCommand(&cobra.Command{
		Use:     "complete [SESSION]",
		Short:   "Mark a paused or failed session as completed",
		Long:    helpText("complete"),
		Example: helpText("complete.example"),
		Args:    cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id, be, err := sessionBackend(cmd, args, output, bf, flags.file, "state-dir")
		if err != nil {
			return err
		}
		defer be.Close()
		r, err := be.Complete(cmd.Context(), app.CompleteRequest{Pipeline: flags.pipeline(sayTo(cmd)), Session: id, Force: force})
		if err != nil {
			return err
		}
		if output.json() {
			return render.JSON(cmd.OutOrStdout(), r)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "session %s completed\n", r.Session)
		return nil
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	bf = addBackendFlags(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "set the spec's status to complete even with unchecked checklist items")
	return cmd
}
