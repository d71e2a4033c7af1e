package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/steps"
)

// validation is the outcome for one file, as --output json prints it.
type validation struct {
	File     string         `json:"file"`
	Valid    bool           `json:"valid"`
	Phases   int            `json:"phases,omitempty"`
	Spec     string         `json:"spec,omitempty"`
	Problems []spec.Problem `json:"problems"`
	// Warnings do not make the file invalid (see spec.Plan.Warnings).
	Warnings []spec.Problem `json:"warnings,omitempty"`
	// Omitted counts the problems past the 100 kept for one file.
	Omitted int `json:"omitted,omitempty"`
	// Agents are the checks of --preflight (pipeline doctor's).
	Agents []steps.CLICheck `json:"agents,omitempty"`
	err    error
	plan   *spec.Plan
}

func validateCommand() *cobra.Command {
	var (
		output    *outputFlag
		preflight bool
	)
	cmd := newCommand(&cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Check phases.yaml files and spec frontmatter, reporting every problem",
		Long: `Check each FILE and report every problem found, each with file:line:col,
the offending line and what to do. A .md FILE is checked as a spec (its
frontmatter); any other FILE as a phases.yaml, together with the spec it
names. Without FILE, ./phases.yaml is checked. --preflight also checks,
as pipeline doctor does, that the agent CLIs each pipeline uses are
installed and recent enough, and whether their credentials are set.

Exit status: 0 when every file is valid (and, with --preflight, every
agent CLI can run), 2 otherwise.`,
		Example: `  pipeline validate
  pipeline validate examples/*/phases.yaml specs/045-dashboard/README.md
  pipeline validate -o json phases.yaml
  pipeline validate --preflight`,
	}, func(cmd *cobra.Command, files []string) error {
		if err := output.check(); err != nil {
			return err
		}
		if len(files) == 0 {
			files = []string{"phases.yaml"}
		}
		results := make([]validation, 0, len(files))
		valid := true
		for _, file := range files {
			r := validateFile(file)
			if preflight && r.plan != nil {
				r.Agents = doctorChecks(cmd.Context(), r.plan)
				r.Valid = r.Valid && checksOK(r.Agents)
			}
			valid = valid && r.Valid
			results = append(results, r)
		}
		if output.json() {
			if err := writeJSON(cmd.OutOrStdout(), struct {
				Valid bool         `json:"valid"`
				Files []validation `json:"files"`
			}{valid, results}); err != nil {
				return err
			}
		} else {
			printValidations(cmd, results)
		}
		if !valid {
			return &exitStatus{code: exitUsage, printed: true}
		}
		return nil
	})
	output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&preflight, "preflight", false, "also check the agent CLIs the pipeline uses, as pipeline doctor does")
	return cmd
}

func validateFile(file string) validation {
	r := validation{File: file, Problems: []spec.Problem{}}
	var err error
	if strings.EqualFold(filepath.Ext(file), ".md") {
		_, err = spec.LoadSpec(file)
	} else {
		var plan *spec.Plan
		if plan, err = spec.Load(file, ""); err == nil {
			r.Phases, r.Spec, r.plan, r.Warnings = len(plan.Phases), plan.Spec, plan, plan.Warnings
		}
	}
	var specErr *spec.Error
	switch {
	case err == nil:
	case errors.As(err, &specErr):
		r.Problems, r.Omitted = specErr.Problems, specErr.Omitted
	default:
		r.Problems = []spec.Problem{{Position: spec.Position{File: file}, Message: err.Error()}}
	}
	r.err = err
	r.Valid = err == nil
	return r
}

func printValidations(cmd *cobra.Command, results []validation) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, r := range results {
		printWarnings(errOut, r.Warnings)
		switch {
		case r.err == nil && r.Agents != nil:
			fmt.Fprintf(out, "%s  %s: %s\n", map[bool]string{true: "ok", false: "not ready"}[r.Valid], r.File, spec.Count(r.Phases, "phase"))
			printChecks(out, r.File, r.Agents)
		case r.Valid && r.Phases > 0 && r.Spec != "":
			fmt.Fprintf(out, "ok  %s: %s, with spec %s\n", r.File, spec.Count(r.Phases, "phase"), r.Spec)
		case r.Valid && r.Phases > 0:
			fmt.Fprintf(out, "ok  %s: %s\n", r.File, spec.Count(r.Phases, "phase"))
		case r.Valid:
			fmt.Fprintf(out, "ok  %s\n", r.File)
		default:
			var specErr *spec.Error
			if errors.As(r.err, &specErr) {
				printError(errOut, specErr.Error())
			} else {
				printError(errOut, fmt.Sprintf("%s: %v\n", r.File, r.err))
			}
		}
	}
}
