package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/companion"
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
	return companion.Check(ctx, companion.Checked{Name: fleetBinary, Needed: needed, Self: buildVersion(), IsSelf: withTemporal, Find: findFleetBinary})
}
