package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
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
	ok := r.OK && temporal.ok()
	if o.output.json() {
		if err := writeJSON(cmd.OutOrStdout(), struct {
			OK       bool             `json:"ok"`
			Agents   []steps.CLICheck `json:"agents"`
			Temporal fleetCheck       `json:"temporal"`
		}{ok, checks, temporal}); err != nil {
			return err
		}
	} else {
		printChecks(cmd.OutOrStdout(), file, checks)
		temporal.print(cmd.OutOrStdout())
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

// printChecks prints one line per CLI, then each problem and hint.
func printChecks(w io.Writer, file string, checks []steps.CLICheck) {
	if len(checks) == 0 {
		fmt.Fprintf(w, "%s uses no agent CLI (its steps are run: lines)\n", file)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range checks {
		name := c.Kind
		if c.Kind == spec.KindCommand {
			name = "command " + c.Program
		}
		version := c.Version
		if version == "" {
			version = "-"
		}
		where := c.Path
		if where == "" {
			where = "not found"
		}
		creds := "-"
		if _, known := steps.CLIFor(c.Kind); known {
			creds = "credentials: none found"
			if len(c.Credentials) > 0 {
				creds = "credentials: " + strings.Join(c.Credentials, ", ")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Status, name, version, where, creds)
	}
	tw.Flush()
	for _, c := range checks {
		if c.Problem != "" {
			fmt.Fprintf(w, "%s: %s\n", c.Kind, c.Problem)
		}
		if c.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", c.Hint)
		}
		if _, known := steps.CLIFor(c.Kind); known && c.OK() && len(c.Credentials) == 0 {
			fmt.Fprintf(w, "%s: no credentials found: set %s, or log in with %s once\n", c.Kind, strings.Join(c.KeyVars, " or "), c.Program)
		}
	}
}

// fleetCheck is what doctor found of pipeline-temporal.
type fleetCheck struct {
	Program string `json:"program"`
	// Path is where it was found; "" when it was not.
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Status: ok, missing, other-version (not this build's version:
	// a warning) or broken (it did not answer version, or has no
	// Temporal backend).
	Status string `json:"status"`
	// Needed: the pipeline's backend is temporal.
	Needed  bool   `json:"needed"`
	Problem string `json:"problem,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

const fleetOtherVersion = "other-version"

func (c fleetCheck) ok() bool {
	return !c.Needed || c.Status == steps.CheckOK || c.Status == fleetOtherVersion
}

// checkFleetBinary looks for pipeline-temporal as --backend temporal
// would, and asks its version. needed: the pipeline runs on the fleet.
func checkFleetBinary(ctx context.Context, needed bool) fleetCheck {
	c := fleetCheck{Program: fleetBinary, Needed: needed, Status: steps.CheckOK}
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
	var its versionInfo
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
	case !its.sameBuild(self):
		c.Status = fleetOtherVersion
		c.Problem = fmt.Sprintf("%s is %q, this pipeline %q", path, its.String(), self.String())
		c.Hint = "build both from one checkout: make install, or " + build
	}
	return c
}

// print writes the check as doctor's text: one line, then its problem
// and hint.
func (c fleetCheck) print(w io.Writer) {
	use := "local runs do not need it; --backend temporal, pipeline worker, mcp, search and ui do"
	if c.Needed {
		use = "this pipeline runs on the Temporal backend and needs it"
	}
	switch c.Status {
	case steps.CheckOK:
		fmt.Fprintf(w, "%s: %s (%s)\n", fleetBinary, c.Path, c.Version)
		return
	case steps.CheckMissing:
		fmt.Fprintf(w, "%s: %s; %s\n", fleetBinary, c.Problem, use)
	default:
		fmt.Fprintf(w, "%s: %s: %s; %s\n", fleetBinary, c.Status, c.Problem, use)
	}
	fmt.Fprintf(w, "  hint: %s\n", c.Hint)
}
