package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// outputFlag is the --output flag shared by every command that prints data.
type outputFlag struct {
	format  string
	formats []string
}

// addOutputFlag adds --output: text, json, and the command's own extra
// formats (status: markdown).
func addOutputFlag(cmd *cobra.Command, extra ...string) *outputFlag {
	o := &outputFlag{format: "text", formats: append([]string{"text", "json"}, extra...)}
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "output format: "+o.names())
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// names lists the formats: "text or json", "text, json or markdown".
func (o *outputFlag) names() string {
	last := len(o.formats) - 1
	return strings.Join(o.formats[:last], ", ") + " or " + o.formats[last]
}

func (o *outputFlag) check() error {
	if !slices.Contains(o.formats, o.format) {
		return usagef("--output must be %s, not %q", o.names(), o.format)
	}
	return nil
}

func (o *outputFlag) json() bool { return o.format == "json" }

// print writes r to cmd's output as JSON with -o json, else as text
// writes it.
func (o *outputFlag) print(cmd *cobra.Command, r any, text func(io.Writer) error) error {
	if o.json() {
		return render.JSON(cmd.OutOrStdout(), r)
	}
	return text(cmd.OutOrStdout())
}

// printWarnings prints what a plan runs with but likely not as meant, each
// at its place, on w (standard error).
func printWarnings(w io.Writer, warnings []spec.Problem) {
	for _, p := range warnings {
		text := fmt.Sprintf("%s: warning: %s\n", p.Position, p.Message)
		if p.Hint != "" {
			text += "  hint: " + p.Hint + "\n"
		}
		printError(w, text)
	}
}
