package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

const exportHelp = `Write SESSION, or the latest session of the pipeline and spec, to one
gzip'd tar: its event log, snapshot, transcripts and the spec kept at its
pause, after a manifest (the archive's format, the session's status, each
file's size and SHA-256). Its paths are relative to the project, so that
pipeline import (or pipeline resume --session-file) in any checkout of the
project, on any machine, continues it there.

The files were redacted when they were written; they are redacted again
on the way out, with the secrets of this environment too. A running
session is refused: pause it first. The agent's own session (its CLI's
files) does not go with it: resumed elsewhere, the step starts a fresh
one with the resume context.`

// exportOptions are the flags of export.
type exportOptions struct {
	flags *storeFlags
	out   string
}

func exportCommand() *cobra.Command {
	o := &exportOptions{}
	cmd := newCommand(&cobra.Command{
		Use:   "export [SESSION]",
		Short: "Write a session to one file, to resume it elsewhere",
		Long:  exportHelp,
		Example: `  pipeline export -o session.tar.gz
  pipeline export 20261125-093000123-a1b2c3 -o /tmp/design.tar.gz
  pipeline export -o - | ssh build-host pipeline import -`,
		Args: cobra.MaximumNArgs(1),
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
