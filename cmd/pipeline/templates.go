package main

import (
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

func templatesCommand() *cobra.Command {
	var output *outputFlag
	cmd := newCommand(&cobra.Command{
		Use:     "templates [DIR]",
		Short:   "List the templates pipeline init --template can write",
		Long:    helpText("templates"),
		Example: helpText("templates.example"),
		Args:    cobra.MaximumNArgs(1),
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
			return render.JSON(cmd.OutOrStdout(), list)
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
