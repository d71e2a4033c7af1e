package termview

import (
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/engine/local"
)

// Many are the views of the sessions run runs side by side: a
// table on a terminal, and elsewhere plain lines, each prefixed with its
// spec (as pipeline watch prefixes its sessions' lines).
type Many struct {
	table *Table
	rows  []*TableRow
	plain []local.View
	quiet bool
}

// NewMany is the views of the sessions of specs, shown on out.
func NewMany(out io.Writer, specs []string, quiet bool) *Many {
	v := &Many{quiet: quiet}
	if f, ok := out.(*os.File); ok && !v.quiet && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		v.table = NewTable(f, width, time.Now)
		for _, s := range specs {
			v.rows = append(v.rows, v.table.Row(s))
		}
		v.table.Draw()
		return v
	}
	to := &LockedWriter{W: out}
	for _, s := range specs {
		var view local.View = local.Discard
		if !v.quiet {
			view = NewQueued(NewPlain(&PrefixWriter{To: to, Prefix: "[" + s + "] "}, time.Now))
		}
		v.plain = append(v.plain, view)
	}
	return v
}

// View is the view of session i.
func (v *Many) View(i int) local.View {
	if v.table != nil {
		return v.rows[i]
	}
	return v.plain[i]
}

// Finish shows how session i ended: its status ("": not started).
func (v *Many) Finish(i int, status string) {
	if v.table != nil {
		if status == "" {
			status = "not started"
		}
		v.rows[i].Finish(status)
		return
	}
	v.plain[i].Close()
}

// Close draws the table a last time.
func (v *Many) Close() {
	if v.table != nil {
		v.table.Draw()
	}
}
