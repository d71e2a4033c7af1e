package render

import "strings"

import "github.com/pipeline-dev/pipeline/engine/spec"

import "text/tabwriter"

import "fmt"

import "github.com/pipeline-dev/pipeline/steps"

import "io"

// Checks prints one line per CLI, then each problem and hint.
func Checks(w io.Writer, file string, checks []steps.CLICheck) {
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

// ProgramCheck is what doctor found of pipeline-temporal.
type ProgramCheck struct {
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

// OtherVersion is the status of a program of another build than this one.
const OtherVersion = "other-version"

// OK tells whether doctor passes this check: the program is fine, or not
// needed.
func (c ProgramCheck) OK() bool {
	return !c.Needed || c.Status == steps.CheckOK || c.Status == OtherVersion
}

// Write writes the check as doctor's text: one line, then its problem
// and hint.
func (c ProgramCheck) Write(w io.Writer) {
	use := "local runs need it only to send webhooks and telemetry; --backend temporal, pipeline worker, mcp, search and ui do"
	if c.Needed {
		use = "this pipeline runs on the Temporal backend and needs it"
	}
	switch c.Status {
	case steps.CheckOK:
		fmt.Fprintf(w, "%s: %s (%s)\n", c.Program, c.Path, c.Version)
		return
	case steps.CheckMissing:
		fmt.Fprintf(w, "%s: %s; %s\n", c.Program, c.Problem, use)
	default:
		fmt.Fprintf(w, "%s: %s: %s; %s\n", c.Program, c.Status, c.Problem, use)
	}
	fmt.Fprintf(w, "  hint: %s\n", c.Hint)
}
