package main

import (
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

// rewindOptions are the flags of rewind.
type rewindOptions struct {
	flags  *storeFlags
	output *outputFlag
	to     string
	force  bool
}

func rewindCommand() *cobra.Command {
	o := &rewindOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "rewind [SESSION] --to PHASE",
		Short:   "Restore the work tree to the checkpoint before a phase and run it again",
		Long:    helpText("rewind"),
		Example: helpText("rewind.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.to, "to", "", "the phase to run again (required)")
	cmd.Flags().BoolVar(&o.force, "force", false, "rewind even when the work tree holds changes in no checkpoint, keeping them under refs/pipeline/<session>/rescued-<n> first")
	return cmd
}

func (o *rewindOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	req := app.RewindRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), To: o.to, Force: o.force}
	if len(args) == 1 {
		req.Session = args[0]
	}
	r, err := app.Rewind(cmd.Context(), req)
	if err != nil {
		return err
	}
	if o.output.json() {
		return render.JSON(cmd.OutOrStdout(), r)
	}
	out := cmd.OutOrStdout()
	if r.Rescued != "" {
		fmt.Fprintf(out, "the work tree's changes that no checkpoint held are kept under %s\n", r.Rescued)
	}
	fmt.Fprintf(out, "session %s rewound to the start of phase %s (attempt %d): the work tree is as checkpoint %s left it\n",
		r.Session, r.Phase, r.Attempt, r.Checkpoint[:min(12, len(r.Checkpoint))])
	fmt.Fprintf(out, "pipeline resume runs phase %s again\n", r.Phase)
	return nil
}
