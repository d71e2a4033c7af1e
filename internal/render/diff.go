package render

import "slices"

import "time"

import "strings"

import "fmt"

import "github.com/pipeline-dev/pipeline/internal/termview"

import "bytes"

import "github.com/pipeline-dev/pipeline/engine/compare"

import "io"

import "text/tabwriter"

// Diff prints a comparison as aligned columns, A | B | Δ, phase by
// phase. Every value that came from a session is made safe for a
// terminal first.
func Diff(w io.Writer, r compare.Result) error {
	safe := termview.NewScreenText().Line
	var b bytes.Buffer
	printDiffHeads(&b, r, safe)
	b.WriteString("\n")
	t := diffTable{tw: tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0), safe: safe}
	fmt.Fprintln(t.tw, "PHASE\t\tA\tB\tΔ")
	for _, p := range r.Phases {
		t.phase(p)
	}
	fmt.Fprintf(t.tw, "total\t\t\t\t\n")
	t.row("status", r.Status.A, r.Status.B, mark(r.Status.A != r.Status.B))
	t.row("tokens", fmt.Sprint(r.Tokens.A), fmt.Sprint(r.Tokens.B), signed(r.Tokens.Delta))
	t.row("cost", fmt.Sprintf("$%.4f", r.CostUSD.A), fmt.Sprintf("$%.4f", r.CostUSD.B), signedCost(r.CostUSD.Delta))
	t.row("time", millis(r.ElapsedMS.A), millis(r.ElapsedMS.B), signedMillis(r.ElapsedMS.Delta))
	t.tw.Flush()
	b.WriteString(killedNote(r))
	for _, p := range r.Phases {
		if len(p.SummaryDiff) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nsummary of %s:\n", safe(p.Name))
		for _, line := range p.SummaryDiff {
			fmt.Fprintf(&b, "  %s\n", safe(line))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// printDiffHeads names the two sessions, and says where they diverged.
func printDiffHeads(b *bytes.Buffer, r compare.Result, safe func(string) string) {
	for _, h := range []struct {
		label string
		head  compare.Head
	}{{"A", r.A}, {"B", r.B}} {
		fmt.Fprintf(b, "%s  %s (%s), %s, agents %s", h.label, safe(h.head.ID), safe(h.head.Pipeline), safe(h.head.Status),
			safe(OrDash(strings.Join(h.head.Agents, ", "))))
		if of := h.head.ReplayOf; of != nil {
			fmt.Fprintf(b, ", replay of %s%s", safe(of.Session), safe(Overrides(of)))
		}
		b.WriteString("\n")
	}
	if r.Divergence != nil {
		fmt.Fprintf(b, "diverged at phase %s: %s\n", safe(r.Divergence.Phase), safe(r.Divergence.Text))
	} else {
		b.WriteString("no divergence: the same phases, statuses, attempts, exit codes, triggers fired and decisions\n")
	}
}

// diffTable is the table of printDiff: a phase's name, then a row for
// each field.
type diffTable struct {
	tw   *tabwriter.Writer
	safe func(string) string
}

func mark(differs bool) string {
	if differs {
		return "≠"
	}
	return ""
}

func signed(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%+d", n)
}

func signedCost(d float64) string {
	if d == 0 {
		return ""
	}
	if d < 0 {
		return fmt.Sprintf("-$%.4f", -d)
	}
	return fmt.Sprintf("+$%.4f", d)
}

func millis(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

func signedMillis(ms int64) string {
	if ms == 0 {
		return ""
	}
	if ms > 0 {
		return "+" + millis(ms)
	}
	return millis(ms)
}

// exitCodes are a phase's exit codes, in order; a step a signal ended
// (-1 in JSON: a pause, a time limit, a kill) is "killed".
func exitCodes(list []int) string {
	if len(list) == 0 {
		return "-"
	}
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = fmt.Sprint(n)
		if n == -1 {
			parts[i] = "killed"
		}
	}
	return strings.Join(parts, ",")
}

// killedNote explains "killed" under the table, when a row shows it.
func killedNote(r compare.Result) string {
	for _, p := range r.Phases {
		if slices.Contains(p.ExitCodes.A, -1) || slices.Contains(p.ExitCodes.B, -1) {
			return "\nkilled: the step was ended by a signal (a pause, a time limit, Ctrl+C or kill) and has no exit code (-1 in -o json)\n"
		}
	}
	return ""
}

func (t diffTable) row(field, a, b, delta string) {
	fmt.Fprintf(t.tw, "\t%s\t%s\t%s\t%s\n", field, t.safe(a), t.safe(b), delta)
}

func (t diffTable) phase(p compare.PhaseDiff) {
	title := p.Name
	switch p.In {
	case "a":
		title += " (only in A)"
	case "b":
		title += " (only in B)"
	}
	if len(p.Differs) > 0 {
		title += " *"
	}
	fmt.Fprintf(t.tw, "%s\t\t\t\t\n", t.safe(title))
	t.row("status", p.Status.A, p.Status.B, mark(p.Status.A != p.Status.B))
	t.row("attempts", fmt.Sprint(p.Attempts.A), fmt.Sprint(p.Attempts.B), signed(p.Attempts.Delta))
	t.row("tokens", fmt.Sprint(p.Tokens.A), fmt.Sprint(p.Tokens.B), signed(p.Tokens.Delta))
	t.row("cost", fmt.Sprintf("$%.4f", p.CostUSD.A), fmt.Sprintf("$%.4f", p.CostUSD.B), signedCost(p.CostUSD.Delta))
	t.row("duration", millis(p.DurationMS.A), millis(p.DurationMS.B), signedMillis(p.DurationMS.Delta))
	t.row("exit codes", exitCodes(p.ExitCodes.A), exitCodes(p.ExitCodes.B), mark(exitCodes(p.ExitCodes.A) != exitCodes(p.ExitCodes.B)))
	t.row("fired", OrDash(strings.Join(p.Fired.A, ",")), OrDash(strings.Join(p.Fired.B, ",")),
		mark(strings.Join(p.Fired.A, ",") != strings.Join(p.Fired.B, ",")))
	if len(p.Decisions.A)+len(p.Decisions.B) > 0 {
		t.row("decisions", fmt.Sprint(len(p.Decisions.A)), fmt.Sprint(len(p.Decisions.B)),
			mark(strings.Join(p.Decisions.A, "\x00") != strings.Join(p.Decisions.B, "\x00")))
	}
	if len(p.FilesAdded)+len(p.FilesRemoved) > 0 {
		var files []string
		for _, f := range p.FilesAdded {
			files = append(files, "+"+f)
		}
		for _, f := range p.FilesRemoved {
			files = append(files, "-"+f)
		}
		// What changed from A to B: the Δ column's.
		fmt.Fprintf(t.tw, "\tfiles\t\t\t%s\n", t.safe(strings.Join(files, " ")))
	}
}
