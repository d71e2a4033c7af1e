package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

func templatesCommand() *cobra.Command {
	var output *outputFlag
	cmd := newCommand(&cobra.Command{
		Use:   "templates [DIR]",
		Short: "List the templates pipeline init --template can write",
		Long: `List the templates of pipeline init --template NAME: each one's name,
what it is for and where it comes from. A project's own templates, in
DIR/.pipeline/templates/NAME/ (DIR: the current folder by default), go
over the user's, in the user config folder's pipeline/templates/NAME/,
which go over the built-in ones of the same name. A template is a folder
holding phases.yaml (its "# description:" comment line says what it is
for) and, optionally, spec.md: the spec skeleton init writes to the spec
phases.yaml names ({{today}} in it becomes the date).`,
		Example: `  pipeline templates
  pipeline templates -o json
  pipeline init --template bugfix`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		list, err := app.Templates(dir)
		if err != nil {
			return err
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), list)
		}
		safe := termview.NewScreenText().Line
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tDESCRIPTION\tFROM")
		for _, t := range list {
			from := t.From
			if t.Dir != "" {
				from += " (" + t.Dir + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", safe(t.Name), safe(t.Description), safe(from))
		}
		return tw.Flush()
	})
	output = addOutputFlag(cmd)
	return cmd
}
