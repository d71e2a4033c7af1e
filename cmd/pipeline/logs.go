package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// logsLong is logs's help.
const logsLong = `Print the transcripts of SESSION (or of the latest session of the pipeline
and spec), phase by phase, attempt by attempt, each headed by its file.
--phase keeps one phase. -f keeps printing what the steps write until the
session stops running. --prompts prints, before each agent step's
transcript, the prompt it was sent as it was sent (the resume context
included), headed by its file (<attempt>-<step>.prompt).`

const logsExample = `  pipeline logs
  pipeline logs 20261125-093000123-a1b2c3 --phase implementation
  pipeline logs --prompts --phase design
  pipeline logs -f`

// logsOptions are logs's flags.
type logsOptions struct {
	flags   *storeFlags
	output  *outputFlag
	phase   string
	follow  bool
	prompts bool
	bf      *backendFlags
}

func logsCommand() *cobra.Command {
	o := &logsOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "logs [SESSION]",
		Short:   "Print the transcripts of a session",
		Long:    logsLong,
		Example: logsExample,
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.phase, "phase", "", "only this phase")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new output until the session stops running")
	cmd.Flags().BoolVar(&o.prompts, "prompts", false, "print the prompt each agent step was sent (the resume context included) before its transcript")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *logsOptions) run(cmd *cobra.Command, args []string) error {
	id, be, err := sessionBackend(cmd, args, o.output, o.bf, o.flags.file, "state-dir")
	if err != nil {
		return err
	}
	defer be.Close()
	req := app.LogsRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: id, Phase: o.phase, Prompts: o.prompts, Follow: o.follow}
	return be.Logs(cmd.Context(), req, logPrinter(termsafe.Output(cmd.OutOrStdout()), o.output.json()))
}

// logPrinter prints the pieces of transcripts read: each file headed by
// its name; as JSON, one object per piece read: {"transcript":
// "phase/1-step.log", "text": ...}, or {"prompt": "phase/1-step.prompt",
// "text": ...}.
func logPrinter(w io.Writer, asJSON bool) func(app.LogChunk) error {
	return func(c app.LogChunk) error {
		if asJSON {
			key := "transcript"
			if c.Prompt {
				key = "prompt"
			}
			return writeJSONLine(w, map[string]string{key: c.File, "text": string(c.Text)})
		}
		if c.First {
			fmt.Fprintf(w, "==> %s <==\n", c.File)
		}
		_, err := w.Write(c.Text)
		return err
	}
}
