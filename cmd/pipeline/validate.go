package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/spec"
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
	err     error
}

func validateCommand() *cobra.Command {
	var output *outputFlag
	cmd := newCommand(&cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Check phases.yaml files and spec frontmatter, reporting every problem",
		Long: `Check each FILE and report every problem found, each with file:line:col,
the offending line and what to do. A .md FILE is checked as a spec (its
frontmatter); any other FILE as a phases.yaml, together with the spec it
names. Without FILE, ./phases.yaml is checked.

Exit status: 0 when every file is valid, 2 otherwise.`,
		Example: `  pipeline validate
  pipeline validate examples/*/phases.yaml specs/045-dashboard/README.md
  pipeline validate -o json phases.yaml`,
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
			r.Phases, r.Spec, r.Warnings = len(plan.Phases), plan.Spec, plan.Warnings
		}
	}
	var specErr *spec.Error
	switch {
	case err == nil:
		r.Valid = true
	case errors.As(err, &specErr):
		r.Problems, r.Omitted = specErr.Problems, specErr.Omitted
	default:
		r.Problems = []spec.Problem{{Position: spec.Position{File: file}, Message: err.Error()}}
	}
	r.err = err
	return r
}

func printValidations(cmd *cobra.Command, results []validation) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, r := range results {
		printWarnings(errOut, r.Warnings)
		switch {
		case r.Valid && r.Phases > 0 && r.Spec != "":
			fmt.Fprintf(out, "ok  %s: %d phases, with spec %s\n", r.File, r.Phases, r.Spec)
		case r.Valid && r.Phases > 0:
			fmt.Fprintf(out, "ok  %s: %d phases\n", r.File, r.Phases)
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
