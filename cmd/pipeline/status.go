package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
)

// statusReport is what status prints; its JSON is stable.
type statusReport struct {
	ID          string        `json:"id"`
	Pipeline    string        `json:"pipeline"`
	File        string        `json:"file"`
	Spec        string        `json:"spec,omitempty"`
	Status      string        `json:"status"`
	Phase       string        `json:"phase"`
	Step        string        `json:"step,omitempty"`
	Attempt     int           `json:"attempt"`
	PauseReason string        `json:"pause_reason,omitempty"`
	PauseNote   string        `json:"pause_note,omitempty"`
	FailReason  string        `json:"fail_reason,omitempty"`
	Tokens      int           `json:"tokens"`
	CostUSD     float64       `json:"cost_usd"`
	Elapsed     string        `json:"elapsed"`
	Created     time.Time     `json:"created"`
	Phases      []phaseReport `json:"phases"`
}

type phaseReport struct {
	Name          string          `json:"name"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	Tokens        int             `json:"tokens"`
	CostUSD       float64         `json:"cost_usd"`
	Duration      string          `json:"duration"`
	ExitCodes     []int           `json:"exit_codes"`
	Retries       int             `json:"retries"`
	Restarts      int             `json:"restarts"`
	Human         int             `json:"human_interventions"`
	Fired         []engine.Firing `json:"triggers_fired"`
	FilesChanged  []string        `json:"files_changed"`
	HeadBefore    string          `json:"head_before,omitempty"`
	HeadAfter     string          `json:"head_after,omitempty"`
	NativeSession string          `json:"native_session,omitempty"`
	Notes         []string        `json:"notes"`
	Summary       string          `json:"summary,omitempty"`
}

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

A session whose runner died while running shows as paused, reason
runner-died: resume continues it.`,
		Example: `  pipeline status
  pipeline status --verbose
  pipeline status 20261125-093000-a1b2c3 -o json`,
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
		defer f.x.Close()
		s, crashed, err := f.state()
		if err != nil {
			return err
		}
		report := buildStatus(f, s, crashed)
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), report)
		}
		return printStatus(cmd.OutOrStdout(), report, verbose)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the history of every phase")
	return cmd
}

func buildStatus(f *found, s engine.State, crashed bool) statusReport {
	r := statusReport{ID: f.x.Meta.ID, Pipeline: f.x.Meta.Pipeline, File: f.x.Meta.File, Spec: f.x.Meta.Spec,
		Status: string(s.Status), Attempt: s.Attempt, Tokens: s.TotalTokens, CostUSD: s.CostUSD,
		Elapsed: s.SessionElapsed.Round(time.Second).String(), Created: f.x.Meta.Created, FailReason: s.FailReason,
		Phases: []phaseReport{}}
	if s.Status == "" {
		r.Status = string(engine.StatusRunning)
	}
	if s.Phase < len(f.plan.Phases) {
		r.Phase = f.plan.Phases[s.Phase].Name
		if s.Step < len(f.plan.Phases[s.Phase].Steps) {
			r.Step = f.plan.Phases[s.Phase].Steps[s.Step].Name
		}
	}
	switch {
	case crashed:
		r.Status, r.PauseReason = string(engine.StatusPaused), "runner-died"
		r.PauseNote = "the runner stopped without pausing (killed or crashed); resume continues the session"
	case s.Status == engine.StatusPaused && s.Pause != nil:
		r.PauseReason, r.PauseNote = s.Pause.Reason, s.Pause.Note
	}
	for _, p := range s.Phases {
		pr := phaseReport{Name: p.Name, Status: string(p.Status), Attempts: p.Attempts, Tokens: p.Tokens, CostUSD: p.CostUSD,
			Duration: p.Duration.Round(time.Millisecond).String(), ExitCodes: p.ExitCodes, Retries: p.Retries,
			Restarts: p.Restarts, Human: p.Human, Fired: p.Fired, FilesChanged: p.Files, HeadBefore: p.HeadBefore,
			HeadAfter: p.HeadAfter, NativeSession: p.NativeSession, Notes: p.Notes, Summary: p.Summary}
		if pr.Status == "" {
			pr.Status = "pending"
		}
		if pr.ExitCodes == nil {
			pr.ExitCodes = []int{}
		}
		if pr.Fired == nil {
			pr.Fired = []engine.Firing{}
		}
		if pr.FilesChanged == nil {
			pr.FilesChanged = []string{}
		}
		if pr.Notes == nil {
			pr.Notes = []string{}
		}
		r.Phases = append(r.Phases, pr)
	}
	return r
}

func printStatus(w io.Writer, r statusReport, verbose bool) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s (%s)\n", r.ID, r.Pipeline)
	status := r.Status
	if r.PauseReason != "" {
		status += ": " + r.PauseReason
		if r.PauseNote != "" {
			status += " — " + r.PauseNote
		}
	}
	if r.FailReason != "" {
		status += ": " + r.FailReason
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "phase\t%s, step %s, attempt %d\n", r.Phase, r.Step, r.Attempt)
	fmt.Fprintf(tw, "usage\t%d tokens, $%.4f, %s\n", r.Tokens, r.CostUSD, r.Elapsed)
	if r.Spec != "" {
		fmt.Fprintf(tw, "spec\t%s\n", r.Spec)
	}
	tw.Flush()
	if verbose {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PHASE\tSTATUS\tATTEMPTS\tTOKENS\tCOST\tTIME\tRETRIES\tRESTARTS\tHUMAN\tFILES\tFIRED")
		for _, p := range r.Phases {
			var fired []string
			for _, f := range p.Fired {
				fired = append(fired, f.Reason)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t$%.4f\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.Status, p.Attempts, p.Tokens,
				p.CostUSD, p.Duration, p.Retries, p.Restarts, p.Human, len(p.FilesChanged), strings.Join(fired, ","))
		}
		tw.Flush()
		for _, p := range r.Phases {
			for _, n := range p.Notes {
				fmt.Fprintf(&b, "note (%s): %s\n", p.Name, n)
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
