package main

import (
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/internal/buildinfo"
)

// buildVersion is this build's version (see package buildinfo).
func buildVersion() buildinfo.Info {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info)
}

// versionOf is the version of this build from its build information.
func versionOf(info *debug.BuildInfo) buildinfo.Info {
	if withTemporal {
		return buildinfo.Of(info, version, "local", "temporal")
	}
	return buildinfo.Of(info, version, "local")
}

// printVersion answers pipeline --version, the line of pipeline version,
// before cobra is set up. Cobra would print it through a version template,
// and parsing and running that with text/template cost each
// pipeline --version 14 page faults and 0.2 ms, about a tenth of its
// start-up; cobra prints a version through fmt only in its own "NAME
// version X" form, which is not pipeline's line.
func printVersion() int {
	// Written whole, without fmt's reflection on the value.
	if _, err := os.Stdout.WriteString(buildVersion().String() + "\n"); err != nil {
		return failed(nil, []string{"--version"}, err)
	}
	return exitCompleted
}

func versionCommand() *cobra.Command {
	var output *outputFlag
	cmd := newCommand(&cobra.Command{
		Use:     "version",
		Short:   "Print the version of pipeline",
		Long:    helpText("version"),
		Example: helpText("version.example"),
		Args:    cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		if err := output.check(); err != nil {
			return err
		}
		if output.json() {
			return render.JSON(cmd.OutOrStdout(), buildVersion())
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
		return err
	})
	output = addOutputFlag(cmd)
	return cmd
}
