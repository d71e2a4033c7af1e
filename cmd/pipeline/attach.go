package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/cireport"
)

// attachOptions are attach's flags.
type attachOptions struct {
	flags *storeFlags
	lines int
}

func attachCommand() *cobra.Command {
	o := &attachOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "attach [SESSION]",
		Short:   "Follow a running session's live view from any terminal",
		Long:    helpText("attach"),
		Example: helpText("attach.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	cmd.Flags().IntVarP(&o.lines, "lines", "n", 20, "how many of the running step's last lines to show first")
	return cmd
}

func (o *attachOptions) run(cmd *cobra.Command, args []string) error {
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	if o.lines < 0 {
		return usagef("--lines must be 0 or more, not %d", o.lines)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	view := newView(cmd.OutOrStdout(), cireport.Settings{})
	r, err := app.Attach(ctx, app.AttachRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: id, Lines: o.lines}, view)
	view.Close()
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	switch {
	case r.Detached:
		fmt.Fprintf(stderr, "detached: session %s goes on running (pipeline attach %s follows it again)\n", r.ID, r.ID)
		return nil
	case !r.WasRunning:
		fmt.Fprintf(stderr, "session %s is not running: it is %s\n", r.ID, r.Status)
	}
	switch engine.Status(r.Status) {
	case engine.StatusCompleted:
		return nil
	case engine.StatusPaused:
		fmt.Fprintf(stderr, "session %s is paused; continue it with: pipeline resume %s\n", r.ID, r.ID)
		return &exitStatus{code: exitPaused, printed: true}
	default:
		return &exitStatus{code: exitFailed, printed: true}
	}
}
