package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// validation is the outcome for one file, as --output json prints it.
type validation = app.Validation

// validateOptions are validate's flags.
type validateOptions struct {
	output    *outputFlag
	preflight bool
	specPath  string
}

func validateCommand() *cobra.Command {
	o := &validateOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "validate [FILE...]",
		Short:   "Check phases.yaml files and spec frontmatter, reporting every problem",
		Long:    helpText("validate"),
		Example: helpText("validate.example"),
	}, o.run)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.specPath, "spec", "", "check each phases.yaml with this spec, in place of the one it names (as run --spec runs it)")
	cmd.Flags().BoolVar(&o.preflight, "preflight", false, "also check the agent CLIs the pipeline uses, as pipeline doctor does")
	return cmd
}

func (o *validateOptions) run(cmd *cobra.Command, files []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	r := app.Validate(cmd.Context(), app.ValidateRequest{Files: files, Spec: o.specPath, Preflight: o.preflight})
	if o.output.json() {
		if err := render.JSON(cmd.OutOrStdout(), r); err != nil {
			return err
		}
	} else {
		printValidations(cmd, r.Files)
	}
	if !r.Valid {
		return &exitStatus{code: exitUsage, printed: true}
	}
	return nil
}

func printValidations(cmd *cobra.Command, results []validation) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, r := range results {
		printWarnings(errOut, r.Warnings)
		switch {
		case r.Err == nil && r.Agents != nil:
			fmt.Fprintf(out, "%s  %s: %s\n", map[bool]string{true: "ok", false: "not ready"}[r.Valid], r.File, spec.Count(r.Phases, "phase"))
			render.Checks(out, r.File, r.Agents)
		case r.Valid && r.Phases > 0 && r.Spec != "":
			fmt.Fprintf(out, "ok  %s: %s, with spec %s\n", r.File, spec.Count(r.Phases, "phase"), r.Spec)
		case r.Valid && r.Phases > 0:
			fmt.Fprintf(out, "ok  %s: %s\n", r.File, spec.Count(r.Phases, "phase"))
		case r.Valid:
			fmt.Fprintf(out, "ok  %s\n", r.File)
		default:
			var specErr *spec.Error
			if errors.As(r.Err, &specErr) {
				printError(errOut, specErr.Error())
			} else {
				printError(errOut, fmt.Sprintf("%s: %v\n", r.File, r.Err))
			}
			if len(r.Problems) == 1 && r.Problems[0].Hint != "" && !errors.As(r.Err, &specErr) {
				fmt.Fprintf(errOut, "hint: %s\n", r.Problems[0].Hint)
			}
		}
	}
}
