package main

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

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/buildinfo"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/steps"
)

// doctorOptions are doctor's flags.
type doctorOptions struct {
	output   *outputFlag
	specPath string
}

func doctorCommand() *cobra.Command {
	o := &doctorOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "doctor [FILE]",
		Short:   "Check that the agent CLIs the pipeline uses are installed, recent enough and have credentials",
		Long:    helpText("doctor"),
		Example: helpText("doctor.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.specPath, "spec", "", "spec file whose frontmatter overrides phases.yaml (default: the spec phases.yaml names)")
	return cmd
}

func (o *doctorOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	file := "phases.yaml"
	if len(args) == 1 {
		file = args[0]
	}
	r, err := app.Doctor(cmd.Context(), app.Pipeline{File: file, Spec: o.specPath})
	if err != nil {
		return err
	}
	checks := r.Agents
	onFleet, err := (&backendFlags{}).resolve(file, r.Plan)
	if err != nil {
		return err
	}
	temporal := checkFleetBinary(cmd.Context(), onFleet != nil)
	ok := r.OK && temporal.OK()
	if o.output.json() {
		if err := render.JSON(cmd.OutOrStdout(), struct {
			OK       bool                `json:"ok"`
			Agents   []steps.CLICheck    `json:"agents"`
			Temporal render.ProgramCheck `json:"temporal"`
		}{ok, checks, temporal}); err != nil {
			return err
		}
	} else {
		render.Checks(cmd.OutOrStdout(), file, checks)
		temporal.Write(cmd.OutOrStdout())
	}
	if !ok {
		return &exitStatus{code: exitUsage, printed: true}
	}
	return nil
}

// doctorChecks and checksOK: see app.AgentChecks and app.ChecksOK.
var (
	doctorChecks = app.AgentChecks
	checksOK     = app.ChecksOK
)

// checkFleetBinary looks for pipeline-temporal as --backend temporal
// would, and asks its version. needed: the pipeline runs on the fleet.
func checkFleetBinary(ctx context.Context, needed bool) render.ProgramCheck {
	c := render.ProgramCheck{Program: fleetBinary, Needed: needed, Status: steps.CheckOK}
	self := buildVersion()
	if withTemporal {
		// This is pipeline-temporal.
		c.Path, _ = os.Executable()
		c.Version = self.String()
		return c
	}
	path, looked := findFleetBinary()
	build := "go build -tags temporal -o " + shellQuote(fleetBinary) + " ./cmd/pipeline"
	if exe, err := os.Executable(); err == nil {
		build = "go build -tags temporal -o " + shellQuote(filepath.Join(filepath.Dir(exe), fleetBinary)) + " ./cmd/pipeline"
	}
	if path == "" {
		c.Status = steps.CheckMissing
		c.Problem = "not found (looked at " + strings.Join(looked, ", ") + ")"
		c.Hint = "make install builds pipeline and pipeline-temporal side by side; or " + build
		return c
	}
	c.Path = path
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version", "-o", "json").Output()
	var its buildinfo.Info
	if err == nil {
		err = json.Unmarshal(out, &its)
	}
	if err != nil {
		c.Status, c.Problem, c.Hint = steps.CheckBroken, fmt.Sprintf("%s version -o json: %v", path, err), "build it again: "+build
		return c
	}
	c.Version = its.String()
	switch {
	case !slices.Contains(its.Backends, "temporal"):
		c.Status, c.Problem, c.Hint = steps.CheckBroken, path+" has no Temporal backend (a copy of pipeline?)", "build it with the temporal tag: "+build
	case !its.SameBuild(self):
		c.Status = render.OtherVersion
		c.Problem = fmt.Sprintf("%s is %q, this pipeline %q", path, its.String(), self.String())
		c.Hint = "build both from one checkout: make install, or " + build
	}
	return c
}
