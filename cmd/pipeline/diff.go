package main

import (
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// exitDiverged is diff's exit when the sessions diverge, as diff(1)'s 1.
const exitDiverged = 1

// diffOptions are the flags of diff.
type diffOptions struct {
	flags  *storeFlags
	output *outputFlag
}

func diffCommand() *cobra.Command {
	o := &diffOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "diff A B",
		Short:   "Compare two sessions phase by phase, and say where they diverged",
		Long:    helpText("diff"),
		Example: helpText("diff.example"),
		Args:    cobra.ExactArgs(2),
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	return cmd
}

func (o *diffOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	r, err := app.Diff(cmd.Context(), app.DiffRequest{Pipeline: o.flags.pipeline(nil), A: args[0], B: args[1]})
	if err != nil {
		return err
	}
	if o.output.json() {
		err = render.JSON(cmd.OutOrStdout(), r)
	} else {
		err = render.Diff(cmd.OutOrStdout(), r.Result)
	}
	if err != nil {
		return err
	}
	if !r.Same {
		return &exitStatus{code: exitDiverged, printed: true}
	}
	return nil
}
