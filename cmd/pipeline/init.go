package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

func initCommand() *cobra.Command {
	var template, specPath string
	cmd := newCommand(&cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented starter phases.yaml and an example spec, or a template's",
		Long: `Write phases.yaml, ` + app.StarterSpecPath + ` and phases.schema.json
(the JSON Schema that phases.yaml's first line points editors at) into DIR
(default: the current folder). Nothing is overwritten: if phases.yaml or
the spec exists, init stops before writing anything; a phases.schema.json
already there is kept.

--template NAME writes that template's phases.yaml and spec skeleton
instead (pipeline templates lists them: built-in, the user's and the
project's own in .pipeline/templates/NAME/). --spec SPEC writes only a
phases.yaml for an existing spec: the template its frontmatter names
(pipeline: {template: NAME}), or --template's, with spec: set to SPEC.`,
		Example: helpText("init.example"),
		Args:    cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		r, err := app.Init(cmd.Context(), app.InitRequest{Dir: dir, Template: template, Spec: specPath})
		if r == nil {
			return err
		}
		for _, path := range r.Written {
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", path)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), r.Next)
		return err
	})
	cmd.Flags().StringVar(&template, "template", "", "write this template's phases.yaml and spec (pipeline templates lists them)")
	cmd.Flags().StringVar(&specPath, "spec", "", "write a phases.yaml for this existing spec, from the template its frontmatter names")
	return cmd
}
