package main

import (
	"github.com/pipeline-dev/pipeline/internal/render"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// logsOptions are logs's flags.
type logsOptions struct {
	flags   *storeFlags
	output  *outputFlag
	phase   string
	follow  bool
	prompts bool
	raw     bool
	verbose bool
	bf      *backendFlags
}

func logsCommand() *cobra.Command {
	o := &logsOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "logs [SESSION]",
		Short:   "Print the transcripts of a session",
		Long:    helpText("logs"),
		Example: helpText("logs.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.phase, "phase", "", "only this phase")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new output until the session stops running")
	cmd.Flags().BoolVar(&o.prompts, "prompts", false, "print the prompt each agent step was sent (the resume context included) before its transcript")
	cmd.Flags().BoolVar(&o.raw, "raw", false, "print the transcripts as the agent CLIs wrote them, not rendered")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show the model's thinking too")
	cmd.MarkFlagsMutuallyExclusive("raw", "verbose")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *logsOptions) run(cmd *cobra.Command, args []string) error {
	id, be, err := sessionBackend(cmd, args, o.output, o.bf, o.flags.file, "state-dir")
	if err != nil {
		return err
	}
	defer be.Close()
	req := app.LogsRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: id, Phase: o.phase, Prompts: o.prompts, Follow: o.follow,
		Raw: o.raw, Verbose: o.verbose}
	return be.Logs(cmd.Context(), req, render.LogPrinter(termsafe.Output(cmd.OutOrStdout()), o.output.json()))
}
