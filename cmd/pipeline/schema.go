package main

import (
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/schemas"
)

func schemaCommand() *cobra.Command {
	var frontmatter bool
	cmd := newCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of phases.yaml (or of a spec's frontmatter)",
		Long: `Print the JSON Schema of phases.yaml, for editors and CI checks.

Point your editor at it with a first line in phases.yaml:
  # yaml-language-server: $schema=./phases.schema.json`,
		Example: `  pipeline schema > phases.schema.json
  pipeline schema --frontmatter > frontmatter.schema.json`,
		Args: cobra.NoArgs,
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
