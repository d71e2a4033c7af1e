package render

import "strings"

import "path/filepath"

import "fmt"

import "github.com/pipeline-dev/pipeline/internal/termview"

import "text/tabwriter"

import "bytes"

import "github.com/pipeline-dev/pipeline/app"

import "io"

// Sessions prints the sessions as aligned rows, then none (why
// there are none, or ""). Names and reasons came from files: they are
// made safe for a terminal first.
func Sessions(w io.Writer, out []app.SessionLine, all bool, none string) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	safe := termview.NewScreenText().Line
	header := "SESSION\tPIPELINE\tSPEC\tSTATUS\tPHASE\tTOKENS\tCOST\tUPDATED"
	if all {
		header += "\tFILE"
	}
	fmt.Fprintln(tw, header)
	for _, s := range out {
		state := s.Status
		if s.Fleet != nil {
			state = "runs on " + s.Fleet.Where()
		}
		if s.PauseReason != "" {
			state += " (" + s.PauseReason + ")"
		}
		if s.ByHand {
			state += " (by hand)"
		}
		if s.Queued {
			state += ", queued"
		}
		if s.ReplayOf != "" {
			state += ", replay of " + s.ReplayOf
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t$%.4f\t%s", safe(s.ID), safe(s.Pipeline), safe(SpecLabel(s.Spec)), safe(state),
			safe(OrDash(s.Phase)), s.Tokens, s.CostUSD, s.Updated.Local().Format("2006-01-02 15:04"))
		if all {
			fmt.Fprintf(tw, "\t%s", safe(app.RelativeToHere(s.File)))
		}
		fmt.Fprintln(tw)
		for _, f := range s.Forks {
			fmt.Fprintf(tw, "  └ fork %s\t(at %s)\t%s\t%s\t%s\t\t\t\n", safe(f.ID), safe(f.At), safe(f.Dir), safe(f.Status), safe(OrDash(f.Phase)))
		}
	}
	tw.Flush()
	b.WriteString(none)
	_, err := w.Write(b.Bytes())
	return err
}

// OrDash is s, or - where there is nothing to show.
func OrDash(s string) string {
	if s == "" || s == "." {
		return "-"
	}
	return s
}

// Cleaned says, a line each, which sessions clean removed.
func Cleaned(w io.Writer, r *app.CleanResponse) {
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	for _, s := range r.Sessions {
		fmt.Fprintf(w, "%s %s (%s, %s)\n", verb, s.ID, s.Status, s.Updated.Local().Format("2006-01-02"))
	}
}

// SpecLabel is how sessions names a spec: its file name, or with its
// folder when the name says nothing (LeanSpec's specs are all README.md).
func SpecLabel(spec string) string {
	base := filepath.Base(spec)
	switch strings.ToLower(base) {
	case "readme.md", "index.md", "spec.md":
		if dir := filepath.Base(filepath.Dir(spec)); dir != "." && dir != string(filepath.Separator) {
			return dir + "/" + base
		}
	}
	return OrDash(base)
}
