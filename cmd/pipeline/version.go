package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func versionCommand() *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version of pipeline",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return err
	})
}
