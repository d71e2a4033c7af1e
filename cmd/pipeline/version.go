package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/spf13/cobra"
)

// versionInfo is what version prints: the version set at build time (or
// the module's, for go install), and the VCS revision the binary was
// built from, as the Go toolchain recorded it.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"revision_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Backends are the backends this build runs in process: local, and
	// temporal in pipeline-temporal.
	Backends []string `json:"backends"`
}

func buildVersion() versionInfo {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info)
}

// versionOf reads the version from the build information (nil: none).
func versionOf(info *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Backends: []string{"local"}}
	if withTemporal {
		v.Backends = append(v.Backends, "temporal")
	}
	if info == nil {
		return v
	}
	if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line of pipeline --version.
func (v versionInfo) String() string {
	text := "pipeline " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if v.Modified {
			rev += "+modified"
		}
		text += " " + rev
	}
	text = fmt.Sprintf("%s (%s %s)", text, v.Go, v.Platform)
	if slices.Contains(v.Backends, "temporal") {
		text += " with the Temporal backend"
	}
	return text
}

// sameBuild tells whether v and w were built from the same source by
// the same toolchain, whatever their backends.
func (v versionInfo) sameBuild(w versionInfo) bool {
	return v.Version == w.Version && v.Revision == w.Revision && v.Time == w.Time && v.Modified == w.Modified &&
		v.Go == w.Go && v.Platform == w.Platform
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
			return writeJSON(cmd.OutOrStdout(), buildVersion())
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
		return err
	})
	output = addOutputFlag(cmd)
	return cmd
}
