package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

func statusCommand() *cobra.Command {
	var (
		flags   *storeFlags
		output  *outputFlag
		verbose bool
	)
	cmd := newCommand(&cobra.Command{
		Use:   "status [SESSION]",
		Short: "Show where a session stands",
		Long: `Show SESSION, or the latest session of the pipeline and spec: its status,
phase, step, attempt, why it paused, tokens, cost and time. --verbose adds
the history of every phase: attempts, tokens, cost, duration, retries,
restarts, human interventions, triggers fired, files changed.
--output markdown prints the table of phases a run in GitHub Actions
appends to the job summary.

A session whose runner died while running shows as paused, reason
runner-died: resume continues it.`,
		Example: `  pipeline status
  pipeline status --verbose
  pipeline status 20261125-093000123-a1b2c3 -o json
  pipeline status -o markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		f, err := findSession(flags, id)
		if err != nil {
			return err
		}
		defer f.Close()
		s, crashed, err := f.State()
		if err != nil {
			return err
		}
		if crashed {
			s = engine.RunnerDied(s)
		}
		report := statusOf(f.X.Meta, f.Plan, s)
		switch output.format {
		case "json":
			return writeJSON(cmd.OutOrStdout(), report)
		case "markdown":
			_, err := cmd.OutOrStdout().Write(markdownReport(report, newScreenText().line))
			return err
		}
		return printStatus(cmd.OutOrStdout(), report, verbose)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd, "markdown")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the history of every phase")
	return cmd
}

// statusOf is what status prints of a session.
func statusOf(meta store.Meta, plan *spec.Plan, s engine.State) engine.StatusReport {
	r := engine.Report(plan, s)
	r.ID, r.Pipeline, r.File, r.Spec, r.Created = meta.ID, meta.Pipeline, meta.File, meta.Spec, meta.Created
	return r
}

// printStatus prints a report as aligned rows. Every value that came from
// outside (names, reasons, notes) is made safe for a terminal first.
func printStatus(w io.Writer, r engine.StatusReport, verbose bool) error {
	safe := newScreenText().line
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s (%s)\n", safe(r.ID), safe(r.Pipeline))
	status := r.Status
	if r.ByHand {
		status += " (by hand)"
	}
	if r.PauseReason != "" {
		status += ": " + r.PauseReason
		if r.PauseNote != "" {
			status += " — " + r.PauseNote
		}
	}
	if r.FailReason != "" {
		status += ": " + r.FailReason
	}
	fmt.Fprintf(tw, "status\t%s\n", safe(status))
	fmt.Fprintf(tw, "phase\t%s, step %s, attempt %d\n", safe(r.Phase), safe(r.Step), r.Attempt)
	fmt.Fprintf(tw, "usage\t%d tokens, $%.4f, %s\n", r.Tokens, r.CostUSD, r.Elapsed)
	if r.Spec != "" {
		fmt.Fprintf(tw, "spec\t%s\n", safe(r.Spec))
	}
	if p := r.Parent; p != nil {
		fmt.Fprintf(tw, "fork of\t%s at phase %s (checkpoint %s, %s)\n", safe(p.Session), safe(p.Phase), safe(p.Checkpoint[:min(12, len(p.Checkpoint))]), safe(p.Dir))
	}
	tw.Flush()
	if verbose {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PHASE\tSTATUS\tATTEMPTS\tTOKENS\tCOST\tTIME\tRETRIES\tRESTARTS\tHUMAN\tFILES\tCHECKPOINT\tFIRED")
		for _, p := range r.Phases {
			var fired []string
			for _, f := range p.Fired {
				fired = append(fired, f.Reason)
			}
			checkpoint := "-"
			if p.Checkpoint != "" {
				checkpoint = p.Checkpoint[:min(len(p.Checkpoint), 12)]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t$%.4f\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", safe(p.Name), safe(string(p.Status)), p.Attempts, p.Tokens,
				p.CostUSD, p.Duration, p.Retries, p.Restarts, p.Human, len(p.FilesChanged), safe(checkpoint), safe(strings.Join(fired, ",")))
		}
		tw.Flush()
		for _, p := range r.Phases {
			for _, n := range p.Notes {
				fmt.Fprintf(&b, "note (%s): %s\n", safe(p.Name), safe(n))
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
