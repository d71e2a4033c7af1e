package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// sessionHeading is the session line of status: its id, its name when
// it has one, and its pipeline.
func sessionHeading(r engine.StatusReport, safe func(string) string) string {
	if r.Name != "" {
		return fmt.Sprintf("%s, named %s (%s)", safe(r.ID), safe(r.Name), safe(r.Pipeline))
	}
	return fmt.Sprintf("%s (%s)", safe(r.ID), safe(r.Pipeline))
}

// Status prints a report as aligned rows. Every value that came from
// outside (names, reasons, notes) is made safe for a terminal first.
func Status(w io.Writer, ls app.StatusResponse, verbose bool) error {
	r := ls.StatusReport
	safe := termview.NewScreenText().Line
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s\n", sessionHeading(r, safe))
	if f := ls.Fleet; f != nil {
		// Its state is on the fleet; the copy here would only mislead.
		fmt.Fprintf(tw, "status\truns on %s\n", safe(f.Where()))
		fmt.Fprintf(tw, "see\t%s\n", safe(app.FleetCommand("status", *f, r.ID)))
		tw.Flush()
		_, err := w.Write(b.Bytes())
		return err
	}
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
	writeWhy(tw, r, safe)
	fmt.Fprintf(tw, "phase\t%s, step %s, attempt %d\n", safe(r.Phase), safe(r.Step), r.Attempt)
	fmt.Fprintf(tw, "usage\t%d tokens, $%.4f, %s\n", r.Tokens, r.CostUSD, r.Elapsed)
	writeSkipped(tw, r, safe)
	if l := ls.Live; l != nil {
		fmt.Fprintf(tw, "step\t%s running for %s, %d tokens (live, updated %s)\n", safe(l.Step), l.StepElapsed, l.StepTokens,
			l.Updated.Local().Format("15:04:05"))
	}
	if c := r.Context; verbose && (c.Sent > 0 || c.Compactions > 0) {
		fmt.Fprintf(tw, "context\t%s\n", ContextAccount(c))
	}
	if r.Spec != "" {
		fmt.Fprintf(tw, "spec\t%s\n", safe(r.Spec))
	}
	if c := r.SpecStatus; c != nil {
		fmt.Fprintf(tw, "spec status\t%s\n", safe(describeSpecStatus(*c)))
	}
	if p := r.Parent; p != nil {
		fmt.Fprintf(tw, "fork of\t%s at phase %s (checkpoint %s, %s)\n", safe(p.Session), safe(p.Phase), safe(p.Checkpoint[:min(12, len(p.Checkpoint))]), safe(p.Dir))
	}
	if of := r.ReplayOf; of != nil {
		fmt.Fprintf(tw, "replay of\t%s%s\n", safe(of.Session), safe(Overrides(of)))
	}
	tw.Flush()
	if verbose {
		writePhaseHistory(&b, r, safe)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeWhy writes why a session paused or failed beyond its status line.
// The note is said once, on the status line: the cause says what the
// status does not (the expression and the values it read), and the
// summary is shown when it is not the note again.
func writeWhy(tw io.Writer, r engine.StatusReport, safe func(string) string) {
	if r.Pause != nil && (r.Pause.Expression != "" || len(r.Pause.Values) > 0) {
		firing := *r.Pause
		if firing.Note == r.PauseNote {
			firing.Note = ""
		}
		if cause := local.DescribeFiring(firing); cause != r.PauseReason {
			fmt.Fprintf(tw, "cause\t%s\n", safe(cause))
		}
	}
	if r.Status == string(engine.StatusPaused) || r.Status == string(engine.StatusFailed) {
		for _, p := range r.Phases {
			if p.Name == r.Phase && p.Summary != "" && p.Summary != r.PauseNote && p.Summary != r.FailReason {
				fmt.Fprintf(tw, "summary\t%s\n", safe(p.Summary))
			}
		}
	}
}

// writePhaseHistory writes the history of every phase: a table of
// attempts, tokens, cost, time, retries, restarts, compactions, human
// interventions, files, checkpoint and triggers fired, then each phase's
// context account and notes.
func writePhaseHistory(b *bytes.Buffer, r engine.StatusReport, safe func(string) string) {
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tSTATUS\tATTEMPTS\tTOKENS\tCOST\tTIME\tRETRIES\tRESTARTS\tCOMPACTIONS\tHUMAN\tFILES\tCHECKPOINT\tFIRED")
	shown, rest := shownPhases(r.Phases)
	for _, p := range shown {
		var fired []string
		for _, f := range p.Fired {
			fired = append(fired, f.Reason)
		}
		checkpoint := "-"
		if p.Checkpoint != "" {
			checkpoint = p.Checkpoint[:min(len(p.Checkpoint), 12)]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t$%.4f\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", safe(p.Name), safe(string(p.Status)), p.Attempts, p.Tokens,
			p.CostUSD, p.Duration, p.Retries, p.Restarts, p.Context.Compactions, p.Human, len(p.FilesChanged), safe(checkpoint), safe(strings.Join(fired, ",")))
	}
	tw.Flush()
	if len(rest) > 0 {
		fmt.Fprintf(b, "… %d more phases pending, %s to %s (status -o json lists every phase)\n", len(rest), safe(rest[0].Name), safe(rest[len(rest)-1].Name))
	}
	for _, p := range r.Phases {
		if p.Context.Sent > 0 || p.Context.Compactions > 0 {
			fmt.Fprintf(b, "context (%s): %s\n", safe(p.Name), ContextAccount(p.Context))
		}
	}
	for _, p := range r.Phases {
		for _, n := range p.Notes {
			fmt.Fprintf(b, "note (%s): %s\n", safe(p.Name), safe(n))
		}
	}

}

// A run of more than pendingTail phases not started at the end of the
// history is listed by its first pendingShown phases and a line for the
// rest: a 1,000-phase plan's history is not 998 rows of zeros.
const (
	pendingTail  = 20
	pendingShown = 3
)

// shownPhases splits phases into those the history lists and the
// pending ones it counts in a line.
func shownPhases(phases []engine.PhaseReport) (shown, rest []engine.PhaseReport) {
	tail := len(phases)
	for tail > 0 && phases[tail-1].Status == "pending" && phases[tail-1].Attempts == 0 {
		tail--
	}
	if len(phases)-tail <= pendingTail {
		return phases, nil
	}
	return phases[:tail+pendingShown], phases[tail+pendingShown:]
}

// writeSkipped writes each phase a false when: skipped, and why.
func writeSkipped(tw io.Writer, r engine.StatusReport, safe func(string) string) {
	for _, p := range r.Phases {
		if p.SkippedBy != nil {
			fmt.Fprintf(tw, "skipped\t%s: %s\n", safe(p.Name), safe(describeSkip(*p.SkippedBy)))
		}
	}
}

// describeSkip says why a phase's when: skipped it: "when (spec.priority
// == "low") was false, with spec.priority=high".
func describeSkip(f engine.Firing) string {
	text := fmt.Sprintf("when (%s) was false", f.Expression)
	if read := engine.FlatValues(f.Values); len(read) > 0 {
		text += ", with " + strings.Join(read, ", ")
	}
	return text
}

// ContextAccount says what the resume contexts sent stood for:
// "2 resume contexts, 1204 tokens in place of 10410 (88.4% saved); 1
// compaction".
func ContextAccount(c engine.ContextAccount) string {
	var parts []string
	if c.Sent > 0 {
		text := fmt.Sprintf("%d resume context%s, %d tokens", c.Sent, plural(c.Sent), c.SentTokens)
		switch more := c.SentTokens - c.ReplacedTokens; {
		case c.ReplacedTokens > 0 && more > 0:
			// A context larger than the history it replaced saved
			// nothing: said as what it cost, not as a negative saving.
			text += fmt.Sprintf(" in place of %d of history (%d tokens more than the history %s replaced)", c.ReplacedTokens, more,
				map[bool]string{true: "it", false: "they"}[c.Sent == 1])
		case c.ReplacedTokens > 0:
			text += fmt.Sprintf(" in place of %d of history (%.1f%% saved)", c.ReplacedTokens, c.SavedPercent)
		default:
			text += " added to native sessions that kept their history"
		}
		parts = append(parts, text)
	}
	if c.Compactions > 0 {
		parts = append(parts, fmt.Sprintf("%d compaction%s", c.Compactions, plural(c.Compactions)))
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeSpecStatus says what the session did to its spec's status.
func describeSpecStatus(c engine.SpecStatusChange) string {
	moved := c.From + " → " + c.To
	if c.From == c.To {
		moved = c.From
	}
	if c.Held != "" {
		return moved + " (held: " + c.Held + ")"
	}
	return moved + ", " + c.At.Local().Format("2006-01-02 15:04:05")
}

// Overrides says what a replay runs differently.
func Overrides(of *engine.ReplayOf) string {
	var parts []string
	if of.Agent != "" {
		parts = append(parts, "agent "+of.Agent)
	}
	if of.Model != "" {
		parts = append(parts, "model "+of.Model)
	}
	if of.Spec != "" {
		parts = append(parts, "the spec as it started")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
