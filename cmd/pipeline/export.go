package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

// exportOptions are the flags of export.
type exportOptions struct {
	flags *storeFlags
	out   string
}

func exportCommand() *cobra.Command {
	o := &exportOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "export [SESSION]",
		Short:   "Write a session to one file, to resume it elsewhere",
		Long:    helpText("export"),
		Example: helpText("export.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "the file to write; - for standard output (default pipeline-session-ID.tar.gz)")
	return cmd
}

func (o *exportOptions) run(cmd *cobra.Command, args []string) error {
	req := app.ExportRequest{Pipeline: o.flags.pipeline(nil), Output: o.out}
	if len(args) == 1 {
		req.Session = args[0]
	}
	if o.out == "-" {
		req.To = cmd.OutOrStdout()
	}
	r, err := app.Export(cmd.Context(), req)
	if err != nil {
		return err
	}
	what, where := r.Status, r.Output
	if r.PauseReason != "" {
		what += ": " + r.PauseReason
	}
	if req.To != nil {
		where = "standard output"
	}
	printError(cmd.ErrOrStderr(), fmt.Sprintf("exported session %s (%s, %d files, %d bytes) to %s\n", r.Session, what, r.Files, r.Bytes, where))
	return nil
}
