// Package buildinfo is the version of a pipeline build, as pipeline
// version prints it and doctor compares the two builds (pipeline and
// pipeline-temporal): the version set at build time, the VCS revision the
// Go toolchain recorded, the toolchain and the backends built in.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
)

// Info is what pipeline version prints: the version set at build time (or
// the module's, for go install), and the VCS revision the binary was
// built from, as the Go toolchain recorded it.
type Info struct {
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

// Of reads the version from the build information (nil: none): version
// is the one set at build time ("dev" when none was), backends those of
// the build.
func Of(info *debug.BuildInfo, version string, backends ...string) Info {
	v := Info{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Backends: backends}
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
func (v Info) String() string {
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

// SameBuild tells whether v and w were built from the same source by
// the same toolchain, whatever their backends.
func (v Info) SameBuild(w Info) bool {
	return v.Version == w.Version && v.Revision == w.Revision && v.Time == w.Time && v.Modified == w.Modified &&
		v.Go == w.Go && v.Platform == w.Platform
}
