//go:build man

package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The man pages are made by a build of pipeline with the man tag (make
// man): cobra's generator and its markdown-to-roff dependency stay out of
// the binary people run.
func init() {
	extraCommands = append(extraCommands, func() *cobra.Command {
		return newCommand(&cobra.Command{
			Use:    "man DIR",
			Short:  "Write the man pages of pipeline and its commands to DIR",
			Args:   cobra.ExactArgs(1),
			Hidden: true,
		}, func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			return doc.GenManTree(root, &doc.GenManHeader{Title: "PIPELINE", Section: "1", Source: "pipeline " + version}, args[0])
		})
	})
}
