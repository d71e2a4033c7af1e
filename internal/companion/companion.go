// Package companion checks pipeline-temporal, the full build of pipeline
// that the lean one hands its fleet, server and search commands to, as
// pipeline doctor reports it: found, answering its version, with the
// Temporal backend, and of the same build as the pipeline that asks.
package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/buildinfo"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/steps"
)

// versionWait bounds how long the companion gets to say its version.
const versionWait = 10 * time.Second

// Checked is the companion to check, as the build that asks knows it.
type Checked struct {
	// Name is its file name (pipeline-temporal).
	Name string
	// Needed: the pipeline runs on the fleet, which takes the companion.
	Needed bool
	// Self is the version of the build that asks; IsSelf, that it is the
	// companion itself.
	Self   buildinfo.Info
	IsSelf bool
	// Find looks for it as the hand-off does: its path ("" when not
	// found) and where it looked.
	Find func() (path string, looked []string)
}

// Check finds the companion and asks its version (pipeline-temporal
// version -o json): missing, broken (no answer, or no Temporal backend),
// of another build (a warning), or ok.
func Check(ctx context.Context, c Checked) render.ProgramCheck {
	check := render.ProgramCheck{Program: c.Name, Needed: c.Needed, Status: steps.CheckOK}
	if c.IsSelf {
		check.Path, _ = os.Executable()
		check.Version = c.Self.String()
		return check
	}
	path, looked := c.Find()
	build := "go build -tags temporal -o " + app.ShellQuote(c.Name) + " ./cmd/pipeline"
	if exe, err := os.Executable(); err == nil {
		build = "go build -tags temporal -o " + app.ShellQuote(filepath.Join(filepath.Dir(exe), c.Name)) + " ./cmd/pipeline"
	}
	if path == "" {
		check.Status = steps.CheckMissing
		check.Problem = "not found (looked at " + strings.Join(looked, ", ") + ")"
		check.Hint = "make install builds pipeline and pipeline-temporal side by side; or " + build
		return check
	}
	check.Path = path
	its, err := versionOf(ctx, path)
	if err != nil {
		check.Status, check.Problem, check.Hint = steps.CheckBroken, fmt.Sprintf("%s version -o json: %v", path, err), "build it again: "+build
		return check
	}
	check.Version = its.String()
	switch {
	case !slices.Contains(its.Backends, "temporal"):
		check.Status, check.Problem, check.Hint = steps.CheckBroken, path+" has no Temporal backend (a copy of pipeline?)", "build it with the temporal tag: "+build
	case !its.SameBuild(c.Self):
		check.Status = render.OtherVersion
		check.Problem = fmt.Sprintf("%s is %q, this pipeline %q", path, its.String(), c.Self.String())
		check.Hint = "build both from one checkout: make install, or " + build
	}
	return check
}

// versionOf asks the program at path its version.
func versionOf(ctx context.Context, path string) (buildinfo.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	var its buildinfo.Info
	out, err := exec.CommandContext(ctx, path, "version", "-o", "json").Output()
	if err == nil {
		err = json.Unmarshal(out, &its)
	}
	return its, err
}
