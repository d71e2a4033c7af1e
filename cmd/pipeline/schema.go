package main

import (
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/schemas"
)

func schemaCommand() *cobra.Command {
	var frontmatter bool
	cmd := newCommand(&cobra.Command{
		Use:     "schema",
		Short:   "Print the JSON Schema of phases.yaml (or of a spec's frontmatter)",
		Long:    helpText("schema"),
		Example: helpText("schema.example"),
		Args:    cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		out := schemas.Phases
		if frontmatter {
			out = schemas.Frontmatter
		}
		_, err := cmd.OutOrStdout().Write(out)
		return err
	})
	cmd.Flags().BoolVar(&frontmatter, "frontmatter", false, "print the schema of a spec's frontmatter instead")
	return cmd
}
