package main

import (
	"bytes"
	"io"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// planOptions are plan's flags.
type planOptions struct {
	output   *outputFlag
	specPath string
}

func planCommand() *cobra.Command {
	o := &planOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "plan [FILE]",
		Short:   "Show the phases, triggers and policies as they will run, and where each came from",
		Long:    helpText("plan"),
		Example: helpText("plan.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.specPath, "spec", "", "spec file whose frontmatter overrides phases.yaml (default: the spec phases.yaml names)")
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	file := "phases.yaml"
	if len(args) == 1 {
		file = args[0]
	}
	r, err := app.Plan(cmd.Context(), app.Pipeline{File: file, Spec: o.specPath})
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), r.Plan.Warnings)
	if o.output.json() {
		_, err = cmd.OutOrStdout().Write(termsafe.EscapeJSON(r.JSON))
		return err
	}
	var out bytes.Buffer
	if err := render.Plan(&out, r.Plan); err != nil {
		return err
	}
	// Redacted as a session would redact it (a step's command line,
	// a prompt), then made safe for a terminal.
	text := r.Redactor.String(out.String())
	if safe := termsafe.Text(text); safe != text {
		text = r.Redactor.String(safe)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), text)
	return err
}
